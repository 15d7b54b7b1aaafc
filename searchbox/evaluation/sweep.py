"""An ablation sweep (design §3.2, §4): every matrix entry × every question is one real run in its own
job folder, scored, and one row of results.jsonl.

<out>/runs/<entry>/<question id>/   the job folders (repeat k > 1: <question id>@r<k>)
<out>/results.jsonl                 one row per finished run, matrix order, question order, repeat
<out>/summary.json                  per entry: verdicts, accuracy with its 95% interval, means, tools,
                                    and every pair of entries compared question by question
<out>/sweep.json                    the matrix, question ids, repeats, base knobs, start, end, wall seconds;
                                    knobs a newer version resumed it with that its earlier runs lacked

Repeats: `repeats` runs each (entry, question) that many times, every entry's first repeat before
any second one; repeat k samples with seed LLM_SEED + k - 1 (LLM_SEED unset: k), the same seed for
every entry, so two entries' k-th runs differ by their knobs rather than by luck of the draw. Every run records its seed (LLM_SEED in its
run_meta.json config, `seed` in its row); a run is then repeatable. A later sweep with more repeats
into the same folder keeps the runs it has.

Ad-hoc questions (no gold answer, as `ablate --query` makes) are scored on behaviour only: tools,
tokens, time and citations; their rows carry no verdict and no accuracy. A judge model, when given,
grades every answer; its prompt and raw reply are kept in the run's score.json and the row, and
summary.json says per entry how often it agreed with the lexical verdict. Every row's score names its
grader (grading/grader.py) and holds each fact's verdict with the passage it rests on.

Resuming: the same sweep started again into the same folder skips each (entry, question, repeat) that
has a row, or whose job folder holds a finished run (the row is rebuilt from its records). An unfinished
job folder that stopped cleanly (paused / interrupted: its records are whole) resumes from its
session; one cut off mid-run (a kill: run_meta.json shows no stop, the lost part's counters are
gone) is removed and run afresh, so every row measures one whole run. Every run of a sweep names one day in
its prompt (PROMPT_DATE, else the day the sweep first started, kept in sweep.json's base knobs), so a sweep
resumed days later still compares like with like. A resume with fewer entries, questions or repeats keeps
the rows of the runs it leaves out (after its own in results.jsonl; its summary covers its own cells), and
sweep.json's `earlier_entries` keeps the overrides of the entries it left out, so a later resume that names
one again is checked against them.

Engines (docs/sweeps.md): `thread` runs every cell in this process, `ray` each cell as one task on a
Ray cluster (evaluation/sweep_ray.py); either way this driver alone writes the sweep folder, so the
two give the same rows, and resume, report and the Compare tab do not know which ran. The driver
hands each run a slot of a server (jobs/pool.py, the pool the app's scheduler uses too) and keeps the count, so no server gets
more runs than its slots. A run that stopped on model errors at a server that no longer answers is
not a result: the server leaves the pool and the cell runs again on another. A cell whose machine
went away (CellLost) runs again too, at most MAX_LOSSES times. Ctrl-C asks the running runs to stop
cleanly ("interrupted"), which leaves them resumable.

While it runs, results.jsonl gains each row as its run finishes (what the Compare tab reads), and
`status` hears done / running / queued, per server, with an ETA.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import json
import socket
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchbox.agent.control import RunControl
from searchbox.agent.run import connect_and_run
from searchbox.dataroom.unpack import DataroomError
from searchbox.evaluation.files import RESULTS, SUMMARY, SWEEP
from searchbox.evaluation.matrix import SAFE_NAME, MatrixEntry, MatrixError
from searchbox.evaluation.sweep_cell import CellLost, CellOutcome, Dispatch, Engine, run_cell
from searchbox.evaluation.sweep_rows import Placement, Question, build_row, first_seed, is_adhoc, job_folder
from searchbox.evaluation.sweep_summary import summarize
from searchbox.jobs.job import create_job, stop_reason_of
from searchbox.jobs.scheduler import RunFn
from searchbox.jobs.pool import Pool, Slot
from searchbox.llm.endpoints import PoolError, Server
from searchbox.llm.types import ChatModel
from searchbox.records.removal import remove_job_folder
from searchbox.records.files import append_jsonl, read_json, read_jsonl, write_json, write_text_atomic
from searchbox.settings import Settings

log = logging.getLogger(__name__)

_RESUMABLE = frozenset({"paused", "interrupted"})  # clean stops: whole records, a session to resume
MAX_LOSSES = 3  # times a cell may lose its machine before the sweep gives up on it
Progress = Callable[[dict[str, Any], int, int], None]  # (new row, rows done, rows in the sweep)
Key = tuple[str, str, int]  # entry, question id, repeat (from 1)
Cell = tuple[MatrixEntry, Question, int]


@dataclass(frozen=True)
class SweepStatus:
    """Where a sweep stands: rows done (resumed ones too) of all, runs in flight and waiting, the
    runs in flight per server with its slots, and the time left at this session's pace."""

    done: int
    total: int
    running: int
    queued: int
    servers: tuple[tuple[str, int, int], ...]  # label, runs in flight, slots
    eta_s: float | None

    def line(self) -> str:
        servers = " ".join(f"{label} {busy}/{slots}" for label, busy, slots in self.servers)
        eta = "-" if self.eta_s is None else f"{int(self.eta_s // 60)}:{int(self.eta_s % 60):02d}"
        return (f"done {self.done}/{self.total}, running {self.running}, queued {self.queued} | "
                f"{servers} | ETA {eta}")


