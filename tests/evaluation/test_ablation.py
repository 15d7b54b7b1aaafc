"""The ablation sweep: real runs (real job folders, tools, records, scoring) against a scripted
endpoint that answers each request from its content; stop and resume; a pool of two endpoints; the
matrix file; and one sweep through the CLI with the real packaged model."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.clock import fixed_day
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from testkit.small_sweep import MATRIX, QUESTIONS, answer_from_content, base_settings
from searchbox.agent.control import RunControl
from searchbox.records.events import Event, Listener
from searchbox.agent.run import connect_and_run
from searchbox.cli.main import main as cli_main
from searchbox.evaluation.sweep import SweepStatus, run_sweep
from searchbox.llm.endpoints import PoolError, Server, endpoint_answers, parse_endpoints
from searchbox.evaluation.sweep_rows import first_seed, select_questions
from searchbox.evaluation.sweep_summary import summarize
from searchbox.evaluation.report import load_results, summary_table
from searchbox.evaluation.matrix import (DEFAULT_MATRIX, DEFAULT_MATRIX_PATH, MatrixEntry, MatrixError,
                                         load_matrix, parse_matrix)
from searchbox.grading.fact_match import LEXICAL_VERSION
from searchbox.records.files import read_json, read_jsonl, write_json
from searchbox.settings import Settings
from searchbox.tools.catalog import CATALOG_TOOLS

ROOT = Path(__file__).resolve().parents[2]

TIMING_FIELDS = ("wall_s", "node", "queue_s")  # where a run ran and how long it took: not its result
ROW_FIELDS = {"entry", "question_id", "type", "repeat", "seed", "overrides", "endpoint", "stop_reason", "done", "turns", "budget",
              "force_budget", "tokens", "tool_calls", "tool_counts", "bash_programs", "wall_s", "node", "queue_s",
              "harness", "assist_firings", "score", "job_dir"}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint(default=answer_from_content) as server:
        yield server


@pytest.fixture(scope="module")
def dataroom(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(tmp_path_factory.mktemp("room"), SMALL_DATAROOM)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, endpoint: ScriptedEndpoint, dataroom: Path,
             cache: Path) -> Path:
    """An uninterrupted serial sweep: the reference the other sweeps must equal."""
    out = tmp_path_factory.mktemp("baseline")
    run_sweep(parse_matrix(MATRIX), QUESTIONS, dataroom, out, base_settings(cache, endpoint.url))
    return out


def comparable(rows: list[dict[str, Any]], *ignore: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k not in (*TIMING_FIELDS, *ignore)} for row in rows]


def test_a_sweep_writes_one_scored_row_per_run_and_a_summary(baseline: Path, endpoint: ScriptedEndpoint) -> None:
    rows = read_jsonl(baseline / "results.jsonl")
    assert [(r["entry"], r["question_id"]) for r in rows] == [
        (e, q["id"]) for e in ("kw-b1", "none-b2f") for q in QUESTIONS]
    for row in rows:
        assert set(row) == ROW_FIELDS
        assert row["endpoint"] == endpoint.url and row["done"] and row["wall_s"] > 0
        assert row["node"] == socket.gethostname() and row["queue_s"] >= 0  # where it ran, how long it waited
        assert row["tool_counts"] == {"read": 1} and row["tool_calls"] == 1 and row["bash_programs"] == {}
        assert (baseline / row["job_dir"] / "run_meta.json").exists()
        assert row["job_dir"] == f"runs/{row['entry']}/{row['question_id']}"
        assert (row["repeat"], row["seed"]) == (1, 1)  # without repeats too, every run records its seed
        meta = read_json(baseline / row["job_dir"] / "run_meta.json")
        assert row["harness"] == meta["harness"] and row["harness"]["name"] == "native"  # each row names its harness
        assert row["assist_firings"] == meta["assist_firings"]

    kw, forced = rows[0], rows[3]
    assert kw["overrides"] == {"SEARCHBOX_TOOLS": "keyword_search", "TURN_BUDGET": 1}
    assert kw["stop_reason"] == "first_turn_done" and (kw["turns"], kw["budget"], kw["force_budget"]) == (1, 1, False)
    assert kw["tokens"] == {"input": 24, "output": 10, "cacheRead": 0, "cacheWrite": 0, "reasoning": 0,
                            "total": 34}  # 2 requests
    assert forced["overrides"] == {"TURN_BUDGET": 2, "FORCE_BUDGET": True, "SEARCHBOX_TOOLS": ""}
    assert forced["stop_reason"] == "budget_spent" and (forced["turns"], forced["force_budget"]) == (2, True)
    assert forced["tokens"]["total"] == 51  # a third request: the answer to Continue.

    scores = {r["question_id"]: dict(r["score"]) for r in rows[:3]}
    for score in scores.values():  # each score names its grader and keeps each fact's verdict with its reason
        assert score.pop("grader") == {"lexical": LEXICAL_VERSION, "judge": None}
        assert all(set(f) == {"fact", "kind", "status", "explanation"} for f in score["facts"])
    assert [(f["fact"], f["status"]) for f in scores["leave"]["facts"]] == [("28 days", "present"),
                                                                           ("sixteen weeks", "absent")]
    assert scores["lease"].pop("facts") == [{"fact": "31 March 2029", "kind": "must", "status": "present",
                                             "explanation": 'exact: "The lease runs until 31 March 2029."'}]
    assert scores["dublin"].pop("facts")[0]["explanation"].startswith("missing frankfurt")
    assert scores["lease"] == {"verdict": "correct", "fact_recall": 1.0, "citation_validity": 1.0,
                               "citation_precision": 1.0, "citation_recall": 1.0, "citation_supported": 1.0,
                               "premise_corrected": None}
    assert scores["leave"]["verdict"] == "partial" and scores["leave"]["fact_recall"] == 0.5
    # Nothing in "Hosting went up because of encryption" to look up, and the security notes score low: unchecked.
    assert scores["dublin"] == {"verdict": "wrong", "fact_recall": 0.0, "citation_validity": 1.0,
                                "citation_precision": 0.0, "citation_recall": 0.0, "citation_supported": 0.0,
                                "premise_corrected": False}

    summary = read_json(baseline / "summary.json")
    assert summary["runs"] == 6 and [e["entry"] for e in summary["entries"]] == ["kw-b1", "none-b2f"]
    for entry, turns, tokens in zip(summary["entries"], (1.0, 2.0), (34.0, 51.0)):
        assert (entry["runs"], entry["correct"], entry["partial"], entry["wrong"]) == (3, 1, 1, 1)
        assert entry["accuracy"] == 0.5 and entry["fact_recall"] == 0.5 and entry["citation_precision"] == 0.6667
        assert entry["turns"] == turns and entry["tokens"] == tokens and entry["wall_s"] > 0
        assert entry["top_tools"] == {"read": 3}
        assert entry["by_type"]["literal"] == {"runs": 1, "accuracy": 1.0}
    assert summary == summarize(rows, ["kw-b1", "none-b2f"])

    sweep = read_json(baseline / "sweep.json")
    assert sweep["question_ids"] == ["lease", "leave", "dublin"] and sweep["runs"] == sweep["completed"] == 6
    assert [e["name"] for e in sweep["matrix"]["entries"]] == ["kw-b1", "none-b2f"]
    assert sweep["wall_s"] > 0 and sweep["ended_at"] >= sweep["started_at"]


class KillingRunFn:
    """connect_and_run, stopped the way a sweep can be: a kill after a run, mid-run, or a clean Ctrl-C."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode = mode
        self.jobs: list[str] = []

    def __call__(self, job_dir: Path, settings: Settings, control: RunControl, listeners: list[Listener]) -> str:
        self.jobs.append(f"{job_dir.parent.name}/{job_dir.name}")
        n = len(self.jobs)
        if self.mode == "mid_run" and n == 4:
            listeners = [*listeners, self._kill_at_first_tool]
        if self.mode == "clean_stop" and n == 4:
            listeners = [*listeners, lambda event: control.request("interrupted") if event.type == "tool_end" else None]
        reason = connect_and_run(job_dir, settings, control, listeners)
        if (self.mode == "after_run" and n == 3) or (self.mode == "clean_stop" and n == 4):
            raise KeyboardInterrupt
        return reason

    @staticmethod
    def _kill_at_first_tool(event: Event) -> None:
        if event.type == "tool_end":
            raise KeyboardInterrupt


