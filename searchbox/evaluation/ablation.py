"""An ablation sweep (SPEC 3 CLI, 4): every matrix entry × every question is one real run in its own
job folder, scored, and one row of results.jsonl.

<out>/runs/<entry>/<question id>/   the job folders
<out>/results.jsonl                 one row per finished run, matrix order then question order
<out>/summary.json                  per entry: verdicts, accuracy, means, the most used tools
<out>/sweep.json                    the matrix, question ids, base knobs, start, end, wall seconds

Resuming: the same sweep started again into the same folder skips each (entry, question) that has a
row, or whose job folder holds a finished run (the row is rebuilt from its records). An unfinished
job folder that stopped cleanly (paused / interrupted: its records are whole) resumes from its
session; one cut off mid-run (a kill: run_meta.json shows no stop, the lost part's counters are
gone) is removed and run afresh, so every row measures one whole run.

Workers: one thread per endpoint, one run at a time each; with no endpoints a single worker uses the
base settings' model (the built-in runtime has one model slot). Ctrl-C asks the running runs to
stop cleanly ("interrupted"), which leaves them resumable.
"""

from __future__ import annotations

import datetime as dt
import json
import queue
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchbox.agent.control import RunControl
from searchbox.agent.run import connect_and_run
from searchbox.dataroom.unpack import DataroomError
from searchbox.evaluation.files import RESULTS, SUMMARY, SWEEP, VERDICT_POINTS
from searchbox.evaluation.matrix import SAFE_NAME, MatrixEntry, MatrixError
from searchbox.evaluation.scoring import score_run
from searchbox.jobs.job import create_job, stop_reason_of
from searchbox.jobs.scheduler import RunFn
from searchbox.records.files import append_jsonl, read_json, read_jsonl, write_json, write_text_atomic
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings

TOKEN_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "total")
_RESUMABLE = frozenset({"paused", "interrupted"})  # clean stops: whole records, a session to resume
Progress = Callable[[dict[str, Any], int, int], None]  # (new row, rows done, rows in the sweep)
Question = dict[str, Any]
Key = tuple[str, str]


def run_sweep(matrix: list[MatrixEntry], questions: list[Question], dataroom: Path, out: Path, base: Settings,
              run_fn: RunFn = connect_and_run, endpoints: list[str] | None = None,
              progress: Progress | None = None) -> Path:
    """Run (or resume) the sweep; returns <out>/results.jsonl. KeyboardInterrupt leaves it resumable."""
    settings = {entry.name: entry.settings(base) for entry in matrix}  # every entry checked before any run
    for question in questions:
        if not SAFE_NAME.match(question["id"]):
            raise ValueError(f"question id {question['id']!r} cannot name a job folder")
    out.mkdir(parents=True, exist_ok=True)
    _check_same_sweep(out, matrix, base)
    started = time.time()
    meta = {"matrix": {"entries": [{"name": e.name, "overrides": e.knobs()} for e in matrix]},
            "question_ids": [q["id"] for q in questions], "dataroom": str(dataroom), "endpoints": endpoints or [],
            "base_config": base.as_config(), "started_at": _iso(started), "ended_at": None, "wall_s": None}
    write_json(out / SWEEP, meta)

    pairs = [(entry, question) for entry in matrix for question in questions]
    rows = _completed_rows(out, pairs)
    _write_rows(out, pairs, rows)  # canonical order; also drops a line torn by a kill
    sweep = _Sweep(out, dataroom, settings, run_fn, rows, len(pairs), progress)
    sweep.run([p for p in pairs if _key(*p) not in rows], endpoints or [None])

    _write_rows(out, pairs, rows)
    ordered = [rows[_key(*p)] for p in pairs if _key(*p) in rows]
    write_json(out / SUMMARY, summarize(ordered, [e.name for e in matrix]))
    ended = time.time()
    write_json(out / SWEEP, {**meta, "ended_at": _iso(ended), "wall_s": round(ended - started, 3),
                             "runs": len(pairs), "completed": len(ordered)})
    return out / RESULTS


