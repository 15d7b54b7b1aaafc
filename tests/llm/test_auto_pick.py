"""LLM_GGUF=auto's pick, by its rule and with the machine's facts injected (no GPU here, and no model
loads): on this 2-core machine with the hub reachable and not, on a GPU with and without a llama.cpp
that can offload to it, and what a CPU speed kept on disk holds for."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from searchbox.llm.errors import GGUFUnavailable
from searchbox.llm.weights.packaged import PACKAGED_QWEN_15B
from searchbox.llm.choice.presets import PRESETS, auto_pick, find_preset
from searchbox.llm.choice.cpu_speed import CpuSpeed, cpu_speed
from searchbox.llm.llamacpp.speed import Speed
from searchbox.settings import Settings

connect_module = importlib.import_module("searchbox.llm.choice.connect")
speed_module = importlib.import_module("searchbox.llm.choice.cpu_speed")

THIS_MACHINE_RAM_MB = 21_985  # what doctor reports here
# The packaged 0.5B on these 2 cores idle, assumed: they were never idle while this was written (shared
# with other sessions, load average 4 to 16, they measured 12 prompt and 5.6 output tokens/s).
IDLE_2_CORES = CpuSpeed(Speed(prefill_tps=80.0, decode_tps=25.0), reference_mb=468, load_average=0.3)
TARGET_S = 120


def never_measured() -> CpuSpeed | None:
    raise AssertionError("the CPU's speed was measured although the GPU decided")


def test_on_this_machine_auto_picks_the_packaged_1_5b_for_its_speed() -> None:
    """The larger models fit the RAM (the memory rule picked Qwen3-4B) but a typical run of each would take
    minutes here; the thinking Qwen3-1.7B writes about five times as much."""
    pick = auto_pick(0, THIS_MACHINE_RAM_MB, lambda: IDLE_2_CORES, TARGET_S)
    assert pick.preset.name == "qwen2.5-coder-1.5b"
    assert "~103 s, within the 120 s target" in pick.why
    assert "larger: qwen3-4b-instruct-2507 ~242 s, qwen3-1.7b ~240 s" in pick.why  # the 35B does not fit the RAM
    # Unmeasured, the memory rule would have picked Qwen3-4B; the packaged default needs no download.
    assert auto_pick(0, THIS_MACHINE_RAM_MB, lambda: None, TARGET_S).preset.name == "qwen2.5-coder-1.5b"


def test_a_faster_cpu_or_a_longer_target_picks_a_larger_model() -> None:
    four_times = CpuSpeed(Speed(320.0, 100.0), 468, 0.0)
    assert auto_pick(0, 64_000, lambda: four_times, TARGET_S).preset.name == "qwen3.6-35b-a3b"
    assert auto_pick(0, THIS_MACHINE_RAM_MB, lambda: four_times, TARGET_S).preset.name == "qwen3-4b-instruct-2507"
    assert auto_pick(0, THIS_MACHINE_RAM_MB, lambda: IDLE_2_CORES, 250).preset.name == "qwen3-4b-instruct-2507"


def test_a_cpu_too_slow_for_the_target_gets_the_fastest_instruct_model_not_the_base_model() -> None:
    crawling = CpuSpeed(Speed(5.0, 2.0), 468, 7.0)
    pick = auto_pick(0, THIS_MACHINE_RAM_MB, lambda: crawling, TARGET_S)
    assert pick.preset.name == "qwen2.5-coder-0.5b" and "the fastest; none within the 120 s target" in pick.why
    assert auto_pick(0, 1_000, lambda: crawling, TARGET_S).preset.name == "gemma3-270m"  # all that fits


@pytest.mark.parametrize(("vram_mb", "name"), [(48_000, "qwen3.6-35b-a3b"), (8_000, "qwen3-4b-instruct-2507"),
                                               (4_000, "qwen3-1.7b")])
def test_a_gpu_llama_cpp_can_offload_to_picks_by_its_free_vram(vram_mb: int, name: str) -> None:
    pick = auto_pick(vram_mb, THIS_MACHINE_RAM_MB, never_measured, TARGET_S)
    assert pick.preset.name == name and f"{vram_mb:,} MB of free VRAM" in pick.why


def test_a_gpu_too_small_for_any_model_leaves_the_pick_to_the_cpu_rule() -> None:
    assert auto_pick(1_000, THIS_MACHINE_RAM_MB, lambda: IDLE_2_CORES, TARGET_S).preset.name == "qwen2.5-coder-1.5b"


def test_a_gpu_with_a_cpu_build_of_llama_cpp_is_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """An L40S whose llama.cpp was built without GPU offload: no VRAM it can use, so the CPU rule decides."""
    import llama_cpp
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (46_000 * 2**20, 48_000 * 2**20))
    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: True)
    assert connect_module.free_vram_mb() == 46_000
    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: False)
    assert connect_module.free_vram_mb() == 0


def _this_machine(monkeypatch: pytest.MonkeyPatch, vram_mb: int = 0) -> None:
    monkeypatch.setattr(connect_module, "free_vram_mb", lambda: vram_mb)
    monkeypatch.setattr(connect_module, "available_ram_mb", lambda: THIS_MACHINE_RAM_MB)
    monkeypatch.setattr(connect_module, "cpu_speed", lambda *args, **kwargs: IDLE_2_CORES)


@pytest.mark.parametrize("hub", ["reachable", "unreachable"])
def test_what_a_run_boots_on_this_machine_with_the_hub_reachable_and_not(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path, hub: str) -> None:
    _this_machine(monkeypatch)
    booted: list[str] = []

    def resolve(spec: str, **kwargs: object) -> Path:
        if hub == "unreachable" and not find_preset(spec).packaged:
            raise GGUFUnavailable(f"{spec} is not in the local Hugging Face cache and the hub cannot be reached")
        booted.append(spec)
        return tmp_path / "model.gguf"

    monkeypatch.setattr(connect_module, "resolve_gguf", resolve)
    notes: list[str] = []
    preset, _, auto = connect_module._choose_gguf(Settings.resolve(env={}), notes.append, None)
    # The packaged 1.5B either way: picked for its speed, so nothing is downloaded and nothing falls back.
    assert preset.gguf == PACKAGED_QWEN_15B == booted[0] and auto.preset is preset
    [note] = notes
    assert note.startswith(f"LLM_GGUF=auto picked {PACKAGED_QWEN_15B}: a typical run ~103 s")


def test_a_gpu_build_on_a_gpu_machine_boots_the_production_model(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    _this_machine(monkeypatch, vram_mb=46_000)
    monkeypatch.setattr(connect_module, "cpu_speed", lambda *args, **kwargs: never_measured())
    monkeypatch.setattr(connect_module, "resolve_gguf", lambda spec, **kwargs: tmp_path / "model.gguf")
    preset, _, auto = connect_module._choose_gguf(Settings.resolve(env={}), lambda note: None, None)
    assert preset is PRESETS[0] and auto.record()["picked"] == "qwen3.6-35b-a3b"


def test_a_kept_cpu_speed_holds_for_the_same_machine_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    machine = {"cpu": "a CPU", "cpus": 2, "llama_cpp": "0.3.36", "build": "AVX2 = 1"}
    monkeypatch.setattr(speed_module, "_machine", lambda: machine)
    (tmp_path / "cpu_speed.json").write_text(json.dumps({
        "machine": machine, "speed": {"prefill_tps": 80.0, "decode_tps": 25.0}, "reference_mb": 468,
        "load_average": 0.3}))
    assert cpu_speed(tmp_path, tmp_path / "models", measure=False) == IDLE_2_CORES
    monkeypatch.setattr(speed_module, "_machine", lambda: {**machine, "cpus": 16})  # another machine, same cache
    assert cpu_speed(tmp_path, tmp_path / "models", measure=False) is None


@pytest.mark.real_model
def test_a_speed_measured_while_other_work_holds_the_cpus_is_neither_kept_nor_used(tmp_path: Path) -> None:
    # A sweep's run on 2 cores made the 1.5B's typical run 199 s where it is 75 s idle, and auto picked the 0.5B;
    # such a figure now leaves the speed unknown (auto: the largest packaged instruct model) and is measured again.
    import subprocess
    import sys

    from searchbox.llm.llamacpp.cpu_load import usable_cpus

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(usable_cpus())]
    try:
        assert cpu_speed(tmp_path, Settings.resolve(env={}).models_dir) is None
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert not (tmp_path / "cpu_speed.json").exists()
