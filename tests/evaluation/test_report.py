"""Reports of an ablation sweep and a retrieval evaluation: the charts, the HTML page, its PNGs, the
report command and the app's Compare tab, all from hand-built result files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs

from searchbox.evaluation import report_charts as charts
from searchbox.evaluation.intervals import wilson
from searchbox.evaluation.report_graders import fact_table, grader_table
from searchbox.evaluation.report import (configurations, load_results, paired_table, report_figures, results_frame,
                                         strip_budget, summary_table, write_report)
from searchbox.settings import Settings
from searchbox.ui.compare_view import CompareView, sweep_folders

TYPES = ["literal", "paraphrased", "multihop", "aggregate", "negative"]
ENTRIES = {  # entry: (overrides, budget, forced)
    "high_level_b1": ({"searchbox_tools": "search_dataroom,answer_question", "turn_budget": 1}, 1, True),
    "high_level_b4": ({"searchbox_tools": "search_dataroom,answer_question", "turn_budget": 4, "force_budget": True}, 4, True),
    "no_tools_b1": ({"searchbox_tools": "", "turn_budget": 1}, 1, True),
    "no_tools_b4": ({"searchbox_tools": "", "turn_budget": 4, "force_budget": True}, 4, True),
    "baseline": ({}, 10, False),
}
CHART_TITLES = ["Accuracy by configuration and question type", "Accuracy against turn budget (budget forcing)",
                "Tool calls per run (bash by program)", "Tokens and wall time per run",
                "Retrieval recall@k by method", "Retrieval recall@5 by question type"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def result_row(entry: str, index: int, qtype: str) -> dict[str, Any]:
    overrides, budget, forced = ENTRIES[entry]
    grep_only = overrides.get("searchbox_tools") == ""
    verdict = ("correct", "partial", "wrong")[(index * budget + len(entry)) % 3]
    tool_counts = {"bash": 3, "read": 1} if grep_only else {"search_dataroom": 2, "answer_question": 1, "bash": 1}
    programs = {"grep": 2, "head": 1, "wc": 1} if grep_only else {"ls": 1}
    cited = index % 2 == 0
    tokens = {"input": 4000 * budget, "output": 300 * budget, "cacheRead": 2500 * budget, "cacheWrite": 0}
    return {
        "entry": entry, "question_id": f"q{index:03d}", "type": qtype, "overrides": overrides,
        "endpoint": None, "stop_reason": "budget" if forced else "done", "done": True,
        "turns": budget if forced else 3, "budget": budget, "force_budget": forced and budget > 1,
        "tokens": tokens | {"total": tokens["input"] + tokens["output"]},
        "tool_calls": sum(tool_counts.values()), "tool_counts": tool_counts, "bash_programs": programs,
        "wall_s": 12.5 * budget + index,
        "score": {"verdict": verdict, "fact_recall": {"correct": 1.0, "partial": 0.5, "wrong": 0.0}[verdict],
                  "citation_validity": 1.0 if cited else None, "citation_precision": 0.5 if cited else None,
                  "citation_recall": 1.0 if cited else None,
                  "premise_corrected": (verdict == "correct") if qtype == "negative" else None},
        "job_dir": f"runs/{entry}/q{index:03d}",
    }


def retrieval_result() -> dict[str, Any]:
    methods = {}
    for rank, method in enumerate(("grep", "bm25", "dense", "hybrid", "dense+rerank")):
        recall = {f"R@{k}": round(min(1.0, 0.3 + 0.1 * rank + 0.05 * k), 4) for k in (1, 5, 10)}
        methods[method] = {"all": recall, "by_type": {t: {k: round(v * (0.6 + 0.08 * i), 4) for k, v in recall.items()}
                                                      for i, t in enumerate(TYPES)}}
    return {"questions": 10, "methods": methods, "per_question": []}


def write_sweep(folder: Path, retrieval: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [result_row(entry, i, TYPES[i % len(TYPES)]) for entry in ENTRIES for i in range(10)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "sweep.json").write_text(json.dumps({"matrix": {e: o for e, (o, _, _) in ENTRIES.items()},
                                                   "question_ids": [f"q{i:03d}" for i in range(10)], "wall_s": 812.4}))
    if retrieval:
        (folder / "retrieval.json").write_text(json.dumps(retrieval_result()))
    return folder


def is_empty(figure: go.Figure) -> bool:
    return any(a.text == "no data" for a in figure.layout.annotations)


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    return write_sweep(tmp_path / "sweep")


def test_results_are_flattened_with_accuracy_and_configuration(sweep: Path) -> None:
    df = load_results(sweep)
    assert len(df) == 50 and {"score.verdict", "score.citation_precision", "tokens.total", "accuracy", "config"} <= set(df.columns)
    assert set(df["accuracy"]) == {0.0, 0.5, 1.0}
    assert df["score.citation_precision"].isna().sum() == 25
    configs = dict(zip(df["entry"], df["config"]))
    assert configs["high_level_b1"] == configs["high_level_b4"] == "high_level"
    assert configs["no_tools_b4"] == "no_tools" and configs["baseline"] == "baseline"

    table = summary_table(df)
    assert list(table["entry"]) == list(ENTRIES) and set(table["runs"]) == {10}
    assert table.loc[table["entry"] == "no_tools_b4", "tokens"].item() == 4 * 4300


def test_configuration_is_the_overrides_but_the_budget() -> None:
    assert strip_budget("high-b4f", 4) == "high" and strip_budget("high_level_b4", 4) == "high_level"
    assert strip_budget("dense-budget-8", 8) == "dense" and strip_budget("qwen-32", 4) == "qwen-32"
    rows = [{"entry": name, "budget": budget, "overrides": {"SEARCHBOX_TOOLS": tools, "TURN_BUDGET": budget}}
            for name, tools, budget in (("high-b1", "a,b", 1), ("high-b4f", "a,b", 4), ("fast", "", 1), ("slow", "", 8))]
    assert configurations(results_frame(rows)) == ["high", "high", "fast / slow", "fast / slow"]


def test_every_chart_has_data(sweep: Path) -> None:
    df = load_results(sweep)
    figures = report_figures(df, json.loads((sweep / "retrieval.json").read_text()))
    assert [f.layout.title.text.split(" (")[0] for f in figures.values()] == [t.split(" (")[0] for t in CHART_TITLES]
    assert not any(is_empty(f) for f in figures.values())
    curve = figures["budget_curve"]
    lines = {t.name: t for t in curve.data}
    assert set(lines) == {"high_level", "no_tools", "baseline", "forced", "not forced"}
    assert list(lines["high_level"].x) == [1, 4] and lines["high_level"].marker.color[0] == "white"  # b1 unforced
    tools = {t.name: t for t in figures["tool_usage"].data}
    assert {"bash: grep", "bash: head", "search_dataroom", "read"} <= set(tools) and "bash" not in tools
    assert dict(zip(tools["bash: grep"].y, tools["bash: grep"].x))["no_tools_b1"] == 2


def test_runs_under_different_harnesses_are_apart_unless_pooled(tmp_path: Path) -> None:
    """A sweep resumed with other code, or other assists, must not pool its runs into one figure."""
    old = {"name": "native", "version": "0.1.0", "commit": "a" * 40, "assists": [], "tool_call_parsing": "strict"}
    new = {**old, "commit": "b" * 40, "assists": ["ask_sources", "wrap_up"]}
    rows = [result_row("baseline", 0, "literal") | {"harness": old},
            result_row("baseline", 1, "literal") | {"harness": new, "assist_firings": {"ask_sources": 2, "wrap_up": 0}},
            result_row("baseline", 2, "literal") | {"harness": new, "assist_firings": {"ask_sources": 1, "wrap_up": 1}},
            result_row("no_tools_b1", 0, "literal")]  # recorded before runs named their harness: one harness
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = summary_table(load_results(folder))
    assert list(table["entry"]) == ["baseline [native 0.1.0 @aaaaaaaa; assists: none; parsing: strict]",
                                    "baseline [native 0.1.0 @bbbbbbbb; assists: ask_sources, wrap_up; parsing: strict]",
                                    "no_tools_b1"]
    assert list(table["runs"]) == [1, 2, 1]
    assert list(table["assist firings"]) == ["none", "ask_sources 1.5, wrap_up 0.5", "none"]
    pooled = summary_table(load_results(folder, pool_harnesses=True))
    assert list(pooled["entry"]) == ["baseline", "no_tools_b1"] and list(pooled["runs"]) == [3, 1]
    text = write_report(folder, pool_harnesses=False).read_text()
    assert "assist firings" in text and "@bbbbbbbb" in text


def test_every_chart_shows_no_data_on_empty_input() -> None:
    empty = results_frame([])
    figures = [charts.score_by_type(empty), charts.budget_curve(empty), charts.tool_usage(empty), charts.cost(empty),
               charts.recall_by_method(None), charts.recall_by_type({"methods": {}})]
    assert all(is_empty(f) for f in figures)
    assert summary_table(empty).empty


@pytest.mark.browser
def test_report_is_self_contained_with_every_chart_and_pngs(sweep: Path) -> None:
    notes: list[str] = []
    page = write_report(sweep, on_note=notes.append)
    text = page.read_text()
    for key in ("score_by_type", "budget_curve", "tool_usage", "cost", "recall_by_method", "recall_by_type"):
        assert f'id="chart-{key}"' in text
    for title in CHART_TITLES:
        assert title in text
    assert not re.search(r"<script[^>]*\bsrc=", text), "the report must not load scripts from anywhere"
    assert text.count(get_plotlyjs()[-300:]) == 1  # the library inlined once, not once per chart
    assert "high_level_b4" in text and "citation precision" in text
    pngs = sorted((sweep / "charts").glob("*.png"))
    if CHROMIUM is None:
        assert pngs == [] and any("skipped" in n for n in notes)
        return
    assert [p.stem for p in pngs] == sorted(["score_by_type", "budget_curve", "tool_usage", "cost",
                                             "recall_by_method", "recall_by_type"]), notes
    assert all(p.stat().st_size > 5_000 for p in pngs)


def test_empty_and_missing_results(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to report"):
        write_report(tmp_path)
    (tmp_path / "results.jsonl").write_text("")
    notes: list[str] = []
    text = write_report(tmp_path, on_note=notes.append).read_text()
    assert "No runs in results.jsonl yet." in text and "no data" in text


def test_retrieval_only_folder(tmp_path: Path) -> None:
    (tmp_path / "retrieval.json").write_text(json.dumps(retrieval_result()))
    text = write_report(tmp_path, on_note=lambda note: None).read_text()
    assert 'id="chart-recall_by_type"' in text and 'id="chart-cost"' not in text


@pytest.mark.browser
def test_report_command(sweep: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "searchbox", "report", str(sweep)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=180)
    assert done.returncode == 0, done.stderr
    assert str(sweep / "report.html") in done.stdout
    assert ("PNGs written" in done.stdout) == (CHROMIUM is not None)
    missing = subprocess.run([sys.executable, "-m", "searchbox", "report", str(sweep / "nope")], capture_output=True,
                             text=True, cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert missing.returncode == 2 and "nothing to report" in missing.stderr


def test_compare_view_loads_a_sweep_folder(tmp_path: Path) -> None:
    settings = Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / "jobs"))
    folder = write_sweep(tmp_path / "sweeps" / "exp1")
    write_sweep(tmp_path / "sweeps" / "exp2", retrieval=False)
    assert sweep_folders(settings) == ["exp2", folder.name]  # newest first, by name: the page shows no path
    view = CompareView(settings)
    with gr.Blocks():
        view.build()
    heading, table, pairs, pick_a, pick_b, *figures = view.load("exp1")  # a name under sweeps/ or a full path
    assert "50 runs" in heading
    assert isinstance(table, pd.DataFrame) and list(table["entry"]) == list(ENTRIES) and "95% interval" in table
    assert len(pairs) == 10 and pick_a["choices"] == pick_b["choices"] == list(ENTRIES)
    assert (pick_a["value"], pick_b["value"]) == ("high_level_b1", "high_level_b4")
    assert len(figures) == 6 and all(isinstance(f, go.Figure) for f in figures)
    assert not any(is_empty(f) for f in figures)
    _, _, _, _, _, *figures = view.load(str(tmp_path / "sweeps" / "exp2"))
    assert is_empty(figures[-1]) and not is_empty(figures[0])  # no retrieval.json there
    with pytest.raises(gr.Error):
        view.load(str(tmp_path / "nowhere"))
    outside = write_sweep(tmp_path / "elsewhere")
    with pytest.raises(gr.Error, match="operator"):  # a demo's visitors see only the sweeps folder
        view.load(str(outside))
    assert CompareView(settings.with_overrides(searchbox_operator=True)).load(str(outside))[1] is not None


def test_runs_graded_differently_are_never_pooled_and_every_fact_verdict_is_shown(tmp_path: Path) -> None:
    rows = []
    for i in range(4):
        row = result_row("baseline", i, TYPES[i])
        if i >= 2:  # scored again by the claim-reading matcher, with a judge; the first two rows predate graders
            fact = {"fact": "three (3) years", "kind": "must", "status": "contradicted",
                    "explanation": '2 where the fact has 3 (beside \'years\') in "an initial two-year term"'}
            row["score"] = row["score"] | {"grader": {"lexical": 2, "judge": "judge-7b"}, "facts": [fact]}
            row["judge"] = {"model": "judge-7b", "verdict": "correct" if i == 2 else "wrong"}
        rows.append(row)
    folder = tmp_path / "sweeps" / "mixed"
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    df = load_results(folder)
    old, new = "baseline [lexical 1]", "baseline [lexical 2 + judge judge-7b]"
    assert list(dict.fromkeys(df["entry"])) == [old, new]
    assert list(summary_table(df)["entry"]) == [old, new]
    graders = grader_table(df).set_index("entry")
    assert graders.loc[new, "contradicted"] == 2 and graders.loc[new, "facts present"] == 0
    agree = sum(r["judge"]["verdict"] == r["score"]["verdict"] for r in rows[2:])
    assert graders.loc[new, "judged runs"] == 2 and graders.loc[new, "judge agrees"] == f"{agree} of 2"
    assert graders.loc[old, "judged runs"] == 0 and graders.loc[old, "contradicted"] == "–"
    facts = fact_table(df)
    assert list(facts["question"]) == ["q002", "q003"] and set(facts["verdict"]) == {"contradicted"}

    text = write_report(folder, on_note=lambda note: None).read_text()
    assert "<h3>Graders</h3>" in text and "lexical 2 + judge judge-7b" in text
    assert "Fact verdicts (2 facts of 4 runs)" in text and "2 where the fact has 3" in text
    assert "2 runs were recorded before scores kept each fact" in text

    view = CompareView(Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / "jobs")))
    shown_graders, shown_facts = view.graders("mixed")
    assert shown_graders.equals(grader_table(df)) and shown_facts.equals(facts)


def repeated_sweep(folder: Path) -> Path:
    """Two entries, twelve questions, three repeats each: forced-3 beats budget 1 on 8 questions (right in
    every repeat against wrong in every repeat), loses 1, and ties 3 (both right in 2 of 3 repeats)."""
    rows = []
    for i in range(12):
        for repeat in (1, 2, 3):
            b1 = "wrong" if i < 8 else "correct" if i == 8 else ("correct" if repeat < 3 else "wrong")
            b3 = "correct" if i < 8 else "wrong" if i == 8 else ("correct" if repeat > 1 else "wrong")
            for entry, budget, verdict in (("dense-b1", 1, b1), ("dense-b3f", 3, b3)):
                row = result_row("high_level_b1", i, TYPES[i % 5]) | {"entry": entry, "repeat": repeat, "seed": repeat,
                                                                     "budget": budget, "force_budget": budget > 1}
                row["overrides"] = {"SEARCHBOX_TOOLS": "search_dataroom", "TURN_BUDGET": budget}
                row["score"] = row["score"] | {"verdict": verdict}
                rows.append(row)
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_repeats_get_intervals_a_paired_test_and_error_bars(tmp_path: Path) -> None:
    folder = repeated_sweep(tmp_path / "sweeps" / "repeats")
    df = load_results(folder)
    table = summary_table(df).set_index("entry")
    # budget 1: questions 8 (1), 9-11 (2/3 each), the rest 0 -> (1 + 3 * 2/3) / 12 = 0.25
    low, high = wilson(0.25, 12)
    assert table.loc["dense-b1", "accuracy"] == 0.25 and table.loc["dense-b1", "questions"] == 12
    assert table.loc["dense-b1", "95% interval"] == f"{low:.2f} – {high:.2f}" == "0.09 – 0.53"
    assert table.loc["dense-b3f", "accuracy"] == 0.833 and table.loc["dense-b3f", "runs"] == 36

    [pair] = paired_table(df).to_dict("records")
    assert pair == {"A": "dense-b1", "B": "dense-b3f", "questions": 12, "A wins": 1, "A loses": 8, "ties": 3,
                    "mean difference": -0.583, "p (sign test)": "0.039"}
    assert paired_table(df, [("dense-b3f", "dense-b1")]).iloc[0]["A wins"] == 8

    curve = charts.budget_curve(df)
    [line] = [t for t in curve.data if t.name == "dense"]
    assert list(line.x) == [1, 3] and line.error_y.array is not None
    assert line.y[0] - line.error_y.arrayminus[0] == pytest.approx(low)
    assert line.y[0] + line.error_y.array[0] == pytest.approx(high)

    text = write_report(folder, on_note=lambda note: None).read_text()
    assert "95% interval" in text and "0.09 – 0.53" in text and "Wilson" in text
    assert "Paired comparisons" in text and "0.039" in text and "sign test" in text

    view = CompareView(Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / "jobs")))
    shown = view.compare("repeats", "dense-b3f", "dense-b1")
    assert "wins 8, loses 1, ties 3" in shown and "p = 0.039" in shown and "unlikely by chance" in shown
    assert "accuracy 0.83 (95% interval" in shown and "over 12 questions, 36 runs" in shown
    with pytest.raises(gr.Error, match="two different"):
        view.compare("repeats", "dense-b1", "dense-b1")


def test_small_sweep_runs_in_the_background(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchbox.evaluation import sweep
    from searchbox.evaluation.matrix import DEFAULT_MATRIX_PATH, load_matrix

    calls, release = [], threading.Event()

    def fake_sweep(matrix, questions, dataroom, out, base, progress=None, **_):
        release.wait(10)
        calls.append((len(matrix), sorted(q["type"] for q in questions)))
        write_sweep(out, retrieval=False)
        for done in range(1, 4):
            progress({}, done, len(matrix) * len(questions))
        return out / "results.jsonl"

    monkeypatch.setattr(sweep, "run_sweep", fake_sweep)
    settings = Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / "jobs"))
    with pytest.raises(gr.Error, match="operator"):
        CompareView(settings).start_sweep()
    view = CompareView(settings.with_overrides(searchbox_operator=True))
    assert "running" in view.start_sweep() and "0 of " in view.status()
    with pytest.raises(gr.Error, match="already running"):
        view.start_sweep()
    release.set()
    view._thread.join(10)
    entries = len(load_matrix(DEFAULT_MATRIX_PATH))
    assert calls == [(entries, sorted(TYPES))]  # the default matrix, one question per type
    assert view.status().startswith("Sweep finished") and f"3 of {entries * 5} runs" in view.status()
    assert sweep_folders(settings) == [view.sweep.folder.name]


@pytest.mark.slow
def test_the_compare_tab_shows_intervals_and_a_paired_comparison_in_the_real_app(tmp_path: Path) -> None:
    from gradio_client import Client

    from testkit.app_server import running_app

    home = tmp_path / "home"
    repeated_sweep(home / "sweeps" / "repeats")  # the app keeps its jobs in home/jobs, its sweeps beside them
    with running_app(home) as url:
        client = Client(url, verbose=False)
        heading, table, pairs, pick_a, pick_b, *_ = client.predict("repeats", api_name="/compare_load")
        shown = client.predict("repeats", "dense-b3f", "dense-b1", api_name="/compare_pair")
    assert "72 runs" in heading
    assert "95% interval" in table["headers"] and ["0.09 – 0.53"] == [r[4] for r in table["data"] if r[0] == "dense-b1"]
    assert pairs["data"] == [["dense-b1", "dense-b3f", 12, 1, 8, 3, -0.583, "0.039"]]
    assert "wins 8, loses 1, ties 3" in shown and "p = 0.039" in shown