class _Sweep:
    """The pending runs, the workers that take them, and what a stop must reach."""

    def __init__(self, out: Path, dataroom: Path, settings: dict[str, Settings], run_fn: RunFn,
                 rows: dict[Key, dict[str, Any]], total: int, progress: Progress | None) -> None:
        self.out, self.dataroom, self.settings, self.run_fn = out, dataroom, settings, run_fn
        self.rows, self.total, self.progress = rows, total, progress
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.controls: set[RunControl] = set()
        self.failure: BaseException | None = None

    def run(self, pending: list[tuple[MatrixEntry, Question]], endpoints: list[str | None]) -> None:
        tasks: queue.SimpleQueue[tuple[MatrixEntry, Question]] = queue.SimpleQueue()
        for task in pending:
            tasks.put(task)
        # Workers report their end on an Event: on 3.11 a Thread.join that Ctrl-C interrupts marks a
        # still-running thread as stopped (bpo-45274), and the process would exit mid-run.
        ended = [threading.Event() for _ in endpoints]
        for n, endpoint in enumerate(endpoints):
            worker = threading.Thread(target=self._work, args=(tasks, endpoint, ended[n]), name=f"sweep-{n}")
            worker.daemon = True
            worker.start()
        try:
            _wait(ended)
        except KeyboardInterrupt:
            self._stop()
            _wait(ended)
            raise
        if self.failure is not None:
            raise self.failure

    def _work(self, tasks: queue.SimpleQueue[tuple[MatrixEntry, Question]], endpoint: str | None,
              ended: threading.Event) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    entry, question = tasks.get_nowait()
                except queue.Empty:
                    return
                try:
                    self._run_one(entry, question, endpoint)
                except BaseException as exc:  # a crash (or a simulated kill) ends the whole sweep, resumably
                    with self.lock:
                        self.failure = self.failure or exc
                    self._stop()
                    return
        finally:
            ended.set()

    def _stop(self) -> None:
        self.stopping.set()
        with self.lock:
            for control in self.controls:
                control.request("interrupted")

    def _run_one(self, entry: MatrixEntry, question: Question, endpoint: str | None) -> None:
        job_dir = self.out / "runs" / entry.name / question["id"]
        settings = self.settings[entry.name]
        if endpoint is not None:  # the pool decides where a run goes, whatever LLAMA_URL says
            settings = settings.with_overrides(llama_url=endpoint)
        if stop_reason_of(job_dir) not in _RESUMABLE:
            _fresh_job(job_dir, question, self.dataroom, settings)
        control = RunControl()
        with self.lock:
            if self.stopping.is_set():
                return
            self.controls.add(control)
        try:
            self.run_fn(job_dir, settings, control, [])
        finally:
            with self.lock:
                self.controls.discard(control)
        if not _finished(job_dir):  # stopped for the sweep's own stop: resumed next time
            return
        row = build_row(entry, question, job_dir, self.out)
        with self.lock:
            self.rows[_key(entry, question)] = row
            append_jsonl(self.out / RESULTS, row)
            done = len(self.rows)
        if self.progress is not None:
            self.progress(row, done, self.total)


def build_row(entry: MatrixEntry, question: Question, job_dir: Path, out: Path) -> dict[str, Any]:
    """One results row, from the run's records (run_meta.json is the authority) and its score."""
    meta = JobFolder(job_dir).read_meta()
    score = score_run(job_dir, question)
    tokens = meta.get("tokens") or {}
    citations = score["citations"]
    return {
        "entry": entry.name,
        "question_id": question["id"],
        "type": question["type"],
        "overrides": entry.knobs(),
        "endpoint": (meta.get("config") or {}).get("LLAMA_URL") or None,  # None: the built-in runtime
        "stop_reason": meta.get("stop_reason"),
        "done": bool(meta.get("done")),
        "turns": meta.get("turns", 0),
        "budget": meta.get("budget"),
        "force_budget": meta.get("force_budget"),
        "tokens": {name: tokens.get(name, 0) for name in TOKEN_FIELDS},
        "tool_calls": meta.get("tool_calls", 0),
        "tool_counts": dict(sorted((meta.get("tool_counts") or {}).items())),
        "bash_programs": dict(sorted((meta.get("bash_programs") or {}).items())),
        "wall_s": meta.get("elapsed_seconds"),
        "score": {
            "verdict": score["verdict"],
            "fact_recall": score["fact_recall"],
            "citation_validity": citations["validity"],
            "citation_precision": citations["precision"],
            "citation_recall": citations["recall"],
            "citation_supported": citations["supported_rate"],
            "premise_corrected": score["premise"]["corrected"] if score["premise"] is not None else None,
        },
        "job_dir": job_dir.relative_to(out).as_posix(),
    }


