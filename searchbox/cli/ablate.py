"""python -m searchbox ablate: an ablation sweep, matrix entries x questions x repeats, resumable."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from searchbox.assets import BUILTIN_DATAROOM, BUILTIN_QUESTIONS
from searchbox.cli.judge import add_judge, connect_judge
from searchbox.cli.options import Subcommands, add_set, parse_overrides
from searchbox.settings import Settings

CLEAR_LINE = "\r\x1b[K"  # back to the line's start and blank it: the status line is rewritten in place


def add_to(sub: Subcommands) -> None:
    parser = sub.add_parser("ablate", help="ablation sweep: matrix entries x questions -> results.jsonl and a summary")
    parser.add_argument("--matrix", help="matrix JSON (default: assets/ablation_matrix.json)")
    parser.add_argument("--questions", default=str(BUILTIN_QUESTIONS), help="question set JSONL (default: the built-in one)")
    parser.add_argument("--dataroom", help="a .zip or a folder (default: the built-in dataroom)")
    parser.add_argument("--out", required=True, help="sweep folder (results.jsonl, summary.json, runs/); reuse it to resume")
    parser.add_argument("--endpoints", help="url1[=slots],url2[=slots] or @FILE (one url[=slots] a line): OpenAI-compatible "
                        "endpoints, each given at most its slots of runs at once (default 1; llama-server --parallel N "
                        "has N) (default: LLAMA_URL or the built-in model, one run at a time per machine)")
    parser.add_argument("--engine", choices=("thread", "ray"), default="thread",
                        help="thread: every run in this process; ray: each run a task on a Ray cluster (docs/sweeps.md)")
    parser.add_argument("--ray-address", help="the Ray cluster to use (default: RAY_ADDRESS, else a local cluster "
                        "started for the sweep)")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--ids", help="only these question ids (comma-separated)")
    parser.add_argument("--per-type", type=int, help="only the first N questions of each type")
    parser.add_argument("--query", help="sweep one ad-hoc question instead of a question set: behaviour only "
                        "(tools, tokens, time, citations), no accuracy")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per entry and question, repeat k with sampling seed LLM_SEED+k-1 (LLM_SEED unset: k); "
                        "reports give 95%% intervals and paired tests")
    add_judge(parser, "every answer (summary.json: its agreement with the lexical verdicts)")
    add_set(parser, "for every run of the sweep")
    parser.set_defaults(func=run, loads_model=True)


def run(args: argparse.Namespace) -> int:
    """An ablation sweep: every matrix entry over the chosen questions (or one ad-hoc --query), each
    --repeats times; run it again to resume."""
    from searchbox.evaluation.files import SUMMARY
    from searchbox.evaluation.matrix import DEFAULT_MATRIX_PATH, load_matrix
    from searchbox.evaluation.sweep import SweepStatus, run_sweep
    from searchbox.evaluation.sweep_rows import adhoc_question, select_questions
    from searchbox.evaluation.sweep_summary import format_summary
    from searchbox.evaluation.questions import load_questions
    from searchbox.llm.endpoints import parse_endpoints
    from searchbox.records.files import read_json

    if args.repeats < 1:
        raise ValueError("--repeats must be at least 1")
    matrix = load_matrix(Path(args.matrix) if args.matrix else DEFAULT_MATRIX_PATH)
    ids = [i.strip() for i in args.ids.split(",") if i.strip()] if args.ids else None
    if args.query is not None:
        if ids or args.per_type is not None or args.limit is not None:
            raise ValueError("--query runs one ad-hoc question: leave out --ids, --per-type and --limit")
        questions = [adhoc_question(args.query)]
    else:
        questions = select_questions(load_questions(Path(args.questions)), ids, args.per_type, args.limit)
    endpoints = parse_endpoints(args.endpoints) if args.endpoints else None
    if args.ray_address and args.engine != "ray":
        raise ValueError("--ray-address is for --engine ray")
    base = Settings.resolve(**parse_overrides(args.set))
    source = Path(args.dataroom) if args.dataroom else BUILTIN_DATAROOM
    out = Path(args.out)
    where = (f"{len(endpoints)} endpoint(s), {sum(e.slots for e in endpoints)} slot(s)" if endpoints else
             "LLAMA_URL or the built-in model, one run at a time per machine")
    what = "1 ad-hoc question (behaviour only, no accuracy)" if args.query is not None else f"{len(questions)} questions"
    print(f"sweep: {len(matrix)} entries x {what} x {args.repeats} repeat(s) into {out}, on {where} "
          f"({args.engine} engine)", flush=True)
    live = sys.stdout.isatty()  # a terminal gets one status line, rewritten; a log gets it after each row

    def progress(row: dict, done: int, total: int) -> None:
        verdict = row["score"]["verdict"] or "no gold answer"
        judged = f", judge: {row['judge']['verdict']}" if row.get("judge") else ""
        where = f" on {row['node']}" if args.engine == "ray" else ""
        print(f"{CLEAR_LINE if live else ''}[{done}/{total}] {row['entry']} {row['question_id']} r{row['repeat']} "
              f"(seed {row['seed']}){where}: {verdict}{judged}, {row['turns']} turn(s), "
              f"{row['tokens']['total']:,} tokens, {row['wall_s'] or 0:.1f}s ({row['stop_reason']})", flush=True)

    def status(state: SweepStatus) -> None:
        print(f"{CLEAR_LINE}{state.line()}" if live else f"  {state.line()}", end="" if live else "\n", flush=True)

    engine = None
    if args.engine == "ray":
        from searchbox.evaluation.sweep_ray import RayEngine

        engine = RayEngine(args.ray_address or os.environ.get("RAY_ADDRESS") or None, on_note=print, folder=out)
    judge = connect_judge(args, base)
    try:
        results = run_sweep(matrix, questions, source, out, base, endpoints=endpoints, progress=progress,
                            repeats=args.repeats, judge=judge, engine=engine, status=status)
    except KeyboardInterrupt:
        print("\ninterrupted: run the same command again to resume the sweep", file=sys.stderr)
        return 130
    finally:
        if live:
            print()
        if judge is not None and (args.judge_url or base.llama_url):  # a loaded llama.cpp model is kept for later runs
            judge.close()
    print(format_summary(read_json(out / SUMMARY)))
    print(f"results: {results}; summary: {out / SUMMARY}")
    return 0
