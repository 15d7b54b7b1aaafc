"""python -m searchbox run: a one-shot run of a question over a dataroom, its progress printed as it goes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from searchbox.agent.control import RunControl
from searchbox.assets import BUILTIN_DATAROOM
from searchbox.cli.options import Subcommands, add_set, parse_overrides
from searchbox.records.echoes import job_echoes
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings


def add_to(sub: Subcommands) -> None:
    parser = sub.add_parser("run", help="answer a question over a dataroom with the agent")
    parser.add_argument("question", help='the question, in quotes: "Who audited the FY2025 financial statements?"')
    parser.add_argument("--dataroom", help="a .zip or a folder (default: the built-in dataroom)")
    parser.add_argument("--budget", type=int, help="turn budget (TURN_BUDGET)")
    parser.add_argument("--force-budget", action="store_true", help="spend the whole budget (FORCE_BUDGET)")
    parser.add_argument("--out", help="the job folder to create (default: runs/<timestamp>)")
    parser.add_argument("--stream", action="store_true", help="print the model's text as it streams")
    add_set(parser, "for this run")
    parser.set_defaults(func=run, loads_model=True)


def run(args: argparse.Namespace) -> int:
    """A one-shot run: the question over the dataroom, records and ANSWER.md in --out. The job is laid out and
    run as the app and sweeps do it (create_job, then connect_and_run); the progress printer is the run's listener."""
    import time

    from searchbox.agent.pi.install import pi_problem
    from searchbox.agent.run import connect_and_run
    from searchbox.jobs.job import create_job
    from searchbox.progress import ProgressPrinter

    overrides = parse_overrides(args.set)
    overrides["turn_budget"] = args.budget if args.budget is not None else overrides.get("turn_budget")
    if args.force_budget:
        overrides["force_budget"] = True
    settings = Settings.resolve(**overrides)
    if settings.harness == "pi" and (problem := pi_problem()):  # at once, before a job folder exists
        print(f"error: {problem}", file=sys.stderr)
        return 2
    job_dir = Path(args.out) if args.out else Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    source = Path(args.dataroom) if args.dataroom else BUILTIN_DATAROOM
    create_job(job_dir, args.question, source, settings)
    print(f"job folder: {job_dir}")
    control = RunControl()
    with ctrl_c_stops(control):
        reason = connect_and_run(job_dir, settings, control, [ProgressPrinter(sys.stdout, stream_text=args.stream)])
    return 0 if summarize_run(job_dir, reason, settings.turn_budget) else 1


def summarize_run(job_dir: Path, reason: str | None = None, budget: int | None = None) -> bool:
    """Print a finished run's stop, tokens, tools, citations and answer from its records; True when it is done."""
    folder = JobFolder(job_dir)
    meta, answer = folder.read_meta(), folder.read_answer()
    tokens = meta.get("tokens", {})
    tools = ", ".join(f"{k} {v}" for k, v in sorted(meta.get("tool_counts", {}).items())) or "none"
    citations = meta.get("citations", {})
    print(f"\nstop reason: {reason or meta.get('stop_reason')}; turns {meta.get('turns')}/{budget or meta.get('budget')}; "
          f"tokens {tokens.get('input', 0):,} in / {tokens.get('output', 0):,} out; tool calls: {tools}")
    print(f"citations: {citations.get('valid', 0)} valid, {citations.get('invalid', 0)} invalid; checked against "
          f"their sources: {citations.get('supported', 0)} supported, {citations.get('contradicted', 0)} contradicted, "
          f"{citations.get('unsupported', 0)} unsupported, "
          f"{citations.get('unchecked', 0)} unchecked")
    if answer.problem:  # what stood at ANSWER.md, never what a link named
        print(f"no answer: work/{answer.problem}")
    elif answer.exists:
        print(f"answer ({folder.answer}):\n{job_echoes(answer.text, job_dir).shown[:2000]}")
    return bool(meta.get("done"))


@contextmanager
def ctrl_c_stops(control: RunControl) -> Iterator[None]:
    """The first Ctrl-C stops the run as Stop does in the app: the running tool is cut and the records
    are left whole (stop reason `interrupted`). A second one quits at once."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        if control.requested:
            raise KeyboardInterrupt
        print("\nstopping: the running tool is cut and the records kept (Ctrl-C again quits at once)",
              file=sys.stderr, flush=True)
        control.request("interrupted")

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