@pytest.mark.parametrize("mode", ["after_run", "mid_run", "clean_stop"])
def test_a_stopped_sweep_resumes_where_it_left_off(mode: str, baseline: Path, endpoint: ScriptedEndpoint,
                                                   dataroom: Path, cache: Path, tmp_path: Path) -> None:
    matrix, base, out = parse_matrix(MATRIX), base_settings(cache, endpoint.url), tmp_path / "sweep"
    first = KillingRunFn(mode)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(matrix, QUESTIONS, dataroom, out, base, run_fn=first)
    assert len(first.jobs) == (3 if mode == "after_run" else 4)
    assert len(read_jsonl(out / "results.jsonl")) == (2 if mode == "after_run" else 3)
    fourth = out / "runs" / "none-b2f" / "lease"
    if mode == "clean_stop":
        assert read_json(fourth / "run_meta.json")["stop_reason"] == "interrupted"

    again = KillingRunFn()
    run_sweep(matrix, QUESTIONS, dataroom, out, base, run_fn=again)
    assert again.jobs == ["none-b2f/lease", "none-b2f/leave", "none-b2f/dublin"]  # finished runs not re-run
    assert comparable(read_jsonl(out / "results.jsonl")) == comparable(read_jsonl(baseline / "results.jsonl"))
    starts = [e["resumed"] for e in read_jsonl(fourth / "events.jsonl") if e["type"] == "run_start"]
    # A clean stop resumes from the session; a run cut off mid-way is run again from scratch.
    assert starts == ([False, True] if mode == "clean_stop" else [False])


