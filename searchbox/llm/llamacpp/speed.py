"""llama.cpp's own speed on a loaded model, with raw llama.cpp (filler tokens: no template, no sampler): a prompt
evaluated cold then tokens one at a time (llama_speed), or a run's steps replayed where their tokens sit
(llama_replay). `LlamaCppModel.measure_speed` and `replay_time` run them under the model's lock; LLM_GGUF=auto's
measure of this machine (choice/cpu_speed.py) and the benches use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_FILLER = "The auditor's report on the financial statements of the group for the year ended 30 June. "


@dataclass(frozen=True)
class Speed:
    prefill_tps: float
    decode_tps: float


def llama_speed(llama: Any, prompt_tokens: int = 512, decoded: int = 32) -> Speed:
    """llama.cpp's own prefill and decode tokens/s in a loaded context: `prompt_tokens` evaluated cold in one
    call, then `decoded` tokens one at a time. Leaves the context empty."""
    import time

    tokens = llama.tokenize((_FILLER * (prompt_tokens // 8 + 1)).encode())[:prompt_tokens]
    llama.reset()
    started = time.perf_counter()
    llama.eval(tokens)
    prefill = len(tokens) / (time.perf_counter() - started)
    started = time.perf_counter()
    for token in tokens[:decoded]:
        llama.eval([token])
    decode = decoded / (time.perf_counter() - started)
    llama.reset()
    return Speed(prefill, decode)


@dataclass(frozen=True)
class StepShape:
    """One LLM call of a run as llama.cpp saw it: prompt tokens the cache held, prompt tokens, tokens written."""

    cached: int
    prompt: int
    output: int


@dataclass(frozen=True)
class ReplayTime:
    prefill_s: float
    decode_s: float
    new_prompt: int
    output: int

    @property
    def seconds(self) -> float:
        return self.prefill_s + self.decode_s


def llama_replay(llama: Any, steps: list[StepShape]) -> ReplayTime:
    """llama.cpp's own time for a run's new tokens where they sit: each step's uncached prompt tokens
    evaluated after its cached ones (those evaluated untimed when the context does not hold them), then its
    output tokens one at a time. Filler tokens, no template or sampler: prefill slows with the depth its
    tokens sit at, so a short cold prompt's speed understates what a run's later steps cost. Leaves the
    context empty."""
    import time

    longest = max((step.prompt + step.output for step in steps), default=0)
    tokens = llama.tokenize((_FILLER * (longest // 8 + 1)).encode())[:longest]
    llama.reset()
    prefill = decode = 0.0
    held_tokens = 0
    for step in steps:
        if step.cached <= held_tokens:
            llama.n_tokens = step.cached  # eval drops what the cache holds past n_tokens
        else:
            llama.eval(tokens[held_tokens:step.cached])
        started = time.perf_counter()
        llama.eval(tokens[step.cached:step.prompt])
        prefill += time.perf_counter() - started
        started = time.perf_counter()
        for token in tokens[step.prompt:step.prompt + step.output]:
            llama.eval([token])
        decode += time.perf_counter() - started
        held_tokens = step.prompt + step.output
    llama.reset()
    return ReplayTime(prefill, decode, sum(s.prompt - s.cached for s in steps), sum(s.output for s in steps))