def summarize(rows: list[dict[str, Any]], entry_names: list[str]) -> dict[str, Any]:
    """Per entry: verdict counts, accuracy (correct 1, partial 0.5), means, the most used tools."""
    entries = []
    for name in entry_names:
        mine = [r for r in rows if r["entry"] == name]
        verdicts = Counter(r["score"]["verdict"] for r in mine)
        tools: Counter[str] = Counter()
        for row in mine:
            tools.update(row["tool_counts"])
        types = sorted({r["type"] for r in mine})
        entries.append({
            "entry": name,
            "runs": len(mine),
            **{verdict: verdicts[verdict] for verdict in VERDICT_POINTS},
            "accuracy": _accuracy(mine),
            "fact_recall": _mean(r["score"]["fact_recall"] for r in mine),
            "citation_precision": _mean(r["score"]["citation_precision"] for r in mine),
            "turns": _mean(r["turns"] for r in mine),
            "tokens": _mean(r["tokens"]["total"] for r in mine),
            "wall_s": _mean(r["wall_s"] for r in mine),
            "top_tools": dict(sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))[:3]),
            "by_type": {t: {"runs": sum(r["type"] == t for r in mine),
                            "accuracy": _accuracy([r for r in mine if r["type"] == t])} for t in types},
        })
    return {"runs": len(rows), "entries": entries}


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a terminal table."""
    head = (f"{'entry':<16} {'runs':>4} {'ok/part/wrong':>13} {'acc':>5} {'facts':>5} {'citeP':>5} "
            f"{'turns':>5} {'tokens':>9} {'wall_s':>7}  top tools")
    lines = [head, "-" * len(head)]
    for e in summary["entries"]:
        verdicts = f"{e['correct']}/{e['partial']}/{e['wrong']}"
        tools = ", ".join(f"{name} {n}" for name, n in e["top_tools"].items()) or "-"
        lines.append(f"{e['entry']:<16} {e['runs']:>4} {verdicts:>13} {_fmt(e['accuracy'], 2):>5} "
                     f"{_fmt(e['fact_recall'], 2):>5} {_fmt(e['citation_precision'], 2):>5} "
                     f"{_fmt(e['turns'], 1):>5} {_fmt(e['tokens'], 0):>9} {_fmt(e['wall_s'], 1):>7}  {tools}")
    return "\n".join(lines)


def select_questions(questions: list[Question], ids: list[str] | None = None, per_type: int | None = None,
                     limit: int | None = None) -> list[Question]:
    """The questions a sweep runs, in question-set order: these ids, then the first N of each type, then the first N."""
    if ids:
        unknown = sorted(set(ids) - {q["id"] for q in questions})
        if unknown:
            raise ValueError(f"no question with id(s) {', '.join(unknown)} in the question set")
        questions = [q for q in questions if q["id"] in set(ids)]
    if per_type is not None:
        seen: Counter[str] = Counter()
        chosen = []
        for question in questions:
            seen[question["type"]] += 1
            if seen[question["type"]] <= per_type:
                chosen.append(question)
        questions = chosen
    if limit is not None:
        questions = questions[:limit]
    if not questions:
        raise ValueError("the selection leaves no questions to run")
    return questions


def _completed_rows(out: Path, pairs: list[tuple[MatrixEntry, Question]]) -> dict[Key, dict[str, Any]]:
    recorded = {(r.get("entry"), r.get("question_id")): r for r in read_jsonl(out / RESULTS)}
    rows = {}
    for entry, question in pairs:
        key = _key(entry, question)
        job_dir = out / "runs" / entry.name / question["id"]
        if key in recorded:
            rows[key] = recorded[key]
        elif _finished(job_dir):  # finished, but killed before its row was written
            rows[key] = build_row(entry, question, job_dir, out)
    return rows


def _check_same_sweep(out: Path, matrix: list[MatrixEntry], base: Settings) -> None:
    """Resuming into a folder of another sweep would mix two experiments in one results file."""
    previous = read_json(out / SWEEP)
    if not isinstance(previous, dict):
        return
    before = {e["name"]: e["overrides"] for e in previous.get("matrix", {}).get("entries", [])}
    for entry in matrix:
        if entry.name in before and before[entry.name] != entry.knobs():
            raise MatrixError(f"{out} holds a sweep in which matrix entry {entry.name!r} had other overrides "
                              f"({before[entry.name]}); sweep into a new --out folder")
    config = base.as_config()
    changed = sorted(k for k, v in (previous.get("base_config") or {}).items() if config.get(k, v) != v)
    if changed:
        raise MatrixError(f"{out} holds a sweep run with other base knobs ({', '.join(changed)}); "
                          "resume with the same settings or sweep into a new --out folder")


def _fresh_job(job_dir: Path, question: Question, dataroom: Path, settings: Settings) -> None:
    if job_dir.exists():  # cut off mid-run, or never got past create_job
        shutil.rmtree(job_dir)
    try:
        create_job(job_dir, question["question"], dataroom, settings)
    except DataroomError:
        shutil.rmtree(job_dir, ignore_errors=True)  # not a finished run: a fixed dataroom must run again
        raise


def _finished(job_dir: Path) -> bool:
    reason = stop_reason_of(job_dir)
    return reason is not None and reason not in _RESUMABLE


def _write_rows(out: Path, pairs: list[tuple[MatrixEntry, Question]], rows: dict[Key, dict[str, Any]]) -> None:
    """results.jsonl in canonical order, replaced atomically."""
    lines = [json.dumps(rows[_key(*p)], ensure_ascii=False) + "\n" for p in pairs if _key(*p) in rows]
    write_text_atomic(out / RESULTS, "".join(lines))


def _wait(events: list[threading.Event]) -> None:
    for event in events:
        while not event.wait(0.2):  # timed waits, so Ctrl-C reaches the main thread
            pass


def _key(entry: MatrixEntry, question: Question) -> Key:
    return entry.name, question["id"]


def _mean(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


def _accuracy(rows: list[dict[str, Any]]) -> float | None:
    return _mean(VERDICT_POINTS[r["score"]["verdict"]] for r in rows)


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat(timespec="seconds")
