"""A sweep's report (design §4): `out/report.html`, one self-contained page with a summary table per entry
and every chart, and each chart as `out/charts/<name>.png` rendered by headless Chromium.

The folder is an ablation sweep's (results.jsonl, sweep.json) and/or a retrieval evaluation's
(retrieval.json). The page inlines plotly.js from the plotly package: the app may run with no network.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from searchbox.evaluation import report_charts as charts
from searchbox.evaluation.files import RESULTS, RETRIEVAL, SWEEP, VERDICT_POINTS
from searchbox.evaluation.intervals import accuracy_interval, format_p, paired_comparison, question_means
from searchbox.evaluation.report_graders import graders_html, keep_graders_apart
from searchbox.records.events import NO_ANSWER
from searchbox.records.files import read_json, read_jsonl

SUMMARY_COLUMNS = ["entry", "runs", "questions", "accuracy", "95% interval", "fact recall", "citation validity",
                   "citation precision", "supported citations", "assist firings", "turns", "tokens", "reasoning tokens", "wall s",
                   "no answer"]
# Scores against a gold answer: a sweep of ad-hoc questions (ablate --query) has none of them.
_GOLD_COLUMNS = ["accuracy", "95% interval", "fact recall", "citation precision"]
PAIRED_COLUMNS = ["A", "B", "questions", "A wins", "A loses", "ties", "mean difference", "p (sign test)"]
INTERVAL_NOTE = ("Accuracy: correct 1, partial ½, averaged over a question's repeats, then over questions. "
                 "95% interval: Wilson's score interval with n = questions (repeats of one question are not "
                 "independent); a question's score lies in [0, 1], so it is conservative under partial credit.")
PAIRED_NOTE = ("Paired comparison: on each question both scored, A wins if its accuracy (averaged over repeats) "
               "is higher, loses if lower; p is the exact two-sided sign test of wins against losses (ties left out).")
_NUMERIC = ["budget", "turns", "tool_calls", "wall_s", "accuracy", "score.fact_recall", "score.citation_validity",
            "score.citation_precision", "score.citation_recall", "score.citation_supported", "tokens.input", "tokens.output",
            "tokens.cacheRead", "tokens.cacheWrite", "tokens.reasoning", "tokens.total"]
_BASE = {"entry": "", "question_id": "", "type": None, "repeat": 1, "seed": None, "overrides": None, "budget": None,
         "force_budget": False, "stop_reason": None,
         "turns": None, "tool_calls": None, "tool_counts": None, "bash_programs": None, "wall_s": None, "harness": None}
_FIRINGS = "assist_firings."  # the columns of firings per assist, one per assist that was on
# The budget knobs: entries that differ only in these are one configuration, a line on the budget curve.
_BUDGET_KNOBS = {"turn_budget", "force_budget"}
# "high-b4f", "high_level_b4", "dense-budget-8", "x@4": a budget an entry name may end with.
_BUDGET_SUFFIX = re.compile(r"(?:[-_@:/ ]+(?:budget|turns?|b)?[-_=:]?|(?:budget|b)[-_=:]?)(?P<n>\d+)(?:f|forced)?$", re.I)
_CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"]


def load_results(out: Path, pool_harnesses: bool = False) -> pd.DataFrame:
    """The runs of `out/results.jsonl`, one row each; ValueError when the file is missing."""
    path = Path(out) / RESULTS
    if not path.is_file():
        raise ValueError(f"no {RESULTS} in {out}: run `python -m searchbox ablate ... --out {out}` first")
    return results_frame(read_jsonl(path), pool_harnesses)


def results_frame(rows: list[dict[str, Any]], pool_harnesses: bool = False) -> pd.DataFrame:
    """Result rows as a DataFrame: score.*, tokens.* and assist_firings.* flattened to columns, plus
    `accuracy` (the verdict as 1 / 0.5 / 0), `harness` (harness_label), `config` (the tool configuration
    the budget curve draws a line for) and `grader` (report_graders.py). An entry whose runs ran under
    different harnesses (version, commit, assists, parser) becomes one entry per harness, named with it,
    unless `pool_harnesses`; an entry graded by different graders is always one entry per grader."""
    base = pd.DataFrame([{key: row.get(key, default) for key, default in _BASE.items()} for row in rows],
                        columns=list(_BASE))
    base = keep_graders_apart(base, rows)  # rows graded differently are never pooled
    base["harness"] = [harness_label(h) for h in base["harness"]]
    if not pool_harnesses and not base.empty:
        mixed = base.groupby("entry")["harness"].transform("nunique") > 1
        base.loc[mixed, "entry"] = base.loc[mixed, "entry"] + " [" + base.loc[mixed, "harness"] + "]"
    nested = [pd.json_normalize([row.get(part) or {} for row in rows]).add_prefix(f"{part}.")
              for part in ("score", "tokens", "assist_firings")]
    df = pd.concat([base, *(n.reindex(base.index) for n in nested)], axis=1)
    df["accuracy"] = df["score.verdict"].map(VERDICT_POINTS) if "score.verdict" in df else None
    for column in _NUMERIC:
        df[column] = pd.to_numeric(df[column], errors="coerce") if column in df else float("nan")
    df["force_budget"] = df["force_budget"].fillna(False).astype(bool)
    df["config"] = configurations(df)
    return df


def harness_label(harness: dict[str, Any] | None) -> str:
    """A run's harness in a few words: name, version, commit, the assists that were on, the tool-call parser."""
    if not isinstance(harness, dict):
        return "harness unrecorded"
    commit = f" @{str(harness['commit'])[:8]}" if harness.get("commit") else ""
    assists = ", ".join(harness.get("assists") or []) or "none"
    return (f"{harness.get('name')} {harness.get('version')}{commit}; assists: {assists}; "
            f"parsing: {harness.get('tool_call_parsing', 'strict')}")


