"""CPU speed of a packaged model through the harness: prefill and decode tokens/s as the runtime
records them, next to llama.cpp's own counters for the same prompts; the share of prompt tokens a
second step reuses from the KV cache (a step of a turn resends the whole conversation plus a tool
result); and how the thread count changes both, on an idle machine and with one core kept busy.

    python bench/cpu_speed.py [--model packaged:qwen2.5-coder-1.5b] [--threads auto,1,2]

auto is the runtime's own rule (LLM_THREADS=0: decode with the cores other work leaves idle, decode_threads);
a number fixes prompt and decode threads.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from searchbox.agent.prompts import system_prompt  # noqa: E402
from searchbox.assets import BUILTIN_DATAROOM  # noqa: E402
from searchbox.llm.weights.gguf import resolve_gguf  # noqa: E402
from searchbox.llm.llamacpp.model import LlamaCppModel  # noqa: E402

QUESTION = "Who audited the FY2025 financial statements?"
def _tool_result() -> str:
    """A tool result of the size a search returns (about 900 tokens), from the built-in dataroom's own text."""
    import zipfile

    with zipfile.ZipFile(BUILTIN_DATAROOM) as room:
        texts = [room.read(n).decode(errors="replace") for n in room.namelist() if n.endswith((".md", ".txt"))]
    return "\n".join(texts)[:3600]


def _spin(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        pass


def measure(model: LlamaCppModel, max_tokens: int) -> dict[str, float]:
    """Two steps of one turn: the question, then the same conversation with a tool call and its result."""
    first = [{"role": "system", "content": system_prompt()}, {"role": "user", "content": QUESTION}]
    second = [*first,
              {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
                  "name": "grep", "arguments": '{"pattern": "audit"}'}}]},
              {"role": "tool", "tool_call_id": "c1", "content": _tool_result()}]
    rows = []
    for messages in (first, second):
        done = [e for e in model.stream(messages, None, max_tokens=max_tokens, temperature=0.0) if e.kind == "done"]
        response = done[-1].response
        rows.append((response.usage, response.timings))
    (u1, t1), (u2, t2) = rows
    return {
        "prompt_tokens": u1.input + u2.input,
        "reused_share_step2": u2.cache_read / u2.input if u2.input else 0.0,
        "prefill_tps": t2.get("prefill_tokens_per_s", 0.0),
        "llama_prefill_tps": t2.get("llama_prefill_tokens_per_s", 0.0),
        "decode_tps": (t1.get("decode_tokens_per_s", 0.0) + t2.get("decode_tokens_per_s", 0.0)) / 2,
        "llama_decode_tps": (t1.get("llama_decode_tokens_per_s", 0.0) + t2.get("llama_decode_tokens_per_s", 0.0)) / 2,
        "wall_s": (t1["wall_ms"] + t2["wall_ms"]) / 1000,
        "decode_threads": (t1.get("decode_threads", 0.0) + t2.get("decode_threads", 0.0)) / 2,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="packaged:qwen2.5-coder-1.5b")
    parser.add_argument("--threads", default="auto,1,2")
    parser.add_argument("--max-tokens", type=int, default=48)
    args = parser.parse_args()
    path = resolve_gguf(args.model)
    print(f"{args.model}: {os.cpu_count()} logical CPUs; load average {os.getloadavg()[0]:.2f}")
    header = ("condition", "threads (mean decode threads)", "prefill tok/s (harness / llama.cpp)", "decode tok/s (harness / llama.cpp)",
              "step-2 prompt reused", "wall s")
    print(" | ".join(header))
    for busy in (False, True):
        for threads in args.threads.split(","):
            model = LlamaCppModel(path, 8192, n_threads=None if threads == "auto" else int(threads))
            spinner = None
            if busy:  # another process keeps one core busy, as a second run or a sweep would
                spinner = multiprocessing.Process(target=_spin, args=(time.monotonic() + 3600,), daemon=True)
                spinner.start()
            try:
                row = measure(model, args.max_tokens)
            finally:
                if spinner is not None:
                    spinner.terminate()
                model.close()
            print(f"{'one core busy' if busy else 'idle'} | {threads} ({row['decode_threads']:.1f}) | {row['prefill_tps']:.1f} / {row['llama_prefill_tps']:.1f} | "
                  f"{row['decode_tps']:.1f} / {row['llama_decode_tps']:.1f} | {row['reused_share_step2']:.0%} | {row['wall_s']:.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