Status = Callable[[SweepStatus], None]


def run_sweep(matrix: list[MatrixEntry], questions: list[Question], dataroom: Path, out: Path, base: Settings,
              run_fn: RunFn = connect_and_run, endpoints: list[Server] | None = None,
              progress: Progress | None = None, repeats: int = 1, judge: ChatModel | None = None,
              engine: Engine | None = None, status: Status | None = None) -> Path:
    """Run (or resume) the sweep; returns <out>/results.jsonl. KeyboardInterrupt leaves it resumable.
    `engine` defaults to this process's threads (ThreadEngine over `run_fn`)."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    previous = read_json(out / SWEEP)  # the sweep this one resumes, if any
    base = _one_prompt_day(previous, base)
    settings = {entry.name: entry.settings(base) for entry in matrix}  # every entry checked before any run
    for question in questions:
        if not SAFE_NAME.match(question["id"]):
            raise ValueError(f"question id {question['id']!r} cannot name a job folder")
    out.mkdir(parents=True, exist_ok=True)
    _check_same_sweep(out, previous, matrix, base, questions)
    new_knobs = _knobs_new_since(out, previous, base)
    engine = engine or ThreadEngine(run_fn)
    started = time.time()
    meta = {"matrix": {"entries": [{"name": e.name, "overrides": e.knobs()} for e in matrix]},
            "question_ids": [q["id"] for q in questions], "dataroom": str(dataroom),
            "endpoints": [s.url for s in endpoints or []],
            "slots": {s.url: s.slots for s in endpoints or []}, "engine": engine.name,
            "repeats": repeats, "seeds": {e.name: [first_seed(settings[e.name]) + k for k in range(repeats)]
                                          for e in matrix},
            "judge": judge.model_id if judge is not None else None,
            "adhoc_questions": [q for q in questions if is_adhoc(q)],
            "base_config": base.as_config(), "started_at": _iso(started), "ended_at": None, "wall_s": None}
    if new_knobs:
        meta["knobs_new_on_resume"] = new_knobs
    earlier = {name: overrides for name, overrides in _entries_before(previous).items()
               if name not in {e.name for e in matrix}}
    if earlier:
        meta["earlier_entries"] = earlier
    write_json(out / SWEEP, meta)

    cells = [(entry, question, repeat) for entry in matrix for question in questions
             for repeat in range(1, repeats + 1)]
    recorded = read_jsonl(out / RESULTS)
    rows = _completed_rows(out, cells, recorded, judge)
    asked = {_key(*c) for c in cells}
    others = [r for r in recorded if _row_key(r) not in asked]  # runs this resume leaves out: kept
    _write_rows(out, cells, rows, others)  # canonical order; also drops a line torn by a kill
    # Repeat by repeat: a sweep stopped early has every entry on the same questions, ready to compare.
    pending = sorted((c for c in cells if _key(*c) not in rows), key=lambda cell: cell[2])
    pool = Pool([])
    try:
        if pending:
            pool = Pool(engine.open(dataroom, endpoints))
            _Driver(out, dataroom, settings, engine, pool, rows, len(cells), progress, status, judge).run(pending)
    finally:
        engine.close()

    _write_rows(out, cells, rows, others)
    ordered = [rows[_key(*c)] for c in cells if _key(*c) in rows]
    write_json(out / SUMMARY, summarize(ordered, [e.name for e in matrix]))
    ended = time.time()
    write_json(out / SWEEP, {**meta, "ended_at": _iso(ended), "wall_s": round(ended - started, 3),
                             "runs": len(cells), "completed": len(ordered),
                             "dropped_servers": [server.label for server in pool.dropped]})
    return out / RESULTS


class ThreadEngine:
    """Every run in this process, on the driver's own job folders."""

    name = "thread"

    def __init__(self, run_fn: RunFn = connect_and_run) -> None:
        self.run_fn = run_fn
        self.node = socket.gethostname()
        self.controls: set[RunControl] = set()
        self.stopping = False

    def open(self, dataroom: Path, endpoints: list[Server] | None) -> list[Server]:
        return endpoints or [Server(None)]  # the built-in runtime here holds one model: one slot

    def execute(self, dispatch: Dispatch) -> CellOutcome:
        control = RunControl()
        self.controls.add(control)
        if self.stopping:  # after the add: a stop between the two still reaches this run
            control.request("interrupted")
        try:
            return run_cell(dispatch.job_dir, dispatch.settings, self.run_fn, control, self.node)
        finally:
            self.controls.discard(control)

    def live(self, servers: list[Server]) -> list[Server]:
        return servers

    def stop(self) -> None:
        self.stopping = True
        for control in list(self.controls):
            control.request("interrupted")

    def close(self) -> None:
        pass


