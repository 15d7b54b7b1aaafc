"""What a small model sees in one search: of the answer's must-facts, how many are in the text of a
`search_dataroom` result at the packaged tool output limit (TOOL_OUTPUT_BYTES=4096, k=8), and how
often a gold file is among the results. A fact the result does not show is a fact a budget-1 run
cannot answer from, however good the ranking was.

    python bench/result_facts.py                           # every built-in question, asked as its own query
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

from searchbox.cli import parse_overrides  # noqa: E402
from searchbox.assets import BUILTIN_DATAROOM, BUILTIN_QUESTIONS  # noqa: E402
from searchbox.evaluation.questions import load_questions  # noqa: E402
from searchbox.jobs.job import create_job  # noqa: E402
from searchbox.settings import Settings  # noqa: E402
from searchbox.tools.registry import REGISTRY  # noqa: E402


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
    parser.add_argument("--bytes", type=int, default=4096, help="TOOL_OUTPUT_BYTES (default: the packaged 4096)")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="another knob (repeatable)")
    args = parser.parse_args()
    questions = [q for q in load_questions(BUILTIN_QUESTIONS) if q.get("must_facts")]
    cases = [(q, q["question"], "question") for q in questions]
    if args.runs:
        by_text = {q["question"]: q for q in questions}
        cases += [(q, query, "logged") for q, query in logged_queries(args.runs, by_text)]
    settings = Settings.resolve({}, **{"retrieval_preset": "packaged", "tool_output_bytes": args.bytes,
                                       **parse_overrides(args.set)})
    totals: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = create_job(Path(tmp) / "job", questions[0]["question"], BUILTIN_DATAROOM, settings)
        for question, query, kind in cases:
            context = workspace.tool_context()
            result = REGISTRY["search_dataroom"].run(context, {"query": query, "k": args.k}).data or {}
            facts, gold = visible(question, result)
            row = totals.setdefault(kind, [0, 0, 0, 0, 0])
            row[0] += 1
            row[1] += gold
            row[2] += facts
            row[3] += len(question["must_facts"])
            row[4] += facts == len(question["must_facts"])
    print(f"search_dataroom, k={args.k}, TOOL_OUTPUT_BYTES={args.bytes}, packaged retrieval")
    print("| queries | n | a gold file shown | must-facts shown | every must-fact shown |")
    print("|---|---:|---:|---:|---:|")
    for kind, (n, gold, facts, all_facts, complete) in totals.items():
        print(f"| {kind} | {n} | {gold / n:.0%} | {facts}/{all_facts} ({facts / all_facts:.0%}) | {complete / n:.0%} |")


if __name__ == "__main__":
    main()
