"""The report's Plotly figures (design §4): scores by configuration, budget and question type, which tools
each configuration reached for, its cost, and retrieval-only recall.

The sweep figures take the DataFrame of `report.load_results` (one row per run, score.* and tokens.*
flattened, plus `accuracy` and the configuration `config`); the recall figures take retrieval.json as
a dict. Every function returns a titled `go.Figure` and never raises on empty input: it shows "no data".
The names in a sweep folder (entries, configurations, question types, tools, methods) are anybody's
files: every one is shown as Plotly text made inert (searchbox.inert).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import cycle
from typing import Any

import pandas as pd
import plotly.colors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from searchbox import inert
from searchbox.charts import HEIGHT, ToolColors, empty_figure, layout
from searchbox.evaluation.intervals import accuracy_interval
from searchbox.evaluation.questions import QUESTION_TYPES
from searchbox.tools.registry import REGISTRY

# A verdict as a number, so a mean is an accuracy that gives half credit for a partial answer.
_ACCURACY_AXIS = "accuracy (correct 1, partial ½)"
_CONFIG_COLORS = plotly.colors.qualitative.Set2
# Each tool's colour in every chart, the dashboard's too: by its place among the built-ins and the catalog.
TOOL_COLORS = ToolColors(list(REGISTRY))


def _labels(values: Any) -> list[str]:
    return [inert.plotly(value) for value in values]


def entries(df: pd.DataFrame) -> list[str]:
    """Entries in sweep order (first appearance), the order every figure and table uses."""
    return list(dict.fromkeys(df["entry"])) if not df.empty else []


def question_types(values: pd.Series) -> list[str]:
    present = set(values.dropna())
    return [t for t in QUESTION_TYPES if t in present] + sorted(present - set(QUESTION_TYPES))


def score_by_type(df: pd.DataFrame) -> go.Figure:
    """Grouped bars: accuracy per entry, one bar per question type."""
    title = "Accuracy by configuration and question type"
    scored = df.dropna(subset=["accuracy"]) if not df.empty else df
    if scored.empty:
        return empty_figure(title, "no data")
    order = entries(scored)
    stats = scored.groupby(["type", "entry"])["accuracy"].agg(["mean", "count"])
    bars = []
    for qtype in question_types(scored["type"]):
        rows = stats.loc[qtype].reindex(order)
        bars.append(go.Bar(
            name=inert.plotly(qtype), x=_labels(order), y=rows["mean"], customdata=rows["count"].fillna(0),
            hovertemplate=f"%{{x}} · {inert.plotly(qtype)}<br>accuracy %{{y:.2f}} over %{{customdata}} runs<extra></extra>"))
    figure = go.Figure(bars)
    figure.update_layout(barmode="group")
    figure.update_yaxes(title_text=_ACCURACY_AXIS, range=[0, 1.05])
    figure.update_xaxes(title_text=None, automargin=True)
    return layout(figure, title, HEIGHT + 60)


def budget_curve(df: pd.DataFrame) -> go.Figure:
    """Budget forcing: accuracy against the turn budget, a line per configuration through its budgets,
    with 95% intervals over questions as error bars (see intervals.py); forced runs are filled markers,
    unforced ones open (at budget 1 the two are the same run)."""
    title = "Accuracy against turn budget (budget forcing), 95% intervals"
    scored = df.dropna(subset=["accuracy", "budget"]) if not df.empty else df
    if scored.empty:
        return empty_figure(title, "no data")
    points_of = []
    for (config, budget, forced), runs in scored.groupby(["config", "budget", "force_budget"], sort=True):
        interval = accuracy_interval(zip(runs["question_id"], runs["accuracy"]))
        points_of.append({"config": config, "budget": budget, "force_budget": forced, "mean": interval.mean,
                          "low": interval.low, "high": interval.high, "runs": len(runs),
                          "questions": interval.questions})
    stats = pd.DataFrame(points_of)
    figure = go.Figure()
    for config, color in zip(dict.fromkeys(scored["config"]), cycle(_CONFIG_COLORS)):
        points = stats[stats["config"] == config]
        figure.add_trace(go.Scatter(
            x=points["budget"], y=points["mean"], name=inert.plotly(config), mode="lines+markers", line={"color": color},
            marker={"size": 11, "color": [color if f else "white" for f in points["force_budget"]],
                    "line": {"width": 2, "color": color}},
            error_y={"type": "data", "symmetric": False, "array": points["high"] - points["mean"],
                     "arrayminus": points["mean"] - points["low"], "color": color, "thickness": 1.5, "width": 6},
            customdata=list(zip(points["runs"], ["forced" if f else "not forced" for f in points["force_budget"]],
                                points["low"], points["high"], points["questions"])),
            hovertemplate=f"{inert.plotly(config)}<br>budget %{{x}} (%{{customdata[1]}}): accuracy %{{y:.2f}} "
                          "(95% interval %{customdata[2]:.2f}–%{customdata[3]:.2f}) "
                          "over %{customdata[0]} runs of %{customdata[4]} questions<extra></extra>"))
    for label, fill in (("forced", "#616161"), ("not forced", "white")):  # legend keys for the marker fill
        figure.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label,
                                    marker={"size": 11, "color": fill, "line": {"width": 2, "color": "#616161"}}))
    figure.update_xaxes(title_text="turn budget", tickmode="array", tickvals=sorted(scored["budget"].unique()))
    figure.update_yaxes(title_text=_ACCURACY_AXIS, range=[0, 1.05])
    return layout(figure, title, HEIGHT + 60)


def tool_usage(df: pd.DataFrame) -> go.Figure:
    """Which tools each entry reaches for: stacked bars of mean calls per run by tool, bash broken down
    by the programs its commands ran ("bash: grep"; a pipeline counts each)."""
    title = "Tool calls per run (bash by program)"
    if df.empty:
        return empty_figure(title, "no data")
    order = entries(df)
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in df.itertuples(index=False):
        for name, count in run_tool_counts(row.tool_counts, row.bash_programs).items():
            totals[name][row.entry] += count
    if not totals:
        return empty_figure(title, "no data")
    runs = df["entry"].value_counts()
    tools = sorted(totals, key=lambda name: (name.startswith("bash"), -sum(totals[name].values()), name))
    # Shades of bash's colour can look alike: each segment is also labelled with its tool where it fits.
    figure = go.Figure([
        go.Bar(name=inert.plotly(name), y=_labels(order), x=[totals[name][e] / runs[e] for e in order], orientation="h",
               marker_color=TOOL_COLORS(name), text=[inert.plotly(name)] * len(order), textposition="inside",
               insidetextanchor="middle", hovertemplate=f"%{{y}}<br>{inert.plotly(name)}: %{{x:.2f}} calls per run<extra></extra>")
        for name in tools
    ])
    figure.update_layout(barmode="stack", legend={"traceorder": "normal"}, uniformtext={"minsize": 9, "mode": "hide"})
    figure.update_xaxes(title_text="mean calls per run")
    figure.update_yaxes(title_text=None, automargin=True, categoryorder="array", categoryarray=_labels(order[::-1]))
    # A legend of many tools wraps upwards over the title: the top margin grows by its rows (about 6 a row).
    legend_px = 22 * -(-len(tools) // 6)
    figure = layout(figure, title, max(HEIGHT, 120 + 36 * len(order)) + legend_px)
    figure.update_layout(margin={"t": 45 + legend_px})
    return figure


def run_tool_counts(tool_counts: Any, bash_programs: Any) -> dict[str, int]:
    """One run's calls per tool, with bash replaced by its programs when they were recorded."""
    counts = {name: int(n) for name, n in (tool_counts or {}).items() if name != "bash" and n}
    programs = {f"bash: {p}": int(n) for p, n in (bash_programs or {}).items() if n}
    bash = int((tool_counts or {}).get("bash") or 0)
    return counts | (programs or ({"bash": bash} if bash else {}))


