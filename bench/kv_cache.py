"""llama.cpp's speed with each KV cache type LLM_KV_CACHE offers, on this machine: a cold prompt, then new
prompt tokens at the depth a run's later steps evaluate them (after the tokens its cache holds), and tokens
decoded there one at a time (`LlamaCppModel.replay_time`: raw llama.cpp, no template or sampler). The types
are loaded in turn, round after round, so that a change in the machine's load falls on each alike.

    python bench/kv_cache.py [--model packaged:qwen2.5-coder-1.5b] [--rounds 2] [--depth 1400] [--new 1500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.llm.gguf import resolve_gguf  # noqa: E402
from searchbox.llm.llamacpp_runtime import LlamaCppModel  # noqa: E402
from searchbox.llm.speed import StepShape  # noqa: E402

TYPES = ("q8_0", "f16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="packaged:qwen2.5-coder-1.5b")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--depth", type=int, default=1400, help="prompt tokens the cache holds before the new ones")
    parser.add_argument("--new", type=int, default=1500, help="new prompt tokens evaluated there")
    parser.add_argument("--decoded", type=int, default=32)
    parser.add_argument("--n-ctx", type=int, default=8192)
    args = parser.parse_args()
    path = resolve_gguf(args.model)
    cold = [StepShape(0, args.new, 0)]
    deep = [StepShape(args.depth, args.depth + args.new, args.decoded)]
    seen: dict[str, dict[str, list[float]]] = {t: {"cold": [], "deep": [], "decode": []} for t in TYPES}
    print(f"{path.name}, n_ctx {args.n_ctx}: {os.cpu_count()} logical CPUs, load average before "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    for round_ in range(1, args.rounds + 1):
        for kv in TYPES:
            model = LlamaCppModel(path, args.n_ctx, kv_cache=kv)
            try:
                model.replay_time([StepShape(0, 64, 1)])  # the first evaluation after a load pays for more
                first = model.replay_time(cold)
                later = model.replay_time(deep)
            finally:
                model.close()
            seen[kv]["cold"].append(args.new / first.prefill_s)
            seen[kv]["deep"].append(args.new / later.prefill_s)
            seen[kv]["decode"].append(args.decoded / later.decode_s)
            print(f"round {round_}, {kv}: cold {seen[kv]['cold'][-1]:.1f}, at depth {seen[kv]['deep'][-1]:.1f} "
                  f"prompt tokens/s, decode there {seen[kv]['decode'][-1]:.1f} tokens/s; load "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    print(f"\n| KV cache | prefill, cold {args.new:,} tokens | prefill, {args.new:,} at depth {args.depth:,} | "
          f"decode at depth | each x q8_0 (cold / depth / decode) |")
    print("|---|---|---|---|---|")
    base = {k: statistics.median(v) for k, v in seen["q8_0"].items()}
    for kv in TYPES:
        median = {k: statistics.median(v) for k, v in seen[kv].items()}
        print(f"| {kv} | {median['cold']:.1f} tok/s | {median['deep']:.1f} tok/s | {median['decode']:.1f} tok/s | "
              f"{median['cold'] / base['cold']:.2f} / {median['deep'] / base['deep']:.2f} / "
              f"{median['decode'] / base['decode']:.2f} |")
    print(f"medians of {args.rounds} round(s); load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
