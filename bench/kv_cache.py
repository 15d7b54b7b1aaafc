"""llama.cpp's speed with each KV cache type LLM_KV_CACHE offers and each micro-batch size (n_ubatch), on
this machine: a cold prompt, then new prompt tokens at the depth a run's later steps evaluate them (after the
tokens its cache holds), and tokens decoded there one at a time (`LlamaCppModel.replay_time`: raw llama.cpp,
no template or sampler). The setups are loaded in turn, round after round, so that a change in the machine's
load falls on each alike; the first is the baseline of the ratios.

    python bench/kv_cache.py [--model packaged:qwen2.5-coder-1.5b] [--rounds 2] [--depth 1400] [--new 1500]
                             [--types q8_0,f16] [--ubatches 512,128]  (default ubatch: the runtime's own)
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

from searchbox.llm.weights.gguf import resolve_gguf  # noqa: E402
from searchbox.llm.llamacpp.model import LlamaCppModel  # noqa: E402
from searchbox.llm.llamacpp.speed import StepShape  # noqa: E402



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="packaged:qwen2.5-coder-1.5b")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--depth", type=int, default=1400, help="prompt tokens the cache holds before the new ones")
    parser.add_argument("--new", type=int, default=1500, help="new prompt tokens evaluated there")
    parser.add_argument("--decoded", type=int, default=32)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--types", default="q8_0,f16", help="KV cache types, comma-separated")
    parser.add_argument("--ubatches", default="", help="micro-batch sizes, comma-separated (default: the runtime's)")
    args = parser.parse_args()
    setups = [(kv, int(ub) if ub else None) for kv in args.types.split(",") for ub in args.ubatches.split(",")]
    path = resolve_gguf(args.model)
    cold = [StepShape(0, args.new, 0)]
    deep = [StepShape(args.depth, args.depth + args.new, args.decoded)]
    seen: dict[tuple, dict[str, list[float]]] = {setup: {"cold": [], "deep": [], "decode": []} for setup in setups}
    labels: dict[tuple, str] = {}
    print(f"{path.name}, n_ctx {args.n_ctx}: {os.cpu_count()} logical CPUs, load average before "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    for round_ in range(1, args.rounds + 1):
        for setup in setups:
            kv, ubatch = setup
            model = LlamaCppModel(path, args.n_ctx, kv_cache=kv, n_ubatch=ubatch)
            label = f"{kv}, n_ubatch {model._llama.context_params.n_ubatch}"
            try:
                model.replay_time([StepShape(0, 64, 1)])  # the first evaluation after a load pays for more
                first = model.replay_time(cold)
                later = model.replay_time(deep)
            finally:
                model.close()
            seen[setup]["cold"].append(args.new / first.prefill_s)
            seen[setup]["deep"].append(args.new / later.prefill_s)
            seen[setup]["decode"].append(args.decoded / later.decode_s)
            labels[setup] = label
            print(f"round {round_}, {label}: cold {seen[setup]['cold'][-1]:.1f}, at depth "
                  f"{seen[setup]['deep'][-1]:.1f} prompt tokens/s, decode there {seen[setup]['decode'][-1]:.1f} "
                  f"tokens/s; load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"\n| KV cache, micro-batch | prefill, cold {args.new:,} tokens | prefill, {args.new:,} at depth "
          f"{args.depth:,} | decode at depth | each x the first (cold / depth / decode) |")
    print("|---|---|---|---|---|")
    medians = {setup: {k: statistics.median(v) for k, v in seen[setup].items()} for setup in setups}
    base = medians[setups[0]]
    for setup in setups:
        median = medians[setup]
        print(f"| {labels[setup]} | {median['cold']:.1f} tok/s | {median['deep']:.1f} tok/s | "
              f"{median['decode']:.1f} tok/s | "
              f"{median['cold'] / base['cold']:.2f} / {median['deep'] / base['deep']:.2f} / "
              f"{median['decode'] / base['decode']:.2f} |")
    print(f"medians of {args.rounds} round(s); load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
