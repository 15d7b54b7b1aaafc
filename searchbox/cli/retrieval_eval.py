"""python -m searchbox retrieval-eval: gold-file recall of grep, BM25, dense, hybrid and dense + rerank; no LLM."""

from __future__ import annotations

import argparse
from pathlib import Path

from searchbox.assets import BUILTIN_QUESTIONS
from searchbox.cli.options import Subcommands, add_dataroom_command, job_workspace


def add_to(sub: Subcommands) -> None:
    parser = add_dataroom_command(sub, "retrieval-eval", "gold-file recall of grep, BM25, dense, hybrid, dense+rerank")
    parser.add_argument("--questions", default=str(BUILTIN_QUESTIONS), help="question set (JSONL, design §4)")
    parser.add_argument("--out", required=True, help="folder for retrieval.json")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Gold-file recall of grep, BM25, dense, hybrid and dense + rerank; no LLM involved."""
    from searchbox.evaluation.questions import load_questions
    from searchbox.evaluation.retrieval_eval import evaluate, format_table
    from searchbox.records.files import write_json

    questions = load_questions(Path(args.questions))
    with job_workspace(args) as workspace:
        result = evaluate(workspace.engine, questions)
        result["config"] = workspace.settings.as_config()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "retrieval.json", result)
    print(f"{result['questions']} questions; gold-file recall@k (R@5 by question type):\n{format_table(result)}")
    print(f"written to {out / 'retrieval.json'}")
    return 0
