"""Harness benchmark: the loop's own overhead per step (events, records, session, tool dispatch),
measured against models that answer instantly, as milliseconds per step and as a fraction of a real
step with the packaged model; and the packaged model's decode / prefill tokens/s as timing.json
records them, next to llama.cpp's own counters for the same prompts.

    python bench/harness.py [--steps 200] [--real-steps 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.scripted_endpoint import Reply, ScriptedEndpoint  # noqa: E402
from searchbox.agent.run import run_job  # noqa: E402
from searchbox.assets import BUILTIN_DATAROOM  # noqa: E402
from searchbox.jobs.job import create_job  # noqa: E402
from searchbox.llm.clients.openai_client import OpenAIClient  # noqa: E402
from searchbox.llm.dialects.call_objects import new_call_id  # noqa: E402
from searchbox.llm.types import ChatModel, ChatResponse, StreamEvent, ToolCall, Usage  # noqa: E402
from searchbox.records.files import read_json, read_jsonl  # noqa: E402
from searchbox.settings import Settings  # noqa: E402

QUESTION = "Who audited the FY2025 financial statements?"


class InstantModel(ChatModel):
    """Answers at once: `steps` responses that call `ls` (each with other arguments, so the repeat
    guard never steps in), then a final text."""

    model_id = "instant"

    def __init__(self, steps: int) -> None:
        self.left = steps

    def stream(self, messages, tools, *, max_tokens, temperature=0.6, tool_choice="auto", seed=None,
               thinking="auto", cancel=None) -> Iterator[StreamEvent]:
        self.left -= 1
        args = {"path": "dataroom", "limit": 100 + self.left}
        calls = [ToolCall(new_call_id(), "ls", args, json.dumps(args))] if self.left > 0 and tools else []
        text = "" if calls else "The auditor is named in the audit report [s1]."
        yield StreamEvent("done", response=ChatResponse(text, "", calls, Usage(100, 10), "stop"))

    def close(self) -> None:
        pass


def settings_for(tmp: Path, **overrides) -> Settings:
    base = {"retrieval_preset": "packaged", "searchbox_cache_dir": str(tmp / "cache"), "max_steps_per_turn": 10_000}
    return Settings.resolve(env={}, **{**base, **overrides})


def timed_run(job_dir: Path, settings: Settings, model: ChatModel) -> tuple[float, int]:
    create_job(job_dir, QUESTION, BUILTIN_DATAROOM, settings)
    started = time.perf_counter()
    run_job(job_dir, settings, model)
    elapsed = time.perf_counter() - started
    steps = sum(1 for row in read_jsonl(job_dir / "session.jsonl") if row.get("message", {}).get("role") == "assistant")
    return elapsed, steps


def overhead_in_process(tmp: Path, steps: int) -> float:
    elapsed, n = timed_run(tmp / "instant", settings_for(tmp), InstantModel(steps))
    tool_ms = read_json(tmp / "instant" / "timing.json")["tool_ms"]
    print(f"  in-process instant model: {n} steps in {elapsed:.2f} s -> {1000 * elapsed / n:.2f} ms/step "
          f"(of which the ls tool itself {tool_ms / n:.2f} ms)")
    return 1000 * elapsed / n


def overhead_over_http(tmp: Path, steps: int) -> float:
    script = [Reply(tool_calls=[{"name": "ls", "arguments": {"path": "dataroom", "limit": 100 + i}}], chunk_chars=10_000)
              for i in range(steps - 1)]
    with ScriptedEndpoint([*script, Reply(text="Done.")]) as endpoint:
        settings = settings_for(tmp, llama_url=endpoint.url, model_id="scripted")
        elapsed, n = timed_run(tmp / "http", settings, OpenAIClient(endpoint.url, "scripted"))
    print(f"  scripted HTTP endpoint:   {n} steps in {elapsed:.2f} s -> {1000 * elapsed / n:.2f} ms/step "
          "(includes the local HTTP round trip)")
    return 1000 * elapsed / n


def real_steps(tmp: Path, steps: int) -> float:
    from searchbox.llm.choice.connect import connect

    settings = settings_for(tmp, llm_gguf="packaged:gemma3-270m", context_window=4096, max_output_tokens=64,
                            max_steps_per_turn=steps, force_tool_steps=steps, searchbox_tools="")
    model = connect(settings)
    model.complete([{"role": "user", "content": "Hello"}], max_tokens=2)  # load outside the timing
    job = tmp / "real"
    create_job(job, QUESTION, BUILTIN_DATAROOM, settings)
    run_job(job, settings, model)
    rows = [r for r in read_jsonl(job / "session.jsonl") if r.get("message", {}).get("role") == "assistant"]
    step_ms = [float(r["timings"]["wall_ms"]) for r in rows if r.get("timings")]
    timing = read_json(job / "timing.json")
    llama = {k: sum(float(r["timings"].get(k, 0)) for r in rows if r.get("timings"))
             for k in ("llama_prefill_ms", "llama_prefill_tokens", "llama_decode_ms", "llama_decode_tokens")}
    print(f"  packaged Gemma 3 270M: {len(step_ms)} steps, median LLM time {statistics.median(step_ms):.0f} ms/step")
    print("\n== Packaged model speed: timing.json against llama.cpp's own counters (same prompts) ==")
    print(f"  decode  tokens/s: timing.json {timing['decode_tokens_per_s']:8.1f}   llama.cpp "
          f"{1000 * llama['llama_decode_tokens'] / max(llama['llama_decode_ms'], 1e-9):8.1f}")
    print(f"  prefill tokens/s: timing.json {timing['prefill_tokens_per_s']:8.1f}   llama.cpp "
          f"{1000 * llama['llama_prefill_tokens'] / max(llama['llama_prefill_ms'], 1e-9):8.1f}")
    model.close()
    return statistics.median(step_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--real-steps", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="searchbox-harness-") as name:
        tmp = Path(name)
        print("== Harness overhead per step (events, records, session, tool dispatch) ==")
        in_process = overhead_in_process(tmp, args.steps)
        over_http = overhead_over_http(tmp, args.steps)
        real = real_steps(tmp, args.real_steps)
        print("\n== Overhead as a fraction of a real step ==")
        print(f"  in-process harness: {in_process:.2f} ms of a {real:.0f} ms step = {100 * in_process / real:.3f}%")
        print(f"  with HTTP client:   {over_http:.2f} ms of a {real:.0f} ms step = {100 * over_http / real:.3f}%")
        print(json.dumps({"harness_ms_per_step": round(in_process, 3), "http_ms_per_step": round(over_http, 3),
                          "real_step_ms": round(real, 1)}))


if __name__ == "__main__":
    main()