def configurations(df: pd.DataFrame) -> list[str]:
    """Each run's configuration: its overrides apart from the budget knobs (for a tool ablation, its
    SEARCHBOX_TOOLS), named by its entries' names without their budget suffixes ("high-b4f" -> "high")."""
    keys = [json.dumps({k.lower(): v for k, v in (o or {}).items() if k.lower() not in _BUDGET_KNOBS},
                       sort_keys=True, default=str) for o in df["overrides"]]
    names: dict[str, list[str]] = {}
    for key, entry, budget in zip(keys, df["entry"], df["budget"]):
        name = strip_budget(entry, None if pd.isna(budget) else int(budget))
        if name not in names.setdefault(key, []):
            names[key].append(name)
    return [" / ".join(names[key]) for key in keys]


def strip_budget(entry: str, budget: int | None) -> str:
    """The entry name without a suffix naming `budget`; a number that isn't the budget ("qwen-32") stays."""
    match = _BUDGET_SUFFIX.search(entry)
    if match and match.start() > 0 and budget is not None and int(match["n"]) == budget:
        return entry[: match.start()]
    return entry


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per entry, in sweep order: runs, questions, the mean accuracy over questions with its 95% interval
    (see intervals.py), and the mean fact recall, citation validity and precision, supported citations
    (the share the checker found their sources support), turns, tokens (and of them, reasoning tokens; none
    in a sweep from before they were counted) and wall seconds of a run, and the runs that ended without an answer.
    Without a gold answer in the whole sweep the accuracy columns are left out."""
    if df.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    groups = df.groupby("entry", sort=False)
    intervals = {entry: accuracy_interval(zip(runs["question_id"], runs["accuracy"])) for entry, runs in groups}
    table = pd.DataFrame({
        "runs": groups.size(), "questions": groups["question_id"].nunique(),
        "accuracy": pd.Series({e: i.mean if i else None for e, i in intervals.items()}, dtype=float),
        "95% interval": pd.Series({e: f"{i.low:.2f} – {i.high:.2f}" if i else None for e, i in intervals.items()},
                                  dtype=object),
        "fact recall": groups["score.fact_recall"].mean(), "citation validity": groups["score.citation_validity"].mean(),
        "citation precision": groups["score.citation_precision"].mean(),
        "supported citations": groups["score.citation_supported"].mean(),
        "assist firings": pd.Series({entry: assist_firings(runs) for entry, runs in groups}, dtype=object),
        "turns": groups["turns"].mean(),
        "tokens": groups["tokens.total"].mean(), "reasoning tokens": groups["tokens.reasoning"].mean(),
        "wall s": groups["wall_s"].mean(),
        # Runs that ended without an answer (stop reason no_answer): not done, whatever they scored.
        "no answer": groups["stop_reason"].agg(lambda reasons: int((reasons == NO_ANSWER).sum())),
    }).rename_axis("entry").reset_index()
    table = table.round({"accuracy": 3, "fact recall": 3, "citation validity": 3, "citation precision": 3,
                         "supported citations": 3, "turns": 1, "tokens": 0, "reasoning tokens": 0,
                         "wall s": 1})
    return table.drop(columns=_GOLD_COLUMNS) if df["accuracy"].isna().all() else table


def assist_firings(runs: pd.DataFrame) -> str:
    """Mean firings per run of each assist that was on in these runs ("ask_sources 0.8, wrap_up 0.1"), or "none"."""
    means = {column.removeprefix(_FIRINGS): runs[column].mean() for column in runs.columns
             if column.startswith(_FIRINGS) and runs[column].notna().any()}
    return ", ".join(f"{name} {mean:.2g}" for name, mean in means.items()) or "none"


def paired_table(df: pd.DataFrame, pairs: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """A against B question by question (see intervals.py), for these pairs of entries or every pair in
    sweep order; pairs with no question scored by both are left out."""
    scored = df.dropna(subset=["accuracy"]) if not df.empty else df
    order = list(dict.fromkeys(scored["entry"])) if not scored.empty else []
    means = {entry: question_means(zip(runs["question_id"], runs["accuracy"]))
             for entry, runs in scored.groupby("entry", sort=False)}
    if pairs is None:
        pairs = [(a, b) for i, a in enumerate(order) for b in order[i + 1:]]
    rows = []
    for a, b in pairs:
        paired = paired_comparison(means.get(a, {}), means.get(b, {}))
        if paired is not None:
            rows.append([a, b, paired.questions, paired.wins, paired.losses, paired.ties,
                         round(paired.mean_difference, 3), format_p(paired.p_value)])
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS)


def report_figures(df: pd.DataFrame | None, retrieval: dict[str, Any] | None) -> dict[str, go.Figure]:
    """Every chart the folder has data for, by the name its div and PNG take."""
    figures: dict[str, go.Figure] = {}
    if df is not None:
        figures |= {"score_by_type": charts.score_by_type(df), "budget_curve": charts.budget_curve(df),
                    "tool_usage": charts.tool_usage(df), "cost": charts.cost(df)}
    if retrieval is not None:
        figures |= {"recall_by_method": charts.recall_by_method(retrieval),
                    "recall_by_type": charts.recall_by_type(retrieval)}
    return figures


def load_folder(out: Path, pool_harnesses: bool = False) -> tuple[pd.DataFrame | None, dict[str, Any] | None,
                                                                  dict[str, Any] | None]:
    """(results, retrieval.json, sweep.json) of a report folder, each None when absent; ValueError when
    the folder holds neither results nor a retrieval evaluation."""
    out = Path(out)
    has_results, has_retrieval = (out / RESULTS).is_file(), (out / RETRIEVAL).is_file()
    if not (has_results or has_retrieval):
        raise ValueError(f"nothing to report in {out}: no {RESULTS} (python -m searchbox ablate) "
                         f"and no {RETRIEVAL} (python -m searchbox retrieval-eval)")
    retrieval = read_json(out / RETRIEVAL) if has_retrieval else None
    if has_retrieval and not isinstance(retrieval, dict):
        raise ValueError(f"{out / RETRIEVAL} is not a retrieval evaluation (unreadable JSON)")
    return load_results(out, pool_harnesses) if has_results else None, retrieval, read_json(out / SWEEP)


def write_report(out: Path, on_note: Callable[[str], None] = lambda note: None, pool_harnesses: bool = False) -> Path:
    """Write out/report.html and out/charts/*.png; the PNGs are skipped (with a note) without Chromium.
    Runs of one entry under different harnesses are reported apart unless `pool_harnesses`."""
    out = Path(out)
    df, retrieval, sweep = load_folder(out, pool_harnesses)
    figures = report_figures(df, retrieval)
    page = out / "report.html"
    page.write_text(render_html(out.name, df, retrieval, sweep, figures), encoding="utf-8")
    pngs = render_pngs(page, list(figures), out / "charts", on_note)
    if pngs:
        on_note(f"{len(pngs)} chart PNGs written to {out / 'charts'}")
    return page


def render_html(name: str, df: pd.DataFrame | None, retrieval: dict[str, Any] | None,
                sweep: dict[str, Any] | None, figures: dict[str, go.Figure]) -> str:
    def chart(key: str) -> str:
        return figures[key].to_html(full_html=False, include_plotlyjs=False, div_id=f"chart-{key}",
                                    config={"displaylogo": False, "responsive": True})

    sections = []
    if df is not None:
        runs = (f"{len(df)} runs of {df['entry'].nunique()} entries over {df['question_id'].nunique()} questions"
                if not df.empty else "No runs in results.jsonl yet.")
        table = summary_table(df)
        for column in ("tokens", "reasoning tokens"):
            table[column] = table[column].map(lambda n: "–" if pd.isna(n) else f"{n:,.0f}")
        notes = f"<p class='note'>{html.escape(INTERVAL_NOTE)}</p>" if "accuracy" in table else (
            "<p class='note'>No gold answer (an ad-hoc question): behaviour only, no accuracy.</p>")
        table = table.to_html(index=False, na_rep="–", border=0, classes="summary") + notes
        paired = paired_table(df)
        if not paired.empty:
            table += (f"<h3>Paired comparisons</h3>{paired.to_html(index=False, border=0, classes='summary')}"
                      f"<p class='note'>{html.escape(PAIRED_NOTE)}</p>")
        table += graders_html(df)
        sweep_details = (f"<details><summary>sweep.json</summary><pre>{html.escape(json.dumps(sweep, indent=2))}</pre></details>"
                         if sweep else "")
        charts_html = "".join(chart(k) for k in ("score_by_type", "budget_curve", "tool_usage", "cost"))
        sections.append(f"<h2>Ablation sweep</h2><p>{html.escape(runs)}</p>{table}{sweep_details}{charts_html}")
    if retrieval is not None:
        sections.append(f"<h2>Retrieval-only evaluation</h2><p>Gold-file recall@k, no LLM involved.</p>"
                        f"{chart('recall_by_method')}{chart('recall_by_type')}")
    return _PAGE.format(title=html.escape(f"searchbox report: {name}"), plotlyjs=get_plotlyjs(),
                        body="".join(f"<section>{s}</section>" for s in sections))


def render_pngs(page: Path, keys: list[str], folder: Path, on_note: Callable[[str], None]) -> list[Path]:
    """Screenshot each chart's div of the report in headless Chromium; [] (and a note) when it can't."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.png"):  # a skipped render must not leave an older report's PNGs behind
        stale.unlink()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        on_note("chart PNGs skipped: no chromium on this machine (the HTML report has every chart)")
        return []
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=_CHROMIUM_ARGS)
            try:
                tab = browser.new_page(viewport={"width": 1200, "height": 900})
                tab.goto(page.resolve().as_uri(), wait_until="load")
                paths = []
                for key in keys:
                    tab.wait_for_selector(f"#chart-{key} .main-svg", timeout=30_000)
                    paths.append(folder / f"{key}.png")
                    tab.locator(f"#chart-{key}").screenshot(path=str(paths[-1]))
                return paths
            finally:
                browser.close()
    except Exception as exc:  # PNGs are extras: any browser failure leaves the HTML report standing
        on_note(f"chart PNGs skipped: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return []


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<script>{plotlyjs}</script>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1150px; margin: 24px auto; padding: 0 16px; color: #212121; }}
table.summary {{ border-collapse: collapse; margin: 12px 0 20px; font-size: 14px; }}
table.summary th, table.summary td {{ padding: 4px 10px; border-bottom: 1px solid #e0e0e0; text-align: right; }}
table.summary th:first-child, table.summary td:first-child {{ text-align: left; }}
.plotly-graph-div {{ margin-bottom: 18px; }}
p.note {{ font-size: 13px; color: #616161; max-width: 900px; }}
pre {{ background: #f5f5f5; padding: 8px; overflow-x: auto; }}
</style></head>
<body><h1>{title}</h1>{body}</body></html>
"""