def test_every_run_of_a_sweep_names_the_day_it_started_also_when_resumed_the_next_day(
        endpoint: ScriptedEndpoint, dataroom: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime as dt

    import searchbox.evaluation.sweep as sweep_module

    Clock = fixed_day(dt.date(2026, 12, 2))
    monkeypatch.setattr(sweep_module.dt, "date", Clock)
    matrix, base, out = parse_matrix(MATRIX), base_settings(cache, endpoint.url), tmp_path / "sweep"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(matrix, QUESTIONS, dataroom, out, base, run_fn=KillingRunFn("after_run"))
    Clock.today_is = dt.date(2026, 12, 3)
    run_sweep(matrix, QUESTIONS, dataroom, out, base, run_fn=KillingRunFn())
    assert read_json(out / "sweep.json")["base_config"]["PROMPT_DATE"] == "2026-12-02"
    days = {read_json(row_dir / "config.json")["PROMPT_DATE"] for row_dir in (out / "runs").glob("*/*")}
    assert days == {"2026-12-02"}
    # Set, it is the sweep's day, and resuming with another is refused like any other base knob.
    with pytest.raises(MatrixError, match="other base knobs \\(PROMPT_DATE\\)"):
        run_sweep(matrix, QUESTIONS, dataroom, out, base.with_overrides(prompt_date="2026-12-04"))


def test_two_endpoints_share_the_runs_and_give_the_serial_results(baseline: Path, dataroom: Path, cache: Path,
                                                                  tmp_path: Path) -> None:
    with ScriptedEndpoint(default=answer_from_content) as one, ScriptedEndpoint(default=answer_from_content) as two:
        results = run_sweep(parse_matrix(MATRIX), QUESTIONS, dataroom, tmp_path / "pool", base_settings(cache),
                            endpoints=[Server(one.url), Server(two.url)])
        assert one.requests and two.requests
        rows = read_jsonl(results)
        assert {r["endpoint"] for r in rows} == {one.url, two.url}
    assert comparable(rows, "endpoint") == comparable(read_jsonl(baseline / "results.jsonl"), "endpoint")


def test_the_default_matrix_and_its_asset() -> None:
    groups = {g: ",".join(t.name for t in CATALOG_TOOLS if t.group == g) for g in ("high", "low")}
    tools = {e["name"]: e["overrides"]["SEARCHBOX_TOOLS"] for e in DEFAULT_MATRIX["entries"]}
    assert tools == {"high-b1": groups["high"], "high-b4f": groups["high"], "low-b1": groups["low"],
                     "low-b4f": groups["low"], "keyword-b1": "keyword_search", "keyword-b4f": "keyword_search",
                     "none-b1": "", "none-b4f": ""}
    for entry in DEFAULT_MATRIX["entries"]:
        forced = entry["name"].endswith("-b4f")
        assert entry["overrides"]["TURN_BUDGET"] == (4 if forced else 1)
        assert entry["overrides"]["FORCE_BUDGET"] is forced
    assert json.loads(DEFAULT_MATRIX_PATH.read_text()) == DEFAULT_MATRIX, \
        "assets/ablation_matrix.json is stale: python -m searchbox.evaluation.matrix"
    assert [e.name for e in load_matrix(DEFAULT_MATRIX_PATH)] == list(tools)


def test_matrix_entries_are_normalized_and_bad_ones_named() -> None:
    entries = parse_matrix({"entries": [{"name": "q", "effort": "Thorough", "overrides": {"force_budget": "off"}}]})
    assert entries == [MatrixEntry("q", {"turn_budget": 8, "force_budget": False})]
    bad = [
        ({"name": "typo", "overrides": {"TURN_BUDGT": 3}}, "'typo'.*TURN_BUDGT"),
        ({"name": "words", "overrides": {"TURN_BUDGET": "many"}}, "'words'.*TURN_BUDGET must be a whole number"),
        ({"name": "zero", "overrides": {"TURN_BUDGET": 0}}, "'zero'.*at least 1"),
        ({"name": "tools", "overrides": {"SEARCHBOX_TOOLS": "teleport"}}, "'tools'.*teleport"),
        ({"name": "lazy", "effort": "Slow"}, "'lazy'.*effort"),
        ({"name": "../up"}, "name"),
    ]
    for entry, message in bad:
        with pytest.raises(MatrixError, match=message):
            parse_matrix({"entries": [entry]})
    with pytest.raises(MatrixError, match="'twice' appears twice"):
        parse_matrix({"entries": [{"name": "twice"}, {"name": "twice"}]})


def test_an_entry_that_clashes_with_the_base_fails_before_any_run(tmp_path: Path, dataroom: Path) -> None:
    entries = parse_matrix({"entries": [{"name": "ok"}, {"name": "overlap", "overrides": {"CHUNK_OVERLAP": 150}}]})
    base = Settings.resolve(env={}, chunk_size=200, chunk_overlap=50)

    def never(*args: Any) -> str:
        raise AssertionError("no run may start")

    with pytest.raises(MatrixError, match="'overlap'.*CHUNK_OVERLAP"):
        run_sweep(entries, QUESTIONS, dataroom, tmp_path / "out", base, run_fn=never)
    assert not (tmp_path / "out").exists()


def test_resuming_into_a_folder_of_another_matrix_is_refused(baseline: Path, dataroom: Path, cache: Path,
                                                             endpoint: ScriptedEndpoint) -> None:
    changed = parse_matrix({"entries": [{"name": "kw-b1", "overrides": {"TURN_BUDGET": 3}}]})
    with pytest.raises(MatrixError, match="'kw-b1' had other overrides"):
        run_sweep(changed, QUESTIONS, dataroom, baseline, base_settings(cache, endpoint.url))


def test_a_resume_with_fewer_entries_keeps_the_rows_of_the_others_and_their_overrides(
        baseline: Path, endpoint: ScriptedEndpoint, dataroom: Path, cache: Path, tmp_path: Path) -> None:
    """Resuming a finished sweep with one of its entries, for more repeats, rewrote results.jsonl with that
    entry's rows only: the other entry's finished runs were gone from it."""
    out = tmp_path / "fewer"
    shutil.copytree(baseline, out)
    before = read_jsonl(out / "results.jsonl")
    [first, second] = parse_matrix(MATRIX)
    base = base_settings(cache, endpoint.url)
    run_sweep([first], QUESTIONS, dataroom, out, base, run_fn=KillingRunFn(), repeats=2)
    rows = read_jsonl(out / "results.jsonl")
    assert [r for r in rows if r["entry"] == second.name] == [r for r in before if r["entry"] == second.name]
    assert {r["repeat"] for r in rows if r["entry"] == first.name} == {1, 2}
    meta = read_json(out / "sweep.json")
    assert [e["name"] for e in meta["matrix"]["entries"]] == [first.name]
    assert meta["earlier_entries"] == {second.name: second.knobs()}
    assert [e["entry"] for e in read_json(out / "summary.json")["entries"]] == [first.name]
    # The entry left out is still checked when a later resume names it again with other overrides.
    changed = parse_matrix({"entries": [{"name": second.name, "overrides": {"TURN_BUDGET": 7}}]})
    with pytest.raises(MatrixError, match=f"'{second.name}' had other overrides"):
        run_sweep(changed, QUESTIONS, dataroom, out, base, run_fn=KillingRunFn())
    # Named again as it was, it resumes with every row in place.
    run_sweep([first, second], QUESTIONS, dataroom, out, base, run_fn=KillingRunFn(), repeats=1)
    assert len(read_jsonl(out / "results.jsonl")) == len(rows)


def test_question_selection() -> None:
    assert [q["id"] for q in select_questions(QUESTIONS, ids=["dublin", "lease"])] == ["lease", "dublin"]
    twin = {**QUESTIONS[0], "id": "lease2"}
    assert [q["id"] for q in select_questions([QUESTIONS[0], twin, *QUESTIONS[1:]], per_type=1)] == [
        "lease", "leave", "dublin"]
    assert [q["id"] for q in select_questions(QUESTIONS, limit=2)] == ["lease", "leave"]
    with pytest.raises(ValueError, match="nope"):
        select_questions(QUESTIONS, ids=["nope"])


def test_repeats_run_every_cell_again_with_its_own_seed(endpoint: ScriptedEndpoint, dataroom: Path, cache: Path,
                                                       tmp_path: Path) -> None:
    before = len(endpoint.requests)
    out = tmp_path / "repeats"
    run_sweep(parse_matrix(MATRIX), QUESTIONS[:2], dataroom, out, base_settings(cache, endpoint.url), repeats=2)
    rows = read_jsonl(out / "results.jsonl")
    assert [(r["entry"], r["question_id"], r["repeat"]) for r in rows] == [
        (e, q["id"], k) for e in ("kw-b1", "none-b2f") for q in QUESTIONS[:2] for k in (1, 2)]
    for row in rows:
        assert row["seed"] == row["repeat"]  # LLM_SEED unset: repeat k samples with seed k, in every entry
        meta = read_json(out / row["job_dir"] / "run_meta.json")
        assert meta["config"]["LLM_SEED"] == row["seed"]
        assert row["job_dir"] == f"runs/{row['entry']}/{row['question_id']}" + ("@r2" if row["repeat"] == 2 else "")
    # The seed reached the model: every request of the sweep carried its run's seed.
    seeds = [request.body.get("seed") for request in endpoint.requests[before:]]
    assert set(seeds) == {1, 2} and seeds.count(1) == seeds.count(2)
    assert read_json(out / "sweep.json")["seeds"] == {"kw-b1": [1, 2], "none-b2f": [1, 2]}
    assert first_seed(Settings.resolve(env={"LLM_SEED": "41"})) == 41

    summary = read_json(out / "summary.json")
    kw = summary["entries"][0]
    assert (kw["runs"], kw["repeats"]) == (4, 2)
    # lease correct (1) and leave partial (0.5) in both repeats: mean 0.75 over 2 questions, Wilson interval.
    assert kw["accuracy_ci"] == {"mean": 0.75, "low": 0.1979, "high": 0.9733, "questions": 2}
    # The scripted model answers both entries alike: two ties, nothing to test.
    assert summary["comparisons"] == [{"a": "kw-b1", "b": "none-b2f", "questions": 2, "wins": 0, "losses": 0,
                                       "ties": 2, "mean_difference": 0.0, "p_value": 1.0}]


def test_more_repeats_into_a_finished_sweep_run_only_the_new_ones(baseline: Path, endpoint: ScriptedEndpoint,
                                                                  dataroom: Path, cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "more"
    shutil.copytree(baseline, out)
    matrix, base = parse_matrix(MATRIX), base_settings(cache, endpoint.url)
    first = KillingRunFn()
    run_sweep(matrix, QUESTIONS, dataroom, out, base, run_fn=first, repeats=2)
    assert first.jobs == [f"{e}/{q['id']}@r2" for e in ("kw-b1", "none-b2f") for q in QUESTIONS]
    rows = read_jsonl(out / "results.jsonl")
    assert len(rows) == 12 and comparable([r for r in rows if r["repeat"] == 1]) == comparable(
        read_jsonl(baseline / "results.jsonl"))
    again = KillingRunFn()
    run_sweep(matrix, QUESTIONS, dataroom, out, base, run_fn=again, repeats=2)
    assert again.jobs == []


def test_knobs_new_since_a_sweep_began_are_recorded_and_said_when_it_resumes(
        baseline: Path, endpoint: ScriptedEndpoint, dataroom: Path, cache: Path, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    # A sweep begun by a version without LLM_THREADS: its earlier runs ran without the knob, so a resume by this
    # version must not pass for the same sweep silently (the base-knob check compares only the knobs it had).
    out = tmp_path / "older"
    shutil.copytree(baseline, out)
    meta = read_json(out / "sweep.json")
    del meta["base_config"]["LLM_THREADS"]
    write_json(out / "sweep.json", meta)
    matrix, base = parse_matrix(MATRIX), base_settings(cache, endpoint.url)
    run_sweep(matrix, QUESTIONS, dataroom, out, base, run_fn=KillingRunFn(), repeats=2)
    assert read_json(out / "sweep.json")["knobs_new_on_resume"] == {"LLM_THREADS": 0}
    assert "began before these knobs existed" in caplog.text and "LLM_THREADS=0" in caplog.text
    # Kept over later resumes, once base_config has the knob.
    run_sweep(matrix, QUESTIONS, dataroom, out, base, run_fn=KillingRunFn(), repeats=2)
    assert read_json(out / "sweep.json")["knobs_new_on_resume"] == {"LLM_THREADS": 0}
    # A sweep begun by this version has none.
    assert "knobs_new_on_resume" not in read_json(baseline / "sweep.json")


def test_a_killed_sweep_with_repeats_resumes_with_the_missing_repeats(endpoint: ScriptedEndpoint, dataroom: Path,
                                                                      cache: Path, tmp_path: Path) -> None:
    matrix, base, out = parse_matrix(MATRIX), base_settings(cache, endpoint.url), tmp_path / "killed"
    first = KillingRunFn("after_run")
    with pytest.raises(KeyboardInterrupt):
        run_sweep(matrix, QUESTIONS[:1], dataroom, out, base, run_fn=first, repeats=2)
    assert first.jobs == ["kw-b1/lease", "none-b2f/lease", "kw-b1/lease@r2"]  # every first repeat before a second
    again = KillingRunFn()
    run_sweep(matrix, QUESTIONS[:1], dataroom, out, base, run_fn=again, repeats=2)
    assert again.jobs == ["none-b2f/lease@r2"]
    assert [(r["entry"], r["repeat"], r["seed"]) for r in read_jsonl(out / "results.jsonl")] == [
        ("kw-b1", 1, 1), ("kw-b1", 2, 2), ("none-b2f", 1, 1), ("none-b2f", 2, 2)]


def judge_or_answer(body: dict[str, Any]) -> Reply:
    """The scripted model as runs and as the judge: a judge prompt gets a verdict."""
    if len(body["messages"]) == 1 and "You grade an answer" in body["messages"][0]["content"]:
        return Reply(text='{"verdict": "correct", "reason": "it names the end date"}')
    return answer_from_content(body)


def test_a_sweep_over_an_adhoc_query_has_behaviour_and_a_kept_judge_but_no_accuracy(
        dataroom: Path, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, matrix = tmp_path / "adhoc", tmp_path / "matrix.json"
    matrix.write_text(json.dumps(MATRIX))
    with ScriptedEndpoint(default=judge_or_answer) as server:
        knobs = {"LLAMA_URL": server.url, "MODEL_ID": "scripted", "RETRIEVAL_PRESET": "packaged",
                 "SEARCHBOX_CACHE_DIR": str(cache)}
        argv = ["ablate", "--matrix", str(matrix), "--dataroom", str(dataroom), "--out", str(out), "--judge",
                "--query", QUESTIONS[0]["question"], *(a for k, v in knobs.items() for a in ("--set", f"{k}={v}"))]
        assert cli_main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "1 ad-hoc question" in printed and "no gold answer, judge: correct" in printed
    assert "  done 2/2, running 0, queued 0 | default model 0/1 | ETA 0:00" in printed  # the status line
    assert "judge accuracy: kw-b1 1.00, none-b2f 1.00" in printed

    rows = read_jsonl(out / "results.jsonl")
    assert [(r["entry"], r["question_id"], r["type"]) for r in rows] == [("kw-b1", "query", "adhoc"),
                                                                          ("none-b2f", "query", "adhoc")]
    for row in rows:
        assert row["tool_counts"] == {"read": 1} and row["tokens"]["total"] > 0 and row["wall_s"] > 0
        # No gold answer, but citations are still checked against their sources.
        assert row["score"] == {"verdict": None, "fact_recall": None, "citation_validity": 1.0,
                                "citation_precision": None, "citation_recall": None, "premise_corrected": None,
                                "citation_supported": 1.0, "facts": [],
                                "grader": {"lexical": LEXICAL_VERSION, "judge": "scripted"}}
        judge = row["judge"]
        assert judge["verdict"] == "correct" and judge["raw"] == '{"verdict": "correct", "reason": "it names the end date"}'
        assert "There is no reference answer" in judge["prompt"] and QUESTIONS[0]["question"] in judge["prompt"]
        assert read_json(out / row["job_dir"] / "score.json")["judge"] == judge
    summary = read_json(out / "summary.json")
    for entry in summary["entries"]:
        assert entry["accuracy"] is None and entry["accuracy_ci"] is None and entry["judge_accuracy"] == 1.0
        assert entry["citation_validity"] == 1.0
    assert summary["comparisons"] == []
    sweep = read_json(out / "sweep.json")
    assert sweep["judge"] == "scripted" and sweep["adhoc_questions"][0]["question"] == QUESTIONS[0]["question"]
    table = summary_table(load_results(out))
    assert "accuracy" not in table and "95% interval" not in table and list(table["citation validity"]) == [1.0, 1.0]
    # The same folder is the same question: another --query would mix two questions' runs in one file.
    argv[argv.index("--query") + 1] = "Something else?"
    assert cli_main(argv) == 2 and "holds a sweep of another question" in capsys.readouterr().err


def test_a_judged_sweep_reports_how_often_the_judge_agrees_with_the_lexical_verdict(
        dataroom: Path, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, matrix, questions = tmp_path / "judged", tmp_path / "matrix.json", tmp_path / "questions.jsonl"
    matrix.write_text(json.dumps({"entries": MATRIX["entries"][:1]}))
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    with ScriptedEndpoint(default=judge_or_answer) as server:  # the judge calls every answer correct
        knobs = {"LLAMA_URL": server.url, "MODEL_ID": "scripted", "RETRIEVAL_PRESET": "packaged",
                 "SEARCHBOX_CACHE_DIR": str(cache)}
        argv = ["ablate", "--matrix", str(matrix), "--dataroom", str(dataroom), "--out", str(out), "--judge",
                "--questions", str(questions), *(a for k, v in knobs.items() for a in ("--set", f"{k}={v}"))]
        assert cli_main(argv) == 0, capsys.readouterr().err
    assert "judge agrees with the lexical verdict: kw-b1 1/3" in capsys.readouterr().out
    rows = read_jsonl(out / "results.jsonl")
    assert [r["score"]["verdict"] for r in rows] == ["correct", "partial", "wrong"]
    assert all(r["score"]["grader"] == {"lexical": LEXICAL_VERSION, "judge": "scripted"} for r in rows)
    [entry] = read_json(out / "summary.json")["entries"]
    assert entry["judge_agreement"] == {"runs": 3, "agree": 1, "rate": 0.3333,
                                        "crosstab": {"correct": {"correct": 1}, "partial": {"correct": 1},
                                                     "wrong": {"correct": 1}}}
    assert entry["graders"] == [f"lexical {LEXICAL_VERSION} + judge scripted"]


def test_query_refuses_a_question_selection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["ablate", "--query", "why?", "--ids", "q001", "--out", str(tmp_path / "x")]) == 2
    assert "--query runs one ad-hoc question" in capsys.readouterr().err
    assert cli_main(["ablate", "--query", "  ", "--out", str(tmp_path / "x")]) == 2
    assert cli_main(["ablate", "--repeats", "0", "--out", str(tmp_path / "x")]) == 2


@pytest.mark.real_model
@pytest.mark.slow
def test_a_sweep_with_the_real_packaged_model_through_the_cli(tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.json"
    matrix.write_text(json.dumps({"entries": [
        {"name": "keyword-b1", "overrides": {"SEARCHBOX_TOOLS": "keyword_search", "TURN_BUDGET": 1}}]}))
    out = tmp_path / "sweep"
    knobs = {"LLM_GGUF": "packaged:gemma3-270m", "RETRIEVAL_PRESET": "packaged", "CONTEXT_WINDOW": "4096",
             "MAX_OUTPUT_TOKENS": "48", "MAX_STEPS_PER_TURN": "2", "FORCE_TOOL_STEPS": "1",
             "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "searchbox", "ablate", "--matrix", str(matrix), "--ids", "q001", "--out", str(out)]
    for knob, value in knobs.items():
        command += ["--set", f"{knob}={value}"]
    env = {k: v for k, v in os.environ.items() if k not in ("LLAMA_URL", "MODEL_ID")} | {"HF_HUB_OFFLINE": "1"}
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    print(f"real-model sweep took {time.monotonic() - started:.1f}s")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[1/1] keyword-b1 q001 r1 (seed 1):" in result.stdout and "top tools" in result.stdout

    [row] = read_jsonl(out / "results.jsonl")
    assert set(row) == ROW_FIELDS and row["endpoint"] is None and row["budget"] == 1
    assert row["score"]["verdict"] in ("correct", "partial", "wrong") and row["tool_calls"] >= 1
    meta = read_json(out / row["job_dir"] / "run_meta.json")
    assert meta["model_id"].startswith("gemma-3-270m") and meta["tools_enabled"]
    assert row["tokens"] == {k: meta["tokens"].get(k, 0) for k in row["tokens"]} and row["turns"] == meta["turns"]
    summary = read_json(out / "summary.json")
    assert summary["runs"] == 1 and summary["entries"][0]["entry"] == "keyword-b1"
    assert read_json(out / "sweep.json")["question_ids"] == ["q001"]


def test_endpoints_name_their_slots_inline_or_in_a_pool_file(tmp_path: Path) -> None:
    assert parse_endpoints("http://a:8080/v1=4, http://b:8080/v1") == [Server("http://a:8080/v1", 4),
                                                                       Server("http://b:8080/v1", 1)]
    pool = tmp_path / "pool.txt"
    pool.write_text("# llama-server --parallel 4 on each\nhttp://gpu1:8080/v1=4\n\nhttp://gpu2:8080/v1?k=v=2  # two\n")
    assert parse_endpoints(f"@{pool}") == [Server("http://gpu1:8080/v1", 4), Server("http://gpu2:8080/v1?k=v", 2)]
    for bad, message in [("http://a/v1=0", "at least 1"), ("http://a/v1=x", "whole number"), (" , ", "no endpoint"),
                         ("http://a/v1,http://a/v1=2", "named twice"), (f"@{tmp_path / 'none.txt'}", "cannot read")]:
        with pytest.raises(PoolError, match=message):
            parse_endpoints(bad)


class Concurrency:
    """A scripted model that answers slowly and counts the requests it holds at once."""

    def __init__(self, latency: float) -> None:
        self.latency, self.now, self.most = latency, 0, 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.latency)
        with self.lock:
            self.now -= 1
        return answer_from_content(body)


def test_a_server_gets_at_most_its_slots_of_runs_at_once(dataroom: Path, cache: Path, tmp_path: Path) -> None:
    model = Concurrency(0.2)
    with ScriptedEndpoint(default=model) as server:
        run_sweep(parse_matrix(MATRIX), QUESTIONS, dataroom, tmp_path / "slots", base_settings(cache),
                  endpoints=[Server(server.url, 2)])
    assert model.most == 2  # six runs, two at a time: never a third
    assert len(read_jsonl(tmp_path / "slots" / "results.jsonl")) == 6


def test_a_server_that_does_not_answer_leaves_the_pool_and_its_runs_go_to_the_others(
        baseline: Path, dataroom: Path, cache: Path, tmp_path: Path) -> None:
    gone = ScriptedEndpoint()
    dead = gone.start()
    gone.stop()  # its port refuses every connection now
    statuses: list[SweepStatus] = []
    with ScriptedEndpoint(default=answer_from_content) as live:
        base = base_settings(cache).with_overrides(llm_attempts=1)
        run_sweep(parse_matrix(MATRIX), QUESTIONS, dataroom, tmp_path / "drop", base,
                  endpoints=[Server(dead), Server(live.url)], status=statuses.append)
        url = live.url
    rows = read_jsonl(tmp_path / "drop" / "results.jsonl")
    assert {r["endpoint"] for r in rows} == {url} and {r["stop_reason"] for r in rows} != {"error_llm"}
    assert comparable(rows, "endpoint") == comparable(read_jsonl(baseline / "results.jsonl"), "endpoint")
    assert read_json(tmp_path / "drop" / "sweep.json")["dropped_servers"] == [dead]
    last = statuses[-1]
    assert (last.done, last.total, last.running, last.queued) == (6, 6, 0, 0)
    assert last.line() == f"done 6/6, running 0, queued 0 | {url} 0/1 | ETA 0:00"


def test_a_pool_with_no_server_left_stops_the_sweep_resumably(dataroom: Path, cache: Path, tmp_path: Path) -> None:
    gone = ScriptedEndpoint()
    dead = gone.start()
    gone.stop()
    with pytest.raises(PoolError, match="no server left"):
        run_sweep(parse_matrix(MATRIX), QUESTIONS, dataroom, tmp_path / "none", base_settings(cache).with_overrides(
            llm_attempts=1), endpoints=[Server(dead)])
    assert read_jsonl(tmp_path / "none" / "results.jsonl") == []  # no failed run counted as a result


def test_a_server_counts_as_up_when_anything_answers_http() -> None:
    with ScriptedEndpoint() as server:  # it answers GET with 501: up all the same
        assert endpoint_answers(server.url)
        assert endpoint_answers(server.url.replace("http://", "http://user:secret@"))  # credentials in the URL
        url = server.url
    assert not endpoint_answers(url, timeout=2)  # nothing listens there now


def test_a_ray_task_sends_back_only_the_regular_files_of_its_job(tmp_path: Path) -> None:
    """What confined bash left in work/ travels from the node to the driver only as the app would open it:
    no link followed, no FIFO waited on, no hard link to a host file, nothing past the size cap."""
    from searchbox.evaluation.sweep_ray import pack_job, unpack_job
    from searchbox.jobs.bundle import FILE_MAX_BYTES

    host = tmp_path / "host-secret.txt"
    host.write_text("HOST-SECRET")
    job = tmp_path / "node-job"
    (job / "work" / "notes").mkdir(parents=True)
    (job / "session.jsonl").write_text('{"type": "message"}\n')
    (job / "work" / "ANSWER.md").write_text("the answer [s1]\n")
    (job / "work" / "notes" / "kept.md").write_text("kept")
    (job / "work" / "link.md").symlink_to(host)
    (job / "work" / "linked-folder").symlink_to(tmp_path)
    os.link(host, job / "work" / "hard.md")
    os.mkfifo(job / "work" / "fifo")
    with open(job / "work" / "huge.bin", "wb") as handle:
        handle.truncate(FILE_MAX_BYTES + 1)

    driver = tmp_path / "driver-job"
    (driver / "work" / "dataroom").mkdir(parents=True)
    unpack_job(driver, pack_job(job))
    got = sorted(p.relative_to(driver).as_posix() for p in driver.rglob("*"))
    assert got == ["session.jsonl", "work", "work/ANSWER.md", "work/dataroom", "work/notes", "work/notes/kept.md"]
    assert "HOST-SECRET" not in "".join(p.read_text() for p in driver.rglob("*") if p.is_file())
