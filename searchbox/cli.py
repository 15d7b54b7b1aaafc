"""Command line: python -m searchbox run | tool | ingest | precompute | retrieval-eval | score | ablate | report | conformance | knobs | doctor.

Every command that takes a dataroom exits with status 2 and a plain message when the dataroom is
refused; a tool that fails prints its error result and exits with status 1. What the commands print
quotes the model and the documents (answers, tool results, paths): it reaches the terminal without
terminal control codes (searchbox.inert.terminal), so none of it can rewrite, hide or retitle what
the terminal shows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from searchbox import inert
from searchbox.agent.control import RunControl
from searchbox.assets import BUILTIN_DATAROOM, BUILTIN_QUESTIONS
from searchbox.dataroom.unpack import DataroomError
from searchbox.llm.types import ChatModel
from searchbox.records.echoes import job_echoes
from searchbox.records.job_folder import JobFolder
from searchbox.retrieval.interfaces import ModelLoadError
from searchbox.settings import Settings, SettingsError, knob_docs, knobs_markdown
from searchbox.workspace import Workspace


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SettingsError(f"--set takes KNOB=VALUE, got {pair!r}")
        overrides[name.strip().lower()] = value
    return overrides


@contextmanager
def _workspace(args: argparse.Namespace, *, retrieval: bool = True) -> Iterator[Workspace]:
    """The job folder given with --job (reused when it already holds a dataroom), else a temporary one;
    with `retrieval`, fitted to the retrieval models this machine can load (saying what changed)."""
    from searchbox.retrieval.availability import fit_retrieval

    settings = Settings.resolve(**parse_overrides(args.set))
    if retrieval:
        settings, notes = fit_retrieval(settings)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    source = Path(args.dataroom) if args.dataroom else BUILTIN_DATAROOM
    if args.job:
        job = Path(args.job)
        if JobFolder(job).dataroom.exists():
            yield Workspace.open(job, settings)
        else:
            yield Workspace.create(job, source, settings)
        return
    with tempfile.TemporaryDirectory(prefix="searchbox-") as tmp:
        yield Workspace.create(Path(tmp), source, settings)


def cmd_run(args: argparse.Namespace) -> int:
    """A one-shot run: the question over the dataroom, records and ANSWER.md in --out."""
    import time

    from searchbox.agent.pi.install import pi_problem
    from searchbox.agent.run import run_job
    from searchbox.jobs.job import create_job
    from searchbox.llm.connect import connect_for_run
    from searchbox.progress import ProgressPrinter

    overrides = parse_overrides(args.set)
    overrides["turn_budget"] = args.budget if args.budget is not None else overrides.get("turn_budget")
    if args.force_budget:
        overrides["force_budget"] = True
    settings = Settings.resolve(**overrides)
    if settings.harness == "pi" and (problem := pi_problem()):  # at once, not after loading the model
        print(f"error: {problem}", file=sys.stderr)
        return 2
    job_dir = Path(args.out) if args.out else Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    source = Path(args.dataroom) if args.dataroom else BUILTIN_DATAROOM
    create_job(job_dir, args.question, source, settings)
    print(f"job folder: {job_dir}")
    printer = ProgressPrinter(sys.stdout, stream_text=args.stream)
    connection = connect_for_run(settings, on_note=lambda note: print(f"note: {note}"))
    model, settings = connection.model, connection.settings  # limits fitted to the model that runs
    control = RunControl()
    try:
        with _ctrl_c_stops(control):
            reason = run_job(job_dir, settings, model, [printer], control, connection.auto)
    finally:
        model.close()
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
def _ctrl_c_stops(control: RunControl) -> Iterator[None]:
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


def cmd_tool(args: argparse.Namespace) -> int:
    """One call of any tool, built-in or catalog, as a run makes it (bash at the BASH_SANDBOX level, or
    refused with the reason when there is none); prints the result as JSON, exits 1 on an error result."""
    import time

    from searchbox.agent.toolbox import RunToolbox
    from searchbox.tools.catalog import CATALOG_TOOLS

    try:
        raw_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"--args must be a JSON object: {exc}") from None
    with _workspace(args, retrieval=any(tool.name == args.name for tool in CATALOG_TOOLS)) as workspace:
        toolbox = RunToolbox(workspace, workspace.settings, every_catalog_tool=True)
        for note in toolbox.notes:
            print(f"note: {note}", file=sys.stderr)
        started = time.perf_counter()
        output = toolbox.call(args.name, raw_args, None)
        record = {**output.record(), "elapsed_ms": round((time.perf_counter() - started) * 1000, 1)}
        if args.name == "bash":
            record["sandbox"] = toolbox.sandbox_level.record()
        if args.job:
            workspace.save_ledger()
    print(json.dumps(record, indent=2, ensure_ascii=False))
    return 1 if output.is_error else 0


def cmd_ingest(args: argparse.Namespace) -> int:
    with _workspace(args, retrieval=False) as workspace:
        corpus = workspace.corpus
    statuses = corpus.statuses()
    if args.json:
        print(json.dumps(statuses, indent=2))
        return 0
    for row in statuses:
        reason = f"  ({row['reason']})" if row["reason"] else ""
        print(f"{row['status']:<8} {row['chunks']:>5} chunks {row['chars']:>9} chars  {row['path']}{reason}")
    ok = sum(r["status"] == "ok" for r in statuses)
    print(f"{ok} of {len(statuses)} files read, {len(corpus.chunks)} chunks")
    return 0


def cmd_precompute(args: argparse.Namespace) -> int:
    """Embed every chunk of a dataroom into a vector file that later runs read as a seed cache."""
    from searchbox.retrieval.cache import EmbeddingCache
    from searchbox.retrieval.encoder import Encoder
    from searchbox.retrieval.engine import RetrievalEngine
    from searchbox.retrieval.models import embedding_cache_name, load_embedder

    with _workspace(args) as workspace:
        corpus, settings = workspace.corpus, workspace.settings
        encoder = Encoder(embedding_cache_name(settings), lambda: load_embedder(settings), EmbeddingCache(Path(args.out)))
        engine = RetrievalEngine(corpus, settings, encoder)  # its index text is what searches embed
        encoder.encode([engine.index_text(i) for i in range(len(corpus.chunks))], "passage")
        encoder.cache.close()
    print(f"{len(corpus.chunks)} chunks of {len(corpus.files)} files embedded with {encoder.model_name} into {args.out}")
    return 0


def cmd_knobs(args: argparse.Namespace) -> int:
    if args.markdown:
        print(knobs_markdown(), end="")
        return 0
    for k in knob_docs():
        choices = f" [{' | '.join(k['choices'])}]" if k["choices"] else ""
        print(f"{k['name']:<20} default {k['default']!r}{choices}\n    {k['help']}")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
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


def connect_judge(args: argparse.Namespace, base: Settings) -> ChatModel | None:
    """The judge --judge asks for: the endpoint --judge-url names (a strong model, apart from the runs'),
    else the configured model (LLAMA_URL, or the built-in runtime: the packaged model offline)."""
    from searchbox.llm.connect import connect

    if not (args.judge or args.judge_url):
        return None
    settings = base.with_overrides(llama_url=args.judge_url, model_id=args.judge_model or "") if args.judge_url else base
    return connect(settings, on_note=lambda note: print(f"note: {note}"))


def add_judge(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--judge", action="store_true",
                        help=f"also have a model grade {what}: the configured one (LLAMA_URL, else LLM_GGUF), or "
                        "--judge-url's; its prompt and raw reply are kept in score.json, and each score names its grader")
    parser.add_argument("--judge-url", help="the judge's OpenAI-compatible endpoint (implies --judge)")
    parser.add_argument("--judge-model", help="the model id sent to --judge-url")


def cmd_retrieval_eval(args: argparse.Namespace) -> int:
    """Gold-file recall of grep, BM25, dense, hybrid and dense + rerank; no LLM involved."""
    from searchbox.evaluation.questions import load_questions
    from searchbox.evaluation.retrieval_eval import evaluate, format_table
    from searchbox.records.files import write_json

    questions = load_questions(Path(args.questions))
    with _workspace(args) as workspace:
        result = evaluate(workspace.engine, questions)
        result["config"] = workspace.settings.as_config()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "retrieval.json", result)
    print(f"{result['questions']} questions; gold-file recall@k (R@5 by question type):\n{format_table(result)}")
    print(f"written to {out / 'retrieval.json'}")
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    """An ablation sweep: every matrix entry over the chosen questions (or one ad-hoc --query), each
    --repeats times; run it again to resume."""
    from searchbox.evaluation.files import SUMMARY
    from searchbox.evaluation.matrix import DEFAULT_MATRIX_PATH, load_matrix
    from searchbox.evaluation.sweep import SweepStatus, run_sweep
    from searchbox.evaluation.sweep_rows import adhoc_question, select_questions
    from searchbox.evaluation.sweep_summary import format_summary
    from searchbox.evaluation.questions import load_questions
    from searchbox.llm.pool import parse_endpoints
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


def cmd_report(args: argparse.Namespace) -> int:
    """A sweep's (or retrieval evaluation's) report: FOLDER/report.html and a PNG per chart in FOLDER/charts."""
    from searchbox.evaluation.report import write_report

    page = write_report(Path(args.folder), on_note=print, pool_harnesses=args.pool_harnesses)
    print(f"report written to {page}")
    return 0


def cmd_conformance(args: argparse.Namespace) -> int:
    """Tool-call conformance of one or more models on the fixed probe situations; a table per model."""
    from searchbox.evaluation.conformance import check_models, format_table, model_settings
    from searchbox.evaluation.probes import DEFAULT_PROBES, load_probes
    from searchbox.records.files import write_json

    if args.repeat < 1:
        raise ValueError("--repeat must be at least 1")
    base = Settings.resolve(**parse_overrides(args.set))
    probes = load_probes(Path(args.probes) if args.probes else DEFAULT_PROBES)
    reports = check_models(model_settings(base, args.model), probes, repeat=args.repeat)
    if args.out:
        write_json(Path(args.out), {"repeat": args.repeat, "models": [r.as_dict() for r in reports]})
    print("\n" + format_table(reports, markdown=args.markdown))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """What this machine gives the app (GPU, llama.cpp offload, sandbox level, models at hand, disk);
    a notice when a GPU is present and unused."""
    from searchbox.doctor import gather, rows

    report = gather(Settings.resolve(**parse_overrides(args.set)))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0
    lines = rows(report)
    width = max(len(topic) for topic, _ in lines)
    for topic, value in lines:
        print(f"{topic:<{width}}  {value}")
    for notice in report.notices:
        print(f"\n!!! {notice}", file=sys.stderr)
    return 0


CLEAR_LINE = "\r\x1b[K"  # back to the line's start and blank it: the status line is rewritten in place
SET_HELP = "override a knob ({scope}); repeatable; `python -m searchbox knobs` lists every knob and its default"


def add_set(parser: argparse.ArgumentParser, scope: str) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help=SET_HELP.format(scope=scope))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m searchbox", description="Agentic search over a dataroom.")
    sub = parser.add_subparsers(dest="command", required=True)

    def dataroom_command(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.add_argument("--dataroom", help="a .zip or a folder (default: the built-in dataroom)")
        p.add_argument("--job", help="job folder to reuse (default: a temporary one)")
        add_set(p, "for this command")
        return p

    run = sub.add_parser("run", help="answer a question over a dataroom with the agent")
    run.add_argument("question", help='the question, in quotes: "Who audited the FY2025 financial statements?"')
    run.add_argument("--dataroom", help="a .zip or a folder (default: the built-in dataroom)")
    run.add_argument("--budget", type=int, help="turn budget (TURN_BUDGET)")
    run.add_argument("--force-budget", action="store_true", help="spend the whole budget (FORCE_BUDGET)")
    run.add_argument("--out", help="the job folder to create (default: runs/<timestamp>)")
    run.add_argument("--stream", action="store_true", help="print the model's text as it streams")
    add_set(run, "for this run")
    run.set_defaults(func=cmd_run)

    tool = dataroom_command("tool", "run one tool, built-in or catalog (bash at the BASH_SANDBOX level), and print "
                                    "its result as JSON: output (what the model sees), is_error, details, result")
    tool.add_argument("name")
    tool.add_argument("--args", default="{}", help="the tool's arguments as a JSON object")
    tool.set_defaults(func=cmd_tool)

    ingest = dataroom_command("ingest", "unpack and extract a dataroom; list each file's status")
    ingest.add_argument("--json", action="store_true")
    ingest.set_defaults(func=cmd_ingest)

    pre = dataroom_command("precompute", "embed a dataroom's chunks into a reusable vector file")
    pre.add_argument("--out", required=True)
    pre.set_defaults(func=cmd_precompute)

    knobs = sub.add_parser("knobs", help="list every knob with its default")
    knobs.add_argument("--markdown", action="store_true", help="as docs/knobs.md, the knob reference page")
    knobs.set_defaults(func=cmd_knobs)

    score = sub.add_parser("score", help="score a finished run against the gold answer of its question")
    score.add_argument("run_dir", metavar="RUN_DIR", help="the run's job folder")
    score.add_argument("--questions", default=str(BUILTIN_QUESTIONS), help="question set JSONL (default: the built-in one)")
    score.add_argument("--id", required=True, help="the id of the run's question in the question set (e.g. q001)")
    add_judge(score, "the answer")
    score.set_defaults(func=cmd_score)
    evaluation = dataroom_command("retrieval-eval", "gold-file recall of grep, BM25, dense, hybrid, dense+rerank")
    evaluation.add_argument("--questions", default=str(BUILTIN_QUESTIONS), help="question set (JSONL, design §4)")
    evaluation.add_argument("--out", required=True, help="folder for retrieval.json")
    evaluation.set_defaults(func=cmd_retrieval_eval)
    ablate = sub.add_parser("ablate", help="ablation sweep: matrix entries x questions -> results.jsonl and a summary")
    ablate.add_argument("--matrix", help="matrix JSON (default: assets/ablation_matrix.json)")
    ablate.add_argument("--questions", default=str(BUILTIN_QUESTIONS), help="question set JSONL (default: the built-in one)")
    ablate.add_argument("--dataroom", help="a .zip or a folder (default: the built-in dataroom)")
    ablate.add_argument("--out", required=True, help="sweep folder (results.jsonl, summary.json, runs/); reuse it to resume")
    ablate.add_argument("--endpoints", help="url1[=slots],url2[=slots] or @FILE (one url[=slots] a line): OpenAI-compatible "
                        "endpoints, each given at most its slots of runs at once (default 1; llama-server --parallel N "
                        "has N) (default: LLAMA_URL or the built-in model, one run at a time per machine)")
    ablate.add_argument("--engine", choices=("thread", "ray"), default="thread",
                        help="thread: every run in this process; ray: each run a task on a Ray cluster (docs/sweeps.md)")
    ablate.add_argument("--ray-address", help="the Ray cluster to use (default: RAY_ADDRESS, else a local cluster "
                        "started for the sweep)")
    ablate.add_argument("--limit", type=int, help="only the first N questions")
    ablate.add_argument("--ids", help="only these question ids (comma-separated)")
    ablate.add_argument("--per-type", type=int, help="only the first N questions of each type")
    ablate.add_argument("--query", help="sweep one ad-hoc question instead of a question set: behaviour only "
                        "(tools, tokens, time, citations), no accuracy")
    ablate.add_argument("--repeats", type=int, default=1,
                        help="runs per entry and question, repeat k with sampling seed LLM_SEED+k-1 (LLM_SEED unset: k); "
                        "reports give 95%% intervals and paired tests")
    add_judge(ablate, "every answer (summary.json: its agreement with the lexical verdicts)")
    add_set(ablate, "for every run of the sweep")
    ablate.set_defaults(func=cmd_ablate)
    report = sub.add_parser("report", help="an HTML report with charts (and PNGs) of a sweep or retrieval-eval folder")
    report.add_argument("folder", metavar="FOLDER", help="a folder with results.jsonl (ablate) and/or retrieval.json (retrieval-eval)")
    report.add_argument("--pool-harnesses", action="store_true",
                        help="pool an entry's runs of different harnesses (version, commit, assists, parser): "
                             "by default each is reported apart")
    report.set_defaults(func=cmd_report)
    conformance = sub.add_parser("conformance", help="tool-call conformance of models on fixed situations of the agent loop")
    conformance.add_argument("--model", action="append", default=[], metavar="SPEC",
                             help="a model to check: an LLM_GGUF value, or an endpoint URL (LLAMA_URL); repeatable "
                                  "(default: the model the settings name)")
    conformance.add_argument("--repeat", type=int, default=1, help="ask each probe N times")
    conformance.add_argument("--probes", help="probe file (default: searchbox/evaluation/conformance_probes.json)")
    conformance.add_argument("--out", help="write every response and its scores to this JSON file")
    conformance.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    add_set(conformance, "for every model checked")
    conformance.set_defaults(func=cmd_conformance)
    doctor = sub.add_parser("doctor", help="what this machine gives the app: GPU, llama.cpp offload, sandbox, models, disk")
    doctor.add_argument("--json", action="store_true", help="the report as JSON")
    add_set(doctor, "for the report")
    doctor.set_defaults(func=cmd_doctor)
    return parser


class TerminalText:
    """A text stream that passes on what is written to it without terminal control codes."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(inert.terminal(text))
        return len(text)

    def __getattr__(self, name: str) -> object:  # flush, isatty, encoding, ...: the stream's own
        return getattr(self.stream, name)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalText(out), TerminalText(err)  # type: ignore[assignment]
    try:
        return args.func(args)
    except (DataroomError, SettingsError, ModelLoadError, FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        sys.stdout, sys.stderr = out, err
