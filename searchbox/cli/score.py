"""python -m searchbox score: a finished run scored against its question's gold answer, into RUN_DIR/score.json."""

from __future__ import annotations

import argparse
from pathlib import Path

from searchbox.assets import BUILTIN_QUESTIONS
from searchbox.cli.judge import add_judge, connect_judge
from searchbox.cli.options import Subcommands
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings


def add_to(sub: Subcommands) -> None:
    parser = sub.add_parser("score", help="score a finished run against the gold answer of its question")
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run's job folder")
    parser.add_argument("--questions", default=str(BUILTIN_QUESTIONS), help="question set JSONL (default: the built-in one)")
    parser.add_argument("--id", required=True, help="the id of the run's question in the question set (e.g. q001)")
    add_judge(parser, "the answer")
    parser.set_defaults(func=run, loads_model=True)


def run(args: argparse.Namespace) -> int:
    """Score a finished run; the full record goes to RUN_DIR/score.json."""
    from searchbox.evaluation.questions import find_question, load_questions
    from searchbox.grading.score import format_score, score_run
    from searchbox.records.files import write_json

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"no run folder at {run_dir}")
    question = find_question(load_questions(Path(args.questions)), args.id)
    judge = connect_judge(args, Settings.resolve())
    try:
        score = score_run(run_dir, question, judge)
    finally:
        if judge is not None:
            judge.close()
    written = JobFolder(run_dir).score
    write_json(written, score)
    print(format_score(score))
    print(f"score written to {written}")
    return 0
