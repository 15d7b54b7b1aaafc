"""How many CPUs this process may use, how many of them are whole cores, and how busy other work keeps them.

"Other work" is the busy time of the CPUs this process may run on less its own: on Linux, from /proc/stat, or
the cgroup's usage where a CPU quota bounds this process (a container); elsewhere nothing is measured
(`BusyClock.sample` is None). Work of this same process (another run's embedder in the app) is not other work.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

_CGROUP = Path("/sys/fs/cgroup")
_CPUINFO = Path("/proc/cpuinfo")


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity, capped by a cgroup CPU quota (a container's share of a
    larger host, which os.cpu_count() does not see)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = _cpu_quota()
    return max(1, min(cpus, math.ceil(quota))) if quota else cpus


def _cpu_quota() -> float | None:
    """CPUs' worth of time a cgroup quota allows, None when there is none (cgroup v2, then v1)."""
    try:
        limit, period = (_CGROUP / "cpu.max").read_text().split()[:2]
        return None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        pass
    try:
        limit_us = int((_CGROUP / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((_CGROUP / "cpu" / "cpu.cfs_period_us").read_text())
        return limit_us / period_us if limit_us > 0 else None
    except (OSError, ValueError):
        return None


def cores(cpus: int) -> int:
    """Of `cpus` logical CPUs, how many are whole cores: two hyperthreads of one core decode no faster than one."""
    try:
        info = _CPUINFO.read_text()
    except OSError:
        return max(1, cpus // 2)  # llama-cpp-python's guess
    fields = {key.strip(): value for key, value in (line.split(":", 1) for line in info.splitlines() if ":" in line)}
    try:
        per_core = int(fields["siblings"]) // int(fields["cpu cores"])
    except (KeyError, ValueError, ZeroDivisionError):
        return max(1, cpus // 2)
    return max(1, cpus // max(per_core, 1))


@dataclass(frozen=True)
class Sample:
    wall: float
    busy: float  # CPU-seconds every process in scope has used
    own: float  # CPU-seconds this process has used


class BusyClock:
    """CPU-seconds used by everything in scope: the cgroup where a quota bounds it, else the whole machine."""

    def __init__(self) -> None:
        self._ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
        self._read = self._cgroup_usage if _cpu_quota() and self._cgroup_usage() is not None else self._proc_stat

    def sample(self) -> Sample | None:
        busy = self._read()
        return None if busy is None else Sample(time.monotonic(), busy, time.process_time())

    def _proc_stat(self) -> float | None:
        """Busy seconds of the CPUs this process may run on (a container pinned to 2 of a host's 64 must not
        count the other 62's tenants)."""
        try:
            lines = Path("/proc/stat").read_text(encoding="ascii").splitlines()
        except OSError:
            return None
        mine = {f"cpu{n}" for n in self._cpus}
        busy = None
        for line in lines:
            fields = line.split()
            if fields and fields[0] in mine:
                values = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
                busy = (busy or 0) + sum(values) - values[3] - values[4]
        return None if busy is None else busy / self._ticks

    @staticmethod
    def _cgroup_usage() -> float | None:
        try:
            for line in (_CGROUP / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
        try:
            return int((_CGROUP / "cpuacct" / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None


def other_cpus(before: Sample, after: Sample) -> float:
    """How many CPUs' worth of time other work used between two samples."""
    return max(0.0, (after.busy - before.busy) - (after.own - before.own)) / max(after.wall - before.wall, 1e-9)
