"""The decode thread count follows the cores other work leaves idle (searchbox/llm/llamacpp/decode_threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchbox.llm.llamacpp import cpu_load, decode_threads
from searchbox.llm.llamacpp.cpu_load import Sample, cores, usable_cpus
from searchbox.llm.llamacpp.decode_threads import CHECK_SECONDS, DecodeThreads


def test_other_processes_on_every_cpu_bring_decoding_down_to_one_thread() -> None:
    cpus = usable_cpus()
    governor = DecodeThreads(cpus, cpus)
    assert governor.measured and governor.current == cpus  # it starts with every core
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cpus)]
    try:
        time.sleep(CHECK_SECONDS + 0.5)
        assert governor.choose() == 1
    finally:
        for process in busy:
            process.kill()
            process.wait()


def _scripted(governor: DecodeThreads, monkeypatch: pytest.MonkeyPatch, samples: list[Sample]) -> None:
    feed = iter(samples)
    monkeypatch.setattr(governor._clock, "sample", lambda: next(feed))
    governor._last = Sample(0.0, 0.0, 0.0)
    monkeypatch.setattr(decode_threads.time, "monotonic", lambda: governor._last.wall + 5.0)


def test_the_count_is_the_cores_left_idle_and_this_process_own_work_is_not_other_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    governor = DecodeThreads(cpus=4, most=4)
    # Each sample: wall, every CPU's busy seconds, this process's own; one second apart.
    _scripted(governor, monkeypatch, [Sample(1, 4.0, 4.0), Sample(2, 6.0, 4.0), Sample(3, 7.0, 4.0),
                                      Sample(4, 10.6, 6.0), Sample(5, 10.8, 6.0)])
    assert governor.choose() == 4  # all of it our own decoding
    assert governor.choose() == 2  # two CPUs' worth of other work
    assert governor.choose() == 3  # one
    assert governor.choose() == 2  # 1.6 others while we used 2
    assert governor.choose() == 4  # 0.2: noise, not a core


def test_the_count_is_decided_at_most_once_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    governor = DecodeThreads(cpus=2, most=2)
    calls = []
    monkeypatch.setattr(governor._clock, "sample", lambda: calls.append(1))
    assert governor.choose() == 2 and not calls  # just made: the window is too short to say anything


def test_a_cgroup_quota_caps_the_cpus_and_hyperthreads_are_not_cores(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # a container given 1.5 CPUs of a larger host
    monkeypatch.setattr(cpu_load, "_CGROUP", tmp_path)
    assert usable_cpus() == min(2, len(os.sched_getaffinity(0)))
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cpus() == len(os.sched_getaffinity(0))
    info = tmp_path / "cpuinfo"
    monkeypatch.setattr(cpu_load, "_CPUINFO", info)
    info.write_text("processor\t: 0\nsiblings\t: 16\ncpu cores\t: 8\n")
    assert cores(16) == 8
    info.write_text("processor\t: 0\nsiblings\t: 2\ncpu cores\t: 2\n")
    assert cores(2) == 2
    info.unlink()
    assert cores(8) == 4  # unknown: llama-cpp-python's guess, half


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to pin apart")
def test_work_on_cpus_this_process_may_not_use_is_not_other_work() -> None:
    # A container pinned to some of a host's CPUs must not count the other tenants' load.
    first, second = sorted(os.sched_getaffinity(0))[:2]
    busy = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{second}}})\nwhile True: pass"])
    probe = (f"import os, time; os.sched_setaffinity(0, {{{first}}})\n"
             "from searchbox.llm.llamacpp.cpu_load import BusyClock, other_cpus\n"
             "clock = BusyClock(); before = clock.sample(); time.sleep(1.5); print(other_cpus(before, clock.sample()))")
    try:
        time.sleep(0.5)
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    finally:
        busy.kill()
        busy.wait()
    assert float(done.stdout) < 0.5  # the busy CPU is not its own: nothing of it counted
