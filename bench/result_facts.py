"""What a small model sees in one search: of the answer's must-facts, how many are in the text of a
`search_dataroom` result at a tool output limit (TOOL_OUTPUT_BYTES, the packaged 4096 unless given; k=8),
and how often a gold file is among the results. A fact the result does not show is a fact a budget-1 run
cannot answer from, however good the ranking was. Several limits give one row each, with the results shown
and the result's size: the ceiling that a run's accuracy buys with the tokens a bigger result costs.

    python bench/result_facts.py                           # every built-in question, asked as its own query
    python bench/result_facts.py --bytes 2048 4096 8192    # a row per limit
    python bench/result_facts.py --questions assets/pydocs_questions.jsonl --dataroom assets/pydocs_dataroom.zip
    python bench/result_facts.py --runs /tmp/sweeps        # also the queries real runs sent (session.jsonl)
    python bench/result_facts.py --set CHUNK_CONTEXT=false # with other knobs

Queries: the question itself, and (with --runs) each `search_dataroom` call found in the runs' sessions,
with the question of its job. Retrieval is the packaged preset (offline MiniLM), as the embedded default.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.cli.options import parse_overrides  # noqa: E402
from searchbox.assets import BUILTIN_DATAROOM, BUILTIN_QUESTIONS  # noqa: E402
from searchbox.evaluation.questions import load_questions  # noqa: E402
from searchbox.jobs.job import create_job  # noqa: E402
from searchbox.settings import Settings  # noqa: E402
from searchbox.tools.registry import REGISTRY  # noqa: E402
from searchbox.workspace import Workspace  # noqa: E402


def logged_queries(runs: Path, by_text: dict[str, dict]) -> list[tuple[dict, str]]:
    """(question, query) for every search_dataroom call in the sessions under `runs`."""
    found = []
    for session in sorted(runs.rglob("session.jsonl")):
        query_file = session.parent / "query.txt"
        question = by_text.get(query_file.read_text(encoding="utf-8").strip()) if query_file.exists() else None
        if question is None:
            continue
        for line in session.read_text(encoding="utf-8").splitlines():
            for call in (json.loads(line).get("message") or {}).get("tool_calls") or []:
                if call["function"]["name"] == "search_dataroom":
                    try:
                        found.append((question, json.loads(call["function"]["arguments"])["query"]))
                    except (ValueError, KeyError, TypeError):
                        continue
    return found


def visible(question: dict, result: dict) -> tuple[int, bool]:
    shown = " ".join(row["text"] for row in result.get("results", [])).lower()
    gold = any(row["path"].removeprefix("dataroom/") in question["gold_files"] for row in result.get("results", []))
    return sum(fact.lower() in shown for fact in question["must_facts"]), gold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, help="a folder of run job folders whose logged queries to replay")
    parser.add_argument("--bytes", type=int, nargs="+", default=[4096],
                        help="TOOL_OUTPUT_BYTES, one row each (default: the packaged 4096)")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--questions", type=Path, default=BUILTIN_QUESTIONS, help="question set JSONL")
    parser.add_argument("--dataroom", type=Path, default=BUILTIN_DATAROOM, help="a .zip or a folder")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="another knob (repeatable)")
    args = parser.parse_args()
    questions = [q for q in load_questions(args.questions) if q.get("must_facts")]
    cases = [(q, q["question"], "question") for q in questions]
    if args.runs:
        by_text = {q["question"]: q for q in questions}
        cases += [(q, query, "logged") for q, query in logged_queries(args.runs, by_text)]
    print(f"search_dataroom, k={args.k}, packaged retrieval, {args.questions.name} on {args.dataroom.name}")
    print("| queries | TOOL_OUTPUT_BYTES | n | results shown (mean) | result bytes (mean) | a gold file shown | "
          "must-facts shown | every must-fact shown |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for limit in args.bytes:
            settings = Settings.resolve({}, **{"retrieval_preset": "packaged", "tool_output_bytes": limit,
                                               **parse_overrides(args.set)})
            job_dir = Path(tmp) / f"job-{limit}"
            create_job(job_dir, questions[0]["question"], args.dataroom, settings)
            workspace = Workspace.open(job_dir, settings)
            totals: dict[str, list[int]] = {}
            for question, query, kind in cases:
                done = REGISTRY["search_dataroom"].run(workspace.tool_context(), {"query": query, "k": args.k})
                result = done.data or {}
                facts, gold = visible(question, result)
                row = totals.setdefault(kind, [0] * 7)
                for i, value in enumerate((1, gold, facts, len(question["must_facts"]),
                                           facts == len(question["must_facts"]), len(result.get("results", [])),
                                           len(done.text.encode()))):
                    row[i] += value
            for kind, (n, gold, facts, all_facts, complete, shown, size) in totals.items():
                print(f"| {kind} | {limit} | {n} | {shown / n:.1f} | {size / n:,.0f} | {gold / n:.0%} | "
                      f"{facts}/{all_facts} ({facts / all_facts:.0%}) | {complete / n:.0%} |", flush=True)


if __name__ == "__main__":
    main()
