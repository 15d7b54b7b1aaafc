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
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.agent.prompts import run_system_prompt  # noqa: E402
from searchbox.agent.toolbox import RunToolbox  # noqa: E402
from searchbox.citations.markers import cited_ids  # noqa: E402
from searchbox.evaluation.assist_replay import run_settings  # noqa: E402
from searchbox.llm.connect import connect  # noqa: E402
from searchbox.records.files import read_json, read_jsonl  # noqa: E402
from searchbox.records.job_folder import JobFolder  # noqa: E402
from searchbox.workspace import Workspace  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", type=Path)
    parser.add_argument("--upto", type=int, required=True, help="how many of the session's messages to keep")
    parser.add_argument("--candidates", type=Path, default=ROOT / "bench" / "data" / "review_follow_ups.json")
    args = parser.parse_args()

    folder = JobFolder(args.job)
    settings = run_settings(folder.read_config(), "")
    toolbox = RunToolbox(Workspace.open(args.job, settings), settings)
    kept = [row["message"] for row in read_jsonl(folder.session)][:args.upto]
    question = folder.question()
    answer = next((m.get("content") or "" for m in reversed(kept) if m.get("role") == "assistant"), "")
    model = connect(settings)
    print(f"{args.job}: {args.upto} messages kept; model {model.model_id}, seed {settings.llm_seed}")
    print(f"the kept answer: {answer}\n")
    for item in read_json(args.candidates, []):
        messages = [{"role": "system", "content": run_system_prompt(settings, toolbox.schemas())}, *kept]
        last = answer
        for follow_up in [item] if isinstance(item, str) else item:
            cited = ", ".join(f"[{source_id}]" for source_id in cited_ids(last))
            text = follow_up.replace("{question}", question).replace("{answer}", last).replace("{cited}", cited)
            messages.append({"role": "user", "content": text})
            started = time.monotonic()
            reply = model.complete(messages, toolbox.schemas(), max_tokens=settings.max_output_tokens,
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
