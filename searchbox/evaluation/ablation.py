"""An ablation sweep (SPEC 3 CLI, 4): every matrix entry × every question is one real run in its own
job folder, scored, and one row of results.jsonl.

<out>/runs/<entry>/<question id>/   the job folders (repeat k > 1: <question id>@r<k>)
<out>/results.jsonl                 one row per finished run, matrix order, question order, repeat
<out>/summary.json                  per entry: verdicts, accuracy with its 95% interval, means, tools,
                                    and every pair of entries compared question by question
<out>/sweep.json                    the matrix, question ids, repeats, base knobs, start, end, wall seconds

Repeats: `repeats` runs each (entry, question) that many times, every entry's first repeat before
any second one; repeat k samples with seed LLM_SEED + k - 1 (LLM_SEED unset: k), the same seed for
every entry, so two entries' k-th runs differ by their knobs rather than by luck of the draw. Every run records its seed (LLM_SEED in its
run_meta.json config, `seed` in its row); a run is then repeatable. A later sweep with more repeats
into the same folder keeps the runs it has.

Ad-hoc questions (no gold answer, as `ablate --query` makes) are scored on behaviour only: tools,
tokens, time and citations; their rows carry no verdict and no accuracy. A judge model, when given,
grades every answer; its prompt and raw reply are kept in the run's score.json and the row, and
summary.json says per entry how often it agreed with the lexical verdict. Every row's score names its
grader (evaluation/grader.py) and holds each fact's verdict with the passage it rests on.

Resuming: the same sweep started again into the same folder skips each (entry, question, repeat) that
has a row, or whose job folder holds a finished run (the row is rebuilt from its records). An unfinished
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
from searchbox.evaluation.grader import grader_label, judge_agreement, row_grader
from searchbox.evaluation.intervals import accuracy_interval, format_p, paired_comparison, question_means
from searchbox.evaluation.matrix import SAFE_NAME, MatrixEntry, MatrixError
from searchbox.evaluation.scoring import score_run
from searchbox.jobs.job import create_job, stop_reason_of
from searchbox.jobs.scheduler import RunFn
from searchbox.llm.types import ChatModel
from searchbox.records.files import append_jsonl, read_json, read_jsonl, write_json, write_text_atomic
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings

TOKEN_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "total")
FACT_FIELDS = ("fact", "kind", "status", "explanation")
_RESUMABLE = frozenset({"paused", "interrupted"})  # clean stops: whole records, a session to resume
Progress = Callable[[dict[str, Any], int, int], None]  # (new row, rows done, rows in the sweep)
Question = dict[str, Any]
Key = tuple[str, str, int]  # entry, question id, repeat (from 1)
Cell = tuple[MatrixEntry, Question, int]
ADHOC_TYPE = "adhoc"  # the type of a question with no gold answer


def adhoc_question(text: str) -> Question:
    """An ad-hoc question (ablate --query): no gold answer, so runs are compared on behaviour only."""
    text = text.strip()
    if not text:
        raise ValueError("--query needs a question")
    return {"id": "query", "question": text, "answer": None, "must_facts": [], "gold_files": [], "type": ADHOC_TYPE}


def is_adhoc(question: Question) -> bool:
    return question.get("answer") is None


def first_seed(settings: Settings) -> int:
    """Repeat 1's sampling seed: LLM_SEED when set, else 1."""
    return settings.llm_seed if settings.llm_seed is not None else 1


def job_folder(out: Path, entry: str, question_id: str, repeat: int) -> Path:
    """A run's job folder; repeat 1 keeps the name a sweep without repeats gives it."""
    name = question_id if repeat == 1 else f"{question_id}@r{repeat}"
    return out / "runs" / entry / name


