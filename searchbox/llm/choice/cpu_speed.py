"""How fast llama.cpp runs on this machine's CPU, and how long a typical run of a preset would take here:
what LLM_GGUF=auto weighs where llama.cpp has no GPU to offload to.

Measured once per machine and build with the smallest packaged instruct model (raw llama.cpp: a prompt
evaluated cold, then tokens one at a time; no template, no sampler: llamacpp/speed.py) and kept in the cache
folder with the load average it ran under. A preset's speed is scaled from it by the weights one token reads (a
mixture-of-experts model reads only its active experts'): a rough rule, but one that orders the presets
and puts their runs in the right range of minutes.
"""

from __future__ import annotations

import json
import logging
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from searchbox.llm.errors import LLMError
from searchbox.llm.llamacpp.cpu_load import BusyClock, other_cpus, usable_cpus
from searchbox.llm.llamacpp.model import LlamaCppModel
from searchbox.llm.llamacpp.speed import Speed
from searchbox.llm.weights.gguf import resolve_gguf
from searchbox.llm.weights.packaged import PACKAGED, PACKAGED_QWEN_05B

log = logging.getLogger(__name__)

# A typical first answer with the packaged models' preset on the built-in dataroom: the prompt tokens no
# cache held, and the output tokens, over its steps (bench/first_answer.py with the packaged 1.5B, seed 1:
# 3,094 and 155 in one fresh run, 1,882 and 549 in three others).
TYPICAL_NEW_PROMPT_TOKENS = 2_500
TYPICAL_OUTPUT_TOKENS = 350
BUSY_SHARE = 0.25  # a measurement during which other work held this share of the CPUs is not a speed


@dataclass(frozen=True)
class CpuSpeed:
    """This machine's measured speed with a reference model of `reference_mb` of weights."""

    speed: Speed
    reference_mb: int
    load_average: float  # the 1-minute load average when it was measured

    def typical_run_seconds(self, read_mb: int, output_tokens: int = TYPICAL_OUTPUT_TOKENS) -> float:
        """A typical run's prefill and decode time for a model whose tokens read `read_mb` of weights."""
        scale = read_mb / self.reference_mb
        return scale * (TYPICAL_NEW_PROMPT_TOKENS / self.speed.prefill_tps + output_tokens / self.speed.decode_tps)


def cpu_speed(cache_dir: str | Path, models_dir: str | Path, *, measure: bool = True) -> CpuSpeed | None:
    """This machine's CPU speed: kept from an earlier measurement of the same CPU and build, else measured
    now (seconds) with the packaged Qwen2.5-Coder-0.5B; None when that model cannot be had, when other work
    held a quarter of the CPUs or more while it was measured, or when none was kept and `measure` is off."""
    path = Path(cache_dir) / "cpu_speed.json"
    machine = _machine()
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("machine") == machine:
            return CpuSpeed(Speed(**kept["speed"]), kept["reference_mb"], kept["load_average"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if not measure:
        return None
    try:
        model = LlamaCppModel(resolve_gguf(PACKAGED_QWEN_05B, models_dir=models_dir), 2048)
    except LLMError as exc:
        log.warning("cannot measure this CPU's speed: %s", exc)
        return None
    clock = BusyClock()
    try:
        load, before = os.getloadavg()[0], clock.sample()
        measured = CpuSpeed(model.measure_speed(), PACKAGED[PACKAGED_QWEN_05B].size // 2**20, round(load, 2))
        after = clock.sample()
    finally:
        model.close()
    # Measured while other work held the CPUs, the figure says more about that work than about this machine
    # (on 2 cores a sweep's run made the 1.5B's typical run 199 s where it is 75 s idle, and auto picked the
    # 0.5B): neither kept nor used; the next process measures again.
    others, cpus = (other_cpus(before, after) if before and after else 0.0), usable_cpus()
    if others >= BUSY_SHARE * cpus:
        log.warning("this CPU's speed was not kept: other work held %.1f of its %d CPUs while it was measured",
                    others, cpus)
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"machine": machine, **asdict(measured)}), encoding="utf-8")
    except OSError as exc:
        log.warning("could not keep this CPU's speed in %s: %s", path, exc)
    return measured


def _machine() -> dict[str, Any]:
    """What a CPU speed holds for: the processor, how many CPUs this process may use, the llama.cpp build."""
    import llama_cpp

    model_name = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model_name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    # "decode": the thread rule it was measured under (decode_threads; before it, half the logical CPUs).
    return {"cpu": model_name, "cpus": len(os.sched_getaffinity(0)), "llama_cpp": llama_cpp.__version__,
            "build": llama_cpp.llama_print_system_info().decode(errors="replace"), "decode": "idle cores"}
