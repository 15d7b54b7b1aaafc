"""llama.cpp's speed with each KV cache type LLM_KV_CACHE offers and each micro-batch size (n_ubatch), on
this machine: a cold prompt, then new prompt tokens at the depth a run's later steps evaluate them (after the
tokens its cache holds), and tokens decoded there one at a time (`LlamaCppModel.replay_time`: raw llama.cpp,
no template or sampler). The setups are loaded in turn, round after round, so that a change in the machine's
load falls on each alike; the first is the baseline of the ratios. A type may say `+fa` or `-fa` (flash attention
on or off; bare: the runtime's rule). For each setup, how far one token's logits at the depth move when it is
decoded with one thread instead of all (0: the decode thread count cannot change a seed's tokens).

    python bench/kv_cache.py [--model packaged:qwen2.5-coder-1.5b] [--rounds 2] [--depth 1400] [--new 1500]
                             [--types q8_0,f16] [--ubatches 512,128]  (default ubatch: the runtime's own)
    python bench/kv_cache.py --types f16+fa,f16-fa      # flash attention on a CPU
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.llm.weights.gguf import resolve_gguf  # noqa: E402
from searchbox.llm.llamacpp.model import LlamaCppModel  # noqa: E402
from searchbox.llm.llamacpp.speed import StepShape  # noqa: E402

FLASH = {"": None, "+fa": True, "-fa": False}


def decode_thread_spread(llama: Any, depth: int) -> float:
    """The largest change of one token's logits, decoded after `depth` tokens with one thread against with all."""
    import llama_cpp
    import numpy as np

    text = " ".join(f"Note {n}: box {n} holds the ledgers from {1900 + n % 100}." for n in range(depth))
    tokens = llama.tokenize(text.encode())[:depth + 1]
    threads, batch = llama.context_params.n_threads, llama.context_params.n_threads_batch
    llama.reset()
    llama.eval(tokens[:-1])
    logits = []
    for count in (1, max(threads, batch)):
        llama.n_tokens = len(tokens) - 1  # the last token decoded again, in the same place
        llama_cpp.llama_set_n_threads(llama.ctx, count, batch)
        llama.eval(tokens[-1:])
        logits.append(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama.ctx, -1), shape=(llama.n_vocab(),)).copy())
    llama_cpp.llama_set_n_threads(llama.ctx, threads, batch)
    llama.reset()
    return float(np.abs(logits[0] - logits[1]).max())




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
    spread: dict[tuple, float] = {}
    path = resolve_gguf(args.model)
    cold = [StepShape(0, args.new, 0)]
    deep = [StepShape(args.depth, args.depth + args.new, args.decoded)]
    seen: dict[tuple, dict[str, list[float]]] = {setup: {"cold": [], "deep": [], "decode": []} for setup in setups}
    labels: dict[tuple, str] = {}
    print(f"{path.name}, n_ctx {args.n_ctx}: {os.cpu_count()} logical CPUs, load average before "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    for round_ in range(1, args.rounds + 1):
        for setup in setups:
            kind, ubatch = setup
            suffix = kind[-3:] if kind[-3:] in FLASH else ""
            kv, flash = kind[:len(kind) - len(suffix)], FLASH[suffix]
            model = LlamaCppModel(path, args.n_ctx, kv_cache=kv, n_ubatch=ubatch, flash_attn=flash)
            label = (f"{kv}, flash attention {'on' if model.runtime['flash_attn'] else 'off'}, "
                     f"n_ubatch {model._llama.context_params.n_ubatch}")
            try:
                model.replay_time([StepShape(0, 64, 1)])  # the first evaluation after a load pays for more
                first = model.replay_time(cold)
                later = model.replay_time(deep)
                spread.setdefault(setup, decode_thread_spread(model._llama, args.depth))
            finally:
                model.close()
            seen[setup]["cold"].append(args.new / first.prefill_s)
            seen[setup]["deep"].append(args.new / later.prefill_s)
            seen[setup]["decode"].append(args.decoded / later.decode_s)
            labels[setup] = label
            print(f"round {round_}, {label}: cold {seen[setup]['cold'][-1]:.1f}, at depth "
                  f"{seen[setup]['deep'][-1]:.1f} prompt tokens/s, decode there {seen[setup]['decode'][-1]:.1f} "
                  f"tokens/s; load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"\n| KV cache, flash attention, micro-batch | prefill, cold {args.new:,} tokens | prefill, {args.new:,} at "
          f"depth {args.depth:,} | decode at depth | each x the first (cold / depth / decode) | logits, 1 decode "
          f"thread against all: max change |")
    print("|---|---|---|---|---|---|")
    medians = {setup: {k: statistics.median(v) for k, v in seen[setup].items()} for setup in setups}
    base = medians[setups[0]]
    for setup in setups:
        median = medians[setup]
        print(f"| {labels[setup]} | {median['cold']:.1f} tok/s | {median['deep']:.1f} tok/s | "
              f"{median['decode']:.1f} tok/s | "
              f"{median['cold'] / base['cold']:.2f} / {median['deep'] / base['deep']:.2f} / "
              f"{median['decode'] / base['decode']:.2f} | {spread[setup]:.3g} |")
    print(f"medians of {args.rounds} round(s); load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
