"""Prompt-lookup decoding (issue 33): does drafting tokens from the prompt's own n-grams make answers
that quote their sources faster on this machine, and is the answer the same?

Each answering step of the given jobs (an assistant reply with text and no tool call) is asked again of
the packaged 1.5B loaded twice with the same context size: plain, and with llama-cpp-python's
LlamaPromptLookupDecoding(num_pred_tokens=--draft). Same messages, tools, seed and output cap as the run
(its recorded knobs; --seed where it set none). Per step: whether the two replies are the same text,
output tokens, prefill and decode seconds of each, and the ratio of the step's seconds. Prompt lookup
needs every position's logits kept (n_ctx x vocabulary floats), which the memory line prints.

    python bench/prompt_lookup.py JOB [JOB ...] [--draft 10] [--n-ctx 8192]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.evaluation.transcript import run_transcript  # noqa: E402
from searchbox.llm.weights.gguf import resolve_gguf  # noqa: E402
from searchbox.llm.llamacpp.model import LlamaCppModel  # noqa: E402
from searchbox.llm.types import ChatResponse  # noqa: E402
from searchbox.settings import Settings  # noqa: E402

MODEL = "packaged:qwen2.5-coder-1.5b"


def answering_steps(job: Path) -> list[tuple[list[dict], list[dict], Settings]]:
    """(messages before the step, tools, settings) of each reply with text and no tool call."""
    run = run_transcript(job)
    return [(run.messages[:i], run.tools, run.settings) for i, m in enumerate(run.messages)
            if m.get("role") == "assistant" and (m.get("content") or "").strip() and not m.get("tool_calls")]


def seconds(response: ChatResponse) -> tuple[float, float]:
    timings = response.timings or {}
    return timings.get("prefill_ms", 0.0) / 1000, timings.get("decode_ms", 0.0) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("jobs", type=Path, nargs="+")
    parser.add_argument("--draft", type=int, default=10, help="tokens drafted from the prompt per step")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=1, help="the seed where the run set none (LLM_SEED unset)")
    args = parser.parse_args()

    try:
        steps = [step for job in args.jobs for step in answering_steps(job)]
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if not steps:
        raise SystemExit("no answering step (a reply with text and no tool call) in these jobs")
    path = resolve_gguf(MODEL, models_dir=steps[0][2].models_dir)
    plain = LlamaCppModel(path, args.n_ctx)
    drafted = LlamaCppModel(path, args.n_ctx, prompt_lookup=args.draft)
    vocabulary = drafted._llama.n_vocab()
    print(f"{MODEL}, n_ctx {args.n_ctx}, prompt lookup drafting {args.draft} tokens; {len(steps)} answering steps "
          f"of {len(args.jobs)} jobs; logits kept for prompt lookup: {args.n_ctx * vocabulary * 4 / 2**30:.1f} GiB")
    print("step | same reply | output tokens (plain / lookup) | prefill s | decode s | decode tok/s | step x plain")
    ratios, same = [], 0
    for n, (messages, tools, settings) in enumerate(steps, 1):
        replies = {}
        for name, model in (("plain", plain), ("lookup", drafted)):
            seed = settings.llm_seed if settings.llm_seed is not None else args.seed
            replies[name] = model.complete(messages, tools, max_tokens=settings.max_output_tokens, seed=seed)
        a, b = replies["plain"], replies["lookup"]
        (pa, da), (pb, db) = seconds(a), seconds(b)
        same += a.text == b.text
        ratio = (pb + db) / (pa + da) if pa + da else float("nan")
        ratios.append(ratio)
        print(f"{n} | {'yes' if a.text == b.text else 'no'} | {a.usage.output} / {b.usage.output} | "
              f"{pa:.1f} / {pb:.1f} | {da:.1f} / {db:.1f} | {a.usage.output / da if da else 0:.1f} / "
              f"{b.usage.output / db if db else 0:.1f} | {ratio:.2f}")
        if a.text != b.text:
            print(f"   plain:  {a.text[:300]!r}\n   lookup: {b.text[:300]!r}")
    print(f"same reply {same} of {len(steps)}; step time with prompt lookup, median {statistics.median(ratios):.2f} x plain")
    plain.close()
    drafted.close()


if __name__ == "__main__":
    main()