def run_sweep(matrix: list[MatrixEntry], questions: list[Question], dataroom: Path, out: Path, base: Settings,
              run_fn: RunFn = connect_and_run, endpoints: list[str] | None = None,
              progress: Progress | None = None, repeats: int = 1, judge: ChatModel | None = None) -> Path:
    """Run (or resume) the sweep; returns <out>/results.jsonl. KeyboardInterrupt leaves it resumable."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    settings = {entry.name: entry.settings(base) for entry in matrix}  # every entry checked before any run
    for question in questions:
        if not SAFE_NAME.match(question["id"]):
            raise ValueError(f"question id {question['id']!r} cannot name a job folder")
    out.mkdir(parents=True, exist_ok=True)
    _check_same_sweep(out, matrix, base, questions)
    started = time.time()
    meta = {"matrix": {"entries": [{"name": e.name, "overrides": e.knobs()} for e in matrix]},
            "question_ids": [q["id"] for q in questions], "dataroom": str(dataroom), "endpoints": endpoints or [],
            "repeats": repeats, "seeds": {e.name: [first_seed(settings[e.name]) + k for k in range(repeats)]
                                          for e in matrix},
            "judge": judge.model_id if judge is not None else None,
            "adhoc_questions": [q for q in questions if is_adhoc(q)],
            "base_config": base.as_config(), "started_at": _iso(started), "ended_at": None, "wall_s": None}
    write_json(out / SWEEP, meta)

    cells = [(entry, question, repeat) for entry in matrix for question in questions
             for repeat in range(1, repeats + 1)]
    rows = _completed_rows(out, cells, judge)
    _write_rows(out, cells, rows)  # canonical order; also drops a line torn by a kill
    sweep = _Sweep(out, dataroom, settings, run_fn, rows, len(cells), progress, judge)
    # Repeat by repeat: a sweep stopped early has every entry on the same questions, ready to compare.
    pending = sorted((c for c in cells if _key(*c) not in rows), key=lambda cell: cell[2])
    sweep.run(pending, endpoints or [None])

    _write_rows(out, cells, rows)
    ordered = [rows[_key(*c)] for c in cells if _key(*c) in rows]
    write_json(out / SUMMARY, summarize(ordered, [e.name for e in matrix]))
    ended = time.time()
    write_json(out / SWEEP, {**meta, "ended_at": _iso(ended), "wall_s": round(ended - started, 3),
                             "runs": len(cells), "completed": len(ordered)})
    return out / RESULTS


class _Sweep:
    """The pending runs, the workers that take them, and what a stop must reach."""

    def __init__(self, out: Path, dataroom: Path, settings: dict[str, Settings], run_fn: RunFn,
                 rows: dict[Key, dict[str, Any]], total: int, progress: Progress | None,
                 judge: ChatModel | None) -> None:
        self.out, self.dataroom, self.settings, self.run_fn = out, dataroom, settings, run_fn
        self.rows, self.total, self.progress, self.judge = rows, total, progress, judge
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.controls: set[RunControl] = set()
        self.failure: BaseException | None = None

    def run(self, pending: list[Cell], endpoints: list[str | None]) -> None:
        tasks: queue.SimpleQueue[Cell] = queue.SimpleQueue()
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

    def _work(self, tasks: queue.SimpleQueue[Cell], endpoint: str | None,
              ended: threading.Event) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    cell = tasks.get_nowait()
                except queue.Empty:
                    return
                try:
                    self._run_one(*cell, endpoint)
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

    def _run_one(self, entry: MatrixEntry, question: Question, repeat: int, endpoint: str | None) -> None:
        job_dir = job_folder(self.out, entry.name, question["id"], repeat)
        settings = self.settings[entry.name]
        settings = settings.with_overrides(llm_seed=first_seed(settings) + repeat - 1)
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
        row = build_row(entry, question, job_dir, self.out, repeat, self.judge)
        with self.lock:
            self.rows[_key(entry, question, repeat)] = row
            append_jsonl(self.out / RESULTS, row)
            done = len(self.rows)
        if self.progress is not None:
            self.progress(row, done, self.total)


def build_row(entry: MatrixEntry, question: Question, job_dir: Path, out: Path, repeat: int = 1,
              judge: ChatModel | None = None) -> dict[str, Any]:
    """One results row, from the run's records (run_meta.json is the authority) and its score; with a
    judge, the full score (the judge's prompt and raw reply too) is also kept as the run's score.json."""
    meta = JobFolder(job_dir).read_meta()
    score = score_run(job_dir, question, judge)
    if judge is not None:
        write_json(JobFolder(job_dir).score, score)
    tokens = meta.get("tokens") or {}
    citations = score["citations"]
    adhoc = is_adhoc(question)
    row = {
        "entry": entry.name,
        "question_id": question["id"],
        "type": question["type"],
        "repeat": repeat,
        "seed": (meta.get("config") or {}).get("LLM_SEED"),
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
        "harness": meta.get("harness"),  # None: recorded before runs named their harness
        "assist_firings": meta.get("assist_firings") or {},
        "score": {
            "verdict": None if adhoc else score["verdict"],
            "fact_recall": None if adhoc else score["fact_recall"],
            "citation_validity": citations["validity"],
            # With no gold files there is nothing to be precise about.
            "citation_precision": None if adhoc else citations["precision"],
            "citation_recall": None if adhoc else citations["recall"],
            "citation_supported": citations["supported_rate"],
            "premise_corrected": score["premise"]["corrected"] if score["premise"] is not None else None,
            "grader": score["grader"],
            # Each fact's verdict and the passage it rests on, for the report and the Compare tab.
            "facts": [] if adhoc else [{k: f[k] for k in FACT_FIELDS} for f in score["facts"]],
        },
        "job_dir": job_dir.relative_to(out).as_posix(),
    }
    if score["judge"] is not None:
        row["judge"] = score["judge"]
    return row



def summarize(rows: list[dict[str, Any]], entry_names: list[str]) -> dict[str, Any]:
    """Per entry: verdict counts, accuracy (correct 1, partial 0.5) with its 95% interval over questions,
    means, the most used tools; then every pair of entries compared question by question."""
    entries = []
    for name in entry_names:
        mine = [r for r in rows if r["entry"] == name]
        verdicts = Counter(r["score"]["verdict"] for r in mine)
        tools: Counter[str] = Counter()
        for row in mine:
            tools.update(row["tool_counts"])
        types = sorted({r["type"] for r in mine})
        interval = accuracy_interval((r["question_id"], _points(r)) for r in mine)
        judged = [r for r in mine if (r.get("judge") or {}).get("verdict") in VERDICT_POINTS]
        entries.append({
            "entry": name,
            "runs": len(mine),
            "repeats": max(Counter(r["question_id"] for r in mine).values(), default=0),
            **{verdict: verdicts[verdict] for verdict in VERDICT_POINTS},
            "accuracy": _accuracy(mine),
            "accuracy_ci": interval.as_dict() if interval is not None else None,
            "judge_accuracy": _mean(VERDICT_POINTS[r["judge"]["verdict"]] for r in judged) if judged else None,
            "judge_agreement": judge_agreement(mine),
            "graders": sorted({grader_label(row_grader(r)) for r in mine}),
            "fact_recall": _mean(r["score"]["fact_recall"] for r in mine),
            "citation_validity": _mean(r["score"]["citation_validity"] for r in mine),
            "citation_precision": _mean(r["score"]["citation_precision"] for r in mine),
            "turns": _mean(r["turns"] for r in mine),
            "tokens": _mean(r["tokens"]["total"] for r in mine),
            "wall_s": _mean(r["wall_s"] for r in mine),
            "top_tools": dict(sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))[:3]),
            "by_type": {t: {"runs": sum(r["type"] == t for r in mine),
                            "accuracy": _accuracy([r for r in mine if r["type"] == t])} for t in types},
        })
    return {"runs": len(rows), "entries": entries, "comparisons": compare_entries(rows, entry_names)}


def compare_entries(rows: list[dict[str, Any]], entry_names: list[str]) -> list[dict[str, Any]]:
    """Every pair (A before B in matrix order) that scored some of the same questions: A's wins, losses
    and ties against B (per question, accuracy averaged over repeats) and the sign test's p-value."""
    means = {name: question_means((r["question_id"], _points(r)) for r in rows if r["entry"] == name)
             for name in entry_names}
    pairs = []
    for i, a in enumerate(entry_names):
        for b in entry_names[i + 1:]:
            paired = paired_comparison(means[a], means[b])
            if paired is not None:
                pairs.append({"a": a, "b": b, **paired.as_dict()})
    return pairs


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a terminal table, then the pairwise comparisons."""
    head = (f"{'entry':<16} {'runs':>4} {'ok/part/wrong':>13} {'acc [95% CI]':>18} {'facts':>5} {'citeV':>5} "
            f"{'citeP':>5} {'turns':>5} {'tokens':>9} {'wall_s':>7}  top tools")
    lines = [head, "-" * len(head)]
    for e in summary["entries"]:
        verdicts = f"{e['correct']}/{e['partial']}/{e['wrong']}"
        tools = ", ".join(f"{name} {n}" for name, n in e["top_tools"].items()) or "-"
        lines.append(f"{e['entry']:<16} {e['runs']:>4} {verdicts:>13} {_fmt_ci(e.get('accuracy_ci')):>18} "
                     f"{_fmt(e['fact_recall'], 2):>5} {_fmt(e.get('citation_validity'), 2):>5} "
                     f"{_fmt(e['citation_precision'], 2):>5} "
                     f"{_fmt(e['turns'], 1):>5} {_fmt(e['tokens'], 0):>9} {_fmt(e['wall_s'], 1):>7}  {tools}")
    if any(e.get("accuracy_ci") for e in summary["entries"]):
        lines.append("acc: mean over questions (repeats averaged per question), 95% Wilson interval over questions")
    judged = [e for e in summary["entries"] if e.get("judge_accuracy") is not None]
    if judged:
        lines.append("judge accuracy: " + ", ".join(f"{e['entry']} {e['judge_accuracy']:.2f}" for e in judged))
        agreements = [(e["entry"], e["judge_agreement"]) for e in judged if e.get("judge_agreement")]
        if agreements:
            lines.append("judge agrees with the lexical verdict: " + ", ".join(
                f"{name} {a['agree']}/{a['runs']}" for name, a in agreements))
    comparisons = summary.get("comparisons") or []
    if comparisons:
        lines += ["", "paired, question by question (A vs B: wins/losses/ties of A; exact sign test)"]
        for c in comparisons:
            lines.append(f"  {c['a']} vs {c['b']}: {c['wins']}/{c['losses']}/{c['ties']} over {c['questions']} "
                         f"questions, mean difference {c['mean_difference']:+.2f}, p = {format_p(c['p_value'])}")
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


def _completed_rows(out: Path, cells: list[Cell], judge: ChatModel | None) -> dict[Key, dict[str, Any]]:
    # A row written before repeats existed is repeat 1.
    recorded = {(r.get("entry"), r.get("question_id"), r.get("repeat", 1)): r for r in read_jsonl(out / RESULTS)}
    rows = {}
    for entry, question, repeat in cells:
        key = _key(entry, question, repeat)
        job_dir = job_folder(out, entry.name, question["id"], repeat)
        if key in recorded:
            rows[key] = recorded[key]
        elif _finished(job_dir):  # finished, but killed before its row was written
            rows[key] = build_row(entry, question, job_dir, out, repeat, judge)
    return rows


def _check_same_sweep(out: Path, matrix: list[MatrixEntry], base: Settings, questions: list[Question]) -> None:
    """Resuming into a folder of another sweep would mix two experiments in one results file."""
    previous = read_json(out / SWEEP)
    if not isinstance(previous, dict):
        return
    before = {e["name"]: e["overrides"] for e in previous.get("matrix", {}).get("entries", [])}
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


def _write_rows(out: Path, cells: list[Cell], rows: dict[Key, dict[str, Any]]) -> None:
    """results.jsonl in canonical order, replaced atomically."""
    lines = [json.dumps(rows[_key(*c)], ensure_ascii=False) + "\n" for c in cells if _key(*c) in rows]
    write_text_atomic(out / RESULTS, "".join(lines))


def _wait(events: list[threading.Event]) -> None:
    for event in events:
        while not event.wait(0.2):  # timed waits, so Ctrl-C reaches the main thread
            pass


def _key(entry: MatrixEntry, question: Question, repeat: int) -> Key:
    return entry.name, question["id"], repeat


def _mean(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


def _points(row: dict[str, Any]) -> float | None:
    """A run's accuracy from its verdict; None for an ad-hoc question's run, which has none."""
    verdict = row["score"]["verdict"]
    return VERDICT_POINTS[verdict] if verdict is not None else None


def _accuracy(rows: list[dict[str, Any]]) -> float | None:
    return _mean(_points(r) for r in rows)


def _fmt_ci(ci: dict[str, Any] | None) -> str:
    return "-" if ci is None else f"{ci['mean']:.2f} [{ci['low']:.2f},{ci['high']:.2f}]"


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat(timespec="seconds")