@dataclass
class _InFlight:
    cell: Cell
    slot: Slot
    queued_at: float


class _Driver:
    """The queue of cells, the pool's slots, the runs in flight; the one writer of the sweep folder."""

    def __init__(self, out: Path, dataroom: Path, settings: dict[str, Settings], engine: Engine, pool: Pool,
                 rows: dict[Key, dict[str, Any]], total: int, progress: Progress | None, status: Status | None,
                 judge: ChatModel | None) -> None:
        self.out, self.dataroom, self.settings, self.engine, self.pool = out, dataroom, settings, engine, pool
        self.rows, self.total, self.progress, self.status, self.judge = rows, total, progress, status, judge
        self.queue: deque[Cell] = deque()
        self.queued_at: dict[Key, float] = {}
        self.losses: dict[Key, int] = {}
        self.running: dict[Future[CellOutcome], _InFlight] = {}
        self.stopping = False
        self.started = time.monotonic()
        self.done_here = 0  # rows this session added: the pace the ETA extrapolates

    def run(self, pending: list[Cell]) -> None:
        now = time.time()
        self.queue.extend(pending)
        self.queued_at = {_key(*cell): now for cell in pending}
        threads = ThreadPoolExecutor(max_workers=max(1, self.pool.slots), thread_name_prefix="sweep")
        try:
            self._loop(threads)
        except BaseException:  # Ctrl-C, or a run that failed: stop the others cleanly, keep what they did
            self.stopping = True
            self.engine.stop()
            self._drain()
            raise
        finally:
            threads.shutdown(wait=False)

    def _loop(self, threads: ThreadPoolExecutor) -> None:
        while self.queue or self.running:
            self._fill(threads)
            if not self.running:
                gone = ", ".join(s.label for s in self.pool.dropped) or "none"
                raise PoolError(f"no server left to run the {len(self.queue)} remaining run(s) on "
                                f"(dropped for not answering: {gone}); run the same command again to resume")
            # A timed wait, so Ctrl-C reaches this thread.
            done, _ = wait(list(self.running), timeout=0.2, return_when=FIRST_COMPLETED)
            for future in done:
                self._settle(future, self.running.pop(future))
            if done:
                self._report()

    def _fill(self, threads: ThreadPoolExecutor) -> None:
        while self.queue and not self.stopping:
            slot = self.pool.take()
            if slot is None:
                return
            cell = self.queue.popleft()
            future = threads.submit(self._execute, cell, slot.server)
            self.running[future] = _InFlight(cell, slot, self.queued_at[_key(*cell)])

    def _execute(self, cell: Cell, server: Server) -> CellOutcome:
        entry, question, repeat = cell
        job_dir = job_folder(self.out, entry.name, question["id"], repeat)
        settings = self.settings[entry.name]
        settings = settings.with_overrides(llm_seed=first_seed(settings) + repeat - 1)
        if server.url is not None:  # the pool decides where a run goes, whatever LLAMA_URL says
            settings = settings.with_overrides(llama_url=server.url)
        if stop_reason_of(job_dir) not in _RESUMABLE:
            _fresh_job(job_dir, question, self.dataroom, settings)
        return self.engine.execute(Dispatch(job_dir, settings, server))

    def _settle(self, future: Future[CellOutcome], flight: _InFlight) -> None:
        """Record a run that ended: its row, or its cell back in the queue; raises what a run raised."""
        self.pool.give_back(flight.slot)
        key = _key(*flight.cell)
        error = future.exception()
        if isinstance(error, CellLost):
            self.losses[key] = self.losses.get(key, 0) + 1
            if self.losses[key] > MAX_LOSSES:
                raise error
            self.pool.servers = self.engine.live(self.pool.servers)
            self.queue.appendleft(flight.cell)
            return
        if error is not None:
            raise error
        outcome = future.result()
        if not outcome.server_answers:
            self.pool.drop(flight.slot.server)
            self.queue.appendleft(flight.cell)  # its job folder is made afresh for the next server
            return
        entry, question, repeat = flight.cell
        job_dir = job_folder(self.out, entry.name, question["id"], repeat)
        if not _finished(job_dir):  # stopped for the sweep's own stop: resumed next time
            return
        placement = Placement(outcome.node, max(0.0, outcome.started_at - flight.queued_at))
        row = build_row(entry, question, job_dir, self.out, repeat, self.judge, placement)
        self.rows[key] = row
        append_jsonl(self.out / RESULTS, row)
        self.done_here += 1
        if self.progress is not None:
            self.progress(row, len(self.rows), self.total)

    def _drain(self) -> None:
        """Wait for the runs in flight (each asked to stop) and keep what they finished."""
        while self.running:
            done, _ = wait(list(self.running), timeout=0.2, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    self._settle(future, self.running.pop(future))
                except BaseException:  # the sweep already stops for the first failure
                    pass

    def _report(self) -> None:
        if self.status is None:
            return
        left = len(self.queue) + len(self.running)
        elapsed = time.monotonic() - self.started
        eta = left * elapsed / self.done_here if self.done_here else None
        servers = tuple((s.label, self.pool.in_use(s), s.slots) for s in self.pool.servers)
        self.status(SweepStatus(len(self.rows), self.total, len(self.running), len(self.queue), servers, eta))


def _completed_rows(out: Path, cells: list[Cell], results: list[dict[str, Any]],
                    judge: ChatModel | None) -> dict[Key, dict[str, Any]]:
    recorded = {_row_key(r): r for r in results}
    rows = {}
    for entry, question, repeat in cells:
        key = _key(entry, question, repeat)
        job_dir = job_folder(out, entry.name, question["id"], repeat)
        if key in recorded:
            rows[key] = recorded[key]
        elif _finished(job_dir):  # finished, but killed before its row was written
            rows[key] = build_row(entry, question, job_dir, out, repeat, judge)
    return rows


def _one_prompt_day(previous: Any, base: Settings) -> Settings:
    """Every run of a sweep names one day in its prompt, also the runs resumed days later: the day the
    sweep first started, unless PROMPT_DATE is set (seeded runs of two days differ by their prompt)."""
    if base.prompt_date:
        return base
    started_on = (previous.get("base_config") or {}).get("PROMPT_DATE") if isinstance(previous, dict) else None
    return base.with_overrides(prompt_date=started_on or dt.date.today().isoformat())


def _check_same_sweep(out: Path, previous: Any, matrix: list[MatrixEntry], base: Settings,
                      questions: list[Question]) -> None:
    """Resuming into a folder of another sweep (`previous`, its sweep.json) would mix two experiments in one
    results file."""
    if not isinstance(previous, dict):
        return
    before = _entries_before(previous)
    for entry in matrix:
        if entry.name in before and before[entry.name] != entry.knobs():
            raise MatrixError(f"{out} holds a sweep in which matrix entry {entry.name!r} had other overrides "
                              f"({before[entry.name]}); sweep into a new --out folder")
    asked = {q["id"]: q["question"] for q in previous.get("adhoc_questions") or []}
    for question in questions:
        if is_adhoc(question) and question["id"] in asked and asked[question["id"]] != question["question"]:
            raise MatrixError(f"{out} holds a sweep of another question ({asked[question['id']]!r}); "
                              "sweep into a new --out folder")
    config = base.as_config()
    changed = sorted(k for k, v in (previous.get("base_config") or {}).items() if config.get(k, v) != v)
    if changed:
        raise MatrixError(f"{out} holds a sweep run with other base knobs ({', '.join(changed)}); "
                          "resume with the same settings or sweep into a new --out folder")


def _knobs_new_since(out: Path, previous: Any, base: Settings) -> dict[str, Any]:
    """Knobs this version has that the sweep's earlier runs did not (with their values now), gathered over
    every resume. Nothing says how the version before behaved where such a knob now decides (a new default
    can change what runs did), so they are kept in sweep.json and said, never silently mixed."""
    if not isinstance(previous, dict) or not isinstance(previous.get("base_config"), dict):
        return {}
    config = base.as_config()
    new = {**previous.get("knobs_new_on_resume", {}),
           **{k: v for k, v in config.items() if k not in previous["base_config"]}}
    if new:
        log.warning("%s began before these knobs existed; its earlier runs ran without them (now %s): "
                    "compare across them with care, or sweep into a new --out folder", out,
                    ", ".join(f"{k}={v}" for k, v in new.items()))
    return new


def _fresh_job(job_dir: Path, question: Question, dataroom: Path, settings: Settings) -> None:
    if job_dir.exists():  # cut off mid-run, or never got past create_job
        remove_job_folder(job_dir)  # its dataroom is read-only: rmtree fails on it for a user not root
    try:
        create_job(job_dir, question["question"], dataroom, settings)
    except DataroomError:
        with contextlib.suppress(OSError):
            remove_job_folder(job_dir)  # not a finished run: a fixed dataroom must run again
        raise


def _finished(job_dir: Path) -> bool:
    reason = stop_reason_of(job_dir)
    return reason is not None and reason not in _RESUMABLE


def _entries_before(previous: Any) -> dict[str, Any]:
    """Every entry the folder's earlier runs ran, with its overrides: the last matrix and those it left out."""
    if not isinstance(previous, dict):
        return {}
    return {**(previous.get("earlier_entries") or {}),
            **{e["name"]: e["overrides"] for e in previous.get("matrix", {}).get("entries", [])}}


def _row_key(row: dict[str, Any]) -> Key:
    return row.get("entry"), row.get("question_id"), row.get("repeat", 1)  # a row from before repeats is repeat 1


def _write_rows(out: Path, cells: list[Cell], rows: dict[Key, dict[str, Any]],
                others: list[dict[str, Any]]) -> None:
    """results.jsonl in canonical order, then the rows of runs outside this sweep's cells, replaced atomically."""
    lines = [json.dumps(rows[_key(*c)], ensure_ascii=False) + "\n" for c in cells if _key(*c) in rows]
    lines += [json.dumps(row, ensure_ascii=False) + "\n" for row in others]
    write_text_atomic(out / RESULTS, "".join(lines))


def _key(entry: MatrixEntry, question: Question, repeat: int) -> Key:
    return entry.name, question["id"], repeat


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat(timespec="seconds")