def cost(df: pd.DataFrame) -> go.Figure:
    """Tokens (uncached input, cache read, output, reasoning) and wall time per run, side by side per entry."""
    title = "Tokens and wall time per run"
    if df.empty:
        return empty_figure(title, "no data")
    order = entries(df)
    columns = ["tokens.input", "tokens.cacheRead", "tokens.output", "tokens.reasoning", "wall_s"]
    means = df.groupby("entry")[columns].mean().reindex(order)
    # Prompt tokens include those read from the cache, output tokens the reasoning (as in charts.turn_deltas):
    # the parts sum to total.
    reasoning = means["tokens.reasoning"].fillna(0)
    parts = {"input (uncached)": (means["tokens.input"] - means["tokens.cacheRead"]).clip(lower=0),
             "cache read": means["tokens.cacheRead"], "output": means["tokens.output"] - reasoning}
    if reasoning.any():
        parts["reasoning"] = reasoning
    figure = make_subplots(rows=1, cols=2, horizontal_spacing=0.1)
    for name, values in parts.items():
        figure.add_trace(go.Bar(name=name, x=_labels(order), y=values.fillna(0),
                                hovertemplate=f"%{{x}}<br>{name}: %{{y:,.0f}}<extra></extra>"), row=1, col=1)
    figure.add_trace(go.Bar(name="wall time", x=_labels(order), y=means["wall_s"].fillna(0), marker_color="#757575",
                            showlegend=False, hovertemplate="%{x}<br>%{y:,.1f} s<extra></extra>"), row=1, col=2)
    figure.update_layout(barmode="stack")
    figure.update_yaxes(title_text="mean tokens per run", row=1, col=1)
    figure.update_yaxes(title_text="mean wall seconds per run", row=1, col=2)
    figure.update_xaxes(automargin=True)
    return layout(figure, title, HEIGHT + 60)


