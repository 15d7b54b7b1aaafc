"""python -m searchbox retrieval-eval: gold-file recall of grep, BM25, dense, hybrid and dense + rerank; no LLM."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from searchbox.assets import BUILTIN_QUESTIONS
from searchbox.cli.options import Subcommands, add_dataroom_command, job_workspace, parse_overrides


def add_to(sub: Subcommands) -> None:
    parser = add_dataroom_command(sub, "retrieval-eval", "gold-file recall of grep, BM25, dense, hybrid, dense+rerank")
    parser.add_argument("--questions", default=str(BUILTIN_QUESTIONS), help="question set (JSONL, design §4)")
    parser.add_argument("--out", required=True, help="folder for retrieval.json")
    parser.add_argument("--methods", help="comma-separated subset of grep,bm25,dense,hybrid,dense+rerank (default: all); "
                                          "grep,bm25 needs no model, which a large dataroom's dense pass does; dense embeds the whole "
                                          "room unless DENSE_PREFILTER is set")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Gold-file recall of grep, BM25, dense, hybrid and dense + rerank; no LLM involved."""
    from searchbox.evaluation.questions import load_questions
    from searchbox.evaluation.retrieval_eval import METHODS, evaluate, format_table, whole_room_dense
    from searchbox.records.files import write_json

    methods = tuple(m.strip() for m in args.methods.split(",")) if args.methods else METHODS
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        print(f"error: --methods takes a comma-separated subset of {','.join(METHODS)}; got {args.methods!r}",
              file=sys.stderr)
        return 2
    questions = load_questions(Path(args.questions))
    with job_workspace(args, overrides=whole_room_dense(parse_overrides(args.set), os.environ)) as workspace:
        result = evaluate(workspace.engine, questions, methods)
        result["config"] = workspace.settings.as_config()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "retrieval.json", result)
    print(f"{result['questions']} questions; gold-file recall@k (R@5 by question type):\n{format_table(result)}")
    print(f"written to {out / 'retrieval.json'}")
    return 0
