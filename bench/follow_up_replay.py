"""What the run's model answers to a message the harness could have sent: a job's transcript up to a
step, then each candidate follow-up (or chain of them), sent to the model the run's recorded knobs name,
with the run's own system prompt, tools and seed. Nothing is written to the job.

    python bench/follow_up_replay.py JOB --upto N [--candidates bench/data/review_follow_ups.json]

N: how many of session.jsonl's messages to keep (4 keeps the question, the forced search, its result and
the first answer). The candidates file is a list; each item is a message or a list of messages sent one
after another, each reply kept. `{question}`, `{answer}` and `{cited}` in a message are the job's question,
the last reply kept and the ids it cites ("[s1], [s2]"). Prints every reply with its seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.citations.markers import cited_ids  # noqa: E402
from searchbox.evaluation.transcript import run_transcript  # noqa: E402
from searchbox.llm.choice.connect import connect  # noqa: E402
from searchbox.records.job_folder import JobFolder  # noqa: E402


def candidates(path: Path) -> list[str | list[str]]:
    """The candidates file: a list of messages and lists of messages; SystemExit saying what is wrong."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read the candidates {path}: {exc}") from None
    if not isinstance(items, list) or not all(
            isinstance(i, str) or isinstance(i, list) and i and all(isinstance(m, str) for m in i) for i in items):
        raise SystemExit(f"{path} must hold a list whose items are messages or lists of messages")
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", type=Path)
    parser.add_argument("--upto", type=int, required=True, help="how many of the session's messages to keep")
    parser.add_argument("--candidates", type=Path, default=ROOT / "bench" / "data" / "review_follow_ups.json")
    args = parser.parse_args()

    try:
        run = run_transcript(args.job)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    tried = candidates(args.candidates)
    if not 0 < args.upto < len(run.messages):
        raise SystemExit(f"--upto must be 1 to {len(run.messages) - 1}: the session holds {len(run.messages) - 1} messages")
    settings, kept = run.settings, run.messages[:args.upto + 1]  # the system prompt and the first N
    question = JobFolder(args.job).question()
    answer = next((m.get("content") or "" for m in reversed(kept) if m.get("role") == "assistant"), "")
    model = connect(settings)
    print(f"{args.job}: {args.upto} messages kept; model {model.model_id}, seed {settings.llm_seed}")
    print(f"the kept answer: {answer}\n")
    for item in tried:
        messages = list(kept)
        last = answer
        for follow_up in [item] if isinstance(item, str) else item:
            cited = ", ".join(f"[{source_id}]" for source_id in cited_ids(last))
            text = follow_up.replace("{question}", question).replace("{answer}", last).replace("{cited}", cited)
            messages.append({"role": "user", "content": text})
            started = time.monotonic()
            reply = model.complete(messages, run.tools, max_tokens=settings.max_output_tokens,
                                   seed=settings.llm_seed)
            messages.append(reply.as_message())
            last = reply.text
            calls = [(c.name, c.arguments) for c in reply.tool_calls]
            print(f"--- sent: {text}\n--- reply ({time.monotonic() - started:.0f} s): {reply.text}"
                  + (f"\n--- calls: {calls}" if calls else ""))
        print()
    model.close()


if __name__ == "__main__":
    main()