def recall_by_method(retrieval: dict[str, Any] | None) -> go.Figure:
    """Retrieval-only gold-file recall@k of each method over all questions."""
    title = "Retrieval recall@k by method"
    methods = (retrieval or {}).get("methods") or {}
    if not methods:
        return empty_figure(title, "no data")
    keys = _recall_keys(scores["all"] for scores in methods.values())
    figure = go.Figure([
        go.Bar(name=inert.plotly(key), x=_labels(methods), y=[scores["all"].get(key) for scores in methods.values()],
               hovertemplate=f"%{{x}}<br>{inert.plotly(key)} %{{y:.3f}}<extra></extra>")
        for key in keys
    ])
    figure.update_layout(barmode="group")
    figure.update_yaxes(title_text="gold-file recall", range=[0, 1.05])
    return layout(figure, f"{title} ({inert.plotly(retrieval.get('questions', '?'))} questions)")


def recall_by_type(retrieval: dict[str, Any] | None, k: int = 5) -> go.Figure:
    """Where dense retrieval adds nothing over grep: recall@k per question type, a bar per method."""
    title = f"Retrieval recall@{k} by question type"
    methods = (retrieval or {}).get("methods") or {}
    types = question_types(pd.Series([t for scores in methods.values() for t in scores.get("by_type", {})], dtype=object))
    if not types:
        return empty_figure(title, "no data")
    figure = go.Figure([
        go.Bar(name=inert.plotly(method), x=_labels(types), y=[scores["by_type"].get(t, {}).get(f"R@{k}") for t in types],
               hovertemplate=f"%{{x}} · {inert.plotly(method)}<br>R@{k} %{{y:.3f}}<extra></extra>")
        for method, scores in methods.items()
    ])
    figure.update_layout(barmode="group")
    figure.update_yaxes(title_text=f"gold-file recall@{k}", range=[0, 1.05])
    return layout(figure, title, HEIGHT + 40)


def _recall_keys(groups: Any) -> list[str]:
    keys = {key for group in groups for key in group}
    return sorted(keys, key=lambda key: int(key.partition("@")[2] or 0))
