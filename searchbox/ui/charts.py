"""The dashboard's Plotly figures, each built from plain data (rows, counts, timings).

Every function returns a titled, compact `go.Figure` and never raises on empty data: it shows
"no data yet" instead, so the live view can draw before the first turn ends.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from searchbox import inert
from searchbox.charts import HEIGHT, count_step, empty_figure, layout, share_text
from searchbox.evaluation.report_charts import TOOL_COLORS

_GAUGE_COLOR = "#1e88e5"
_LABEL_CHARS = 28  # a longer tool or program name is cut at a word's end on the axis; the hover has it whole
_SLICE_TEXT_MIN = 0.08  # a slice narrower than this has its share in the legend only: inside, it hit its neighbour's


def axis_label(name: str) -> str:
    if len(name) <= _LABEL_CHARS:
        return name
    cut = name[:_LABEL_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


# The parts of a turn's tokens, stacked: they sum to its total. Reasoning is drawn only in a run that had some.
TOKEN_PARTS = (("input", "input (uncached)"), ("cacheRead", "cache read"), ("output", "output"),
               ("reasoning", "reasoning"))


def turn_deltas(turn_rows: list[dict[str, Any]]) -> list[dict[str, int]]:
    """Per-turn token use from turns.jsonl's cumulative totals. Prompt tokens include those read from the
    cache, so the uncached part is input - cacheRead; output tokens include the reasoning, so the rest of the
    output is output - reasoning; the four parts then sum to total."""
    deltas, previous = [], {"input": 0, "output": 0, "cacheRead": 0, "reasoning": 0}
    for row in sorted(turn_rows, key=lambda r: r["turn"]):
        tokens = row.get("tokens") or {}
        step = {key: int(tokens.get(key, 0)) - previous[key] for key in previous}
        deltas.append({"turn": int(row["turn"]), "input": step["input"] - step["cacheRead"],
                       "cacheRead": step["cacheRead"], "output": step["output"] - step["reasoning"],
                       "reasoning": step["reasoning"]})
        previous = {key: int(tokens.get(key, 0)) for key in previous}
    return deltas


def tokens_per_turn(turn_rows: list[dict[str, Any]]) -> go.Figure:
    title = "Tokens per turn"
    deltas = turn_deltas(turn_rows)
    if not deltas:
        return empty_figure(title)
    turns = [d["turn"] for d in deltas]
    figure = go.Figure([
        go.Bar(name=label, x=turns, y=[d[key] for d in deltas], hovertemplate=f"turn %{{x}}<br>{label}: %{{y:,}}<extra></extra>")
        for key, label in TOKEN_PARTS if key != "reasoning" or any(d["reasoning"] for d in deltas)
    ])
    figure.update_layout(barmode="stack")
    figure.update_xaxes(title_text="turn", dtick=1)
    figure.update_yaxes(title_text="tokens")
    return layout(figure, title)


def tool_distribution(tool_counts: dict[str, int], bash_programs: dict[str, int]) -> go.Figure:
    """Calls per tool, with bash replaced by the programs its commands ran (a pipeline counts each)."""
    title = "Tool calls (bash by program)"
    bars = [(name, count) for name, count in tool_counts.items() if name != "bash" and count]
    if bash_programs:
        bars += [(f"bash: {program}", count) for program, count in bash_programs.items() if count]
    elif tool_counts.get("bash"):
        bars.append(("bash", tool_counts["bash"]))
    if not bars:
        return empty_figure(title)
    bars.sort(key=lambda bar: (bar[1], bar[0]))  # largest at the top of a horizontal chart
    # The names are the model's (a made-up tool, the programs of its command lines): Plotly text, inert.
    figure = go.Figure(go.Bar(
        x=[b[1] for b in bars], y=[inert.plotly(axis_label(b[0])) for b in bars], orientation="h",
        marker_color=[TOOL_COLORS(b[0]) for b in bars], customdata=[inert.plotly(b[0]) for b in bars],
        hovertemplate="%{customdata}: %{x}<extra></extra>"))
    figure.update_xaxes(title_text="calls", tickformat="d", dtick=count_step(max(b[1] for b in bars)), rangemode="tozero")
    figure.update_yaxes(title_text=None, automargin=True)
    height = max(HEIGHT, 60 + 24 * len(bars))  # keeps a label per bar readable
    return layout(figure, title, height)


def wall_time_split(timing: dict[str, Any]) -> go.Figure:
    """LLM, tools and the rest (retrieval loading, records, scheduling) out of the wall time."""
    wall, llm, tools = (float(timing.get(key) or 0) for key in ("wall_ms", "llm_ms", "tool_ms"))
    title = "Wall time"
    if wall <= 0:
        return empty_figure(title)
    parts = {"LLM": llm, "tools": tools, "other": max(0.0, wall - llm - tools)}
    total = sum(parts.values()) or 1.0
    shares = {name: ms / total for name, ms in parts.items()}
    # Each part's name and share in the legend, where Plotly lays the entries out apart; inside a slice
    # only the shares of wide slices, so two thin neighbours never print over each other.
    figure = go.Figure(go.Pie(
        labels=[f"{name} {share_text(share)}" for name, share in shares.items()],
        values=[ms / 1000 for ms in parts.values()], hole=0.5, sort=False, text=[share_text(share) if share >= _SLICE_TEXT_MIN else "" for share in shares.values()],
        customdata=[share_text(share) for share in shares.values()],
        textinfo="text", textposition="inside", insidetextorientation="horizontal",
        hovertemplate="%{label}: %{value:.1f} s (%{customdata})<extra></extra>"))
    figure.update_layout(uniformtext={"minsize": 10, "mode": "hide"})
    return layout(figure, f"{title}: {wall / 1000:,.1f} s")


def context_usage(points: list[dict[str, Any]], window: int | None, compactions: list[dict[str, Any]]) -> go.Figure:
    """Context tokens at each step (`points`: step, turn, tokens) against the window; a compaction
    (`step`, `tokens_before`) sits between the steps it came between."""
    title = "Context window use"
    if not points:
        return empty_figure(title)
    figure = go.Figure(go.Scatter(
        x=[p["step"] for p in points], y=[p["tokens"] for p in points], mode="lines+markers", name="context",
        customdata=[p.get("turn") for p in points], hovertemplate="step %{x} (turn %{customdata})<br>%{y:,} tokens<extra></extra>"))
    if compactions:
        figure.add_trace(go.Scatter(
            x=[c["step"] for c in compactions], y=[c.get("tokens_before", 0) for c in compactions], mode="markers",
            name="compaction", marker={"symbol": "x", "size": 11, "color": "#e53935"},
            hovertemplate="compaction<br>%{y:,} tokens before<extra></extra>"))
    if window:
        figure.add_hline(y=window, line_dash="dash", line_color="#757575",
                         annotation_text=f"window {window:,}", annotation_position="top left")
        figure.update_yaxes(range=[0, window * 1.08])
    figure.update_xaxes(title_text="step", tickformat="d", dtick=count_step(len(points), 8))
    figure.update_yaxes(title_text="tokens")
    return layout(figure, title)


def budget_gauge(turns_done: int, budget: int | None, decode_tps: float | None = None,
                 prefill_tps: float | None = None) -> go.Figure:
    """Turns done of the budget, with the decode and prefill speeds beside it."""
    title = "Turn budget and speed"
    if not budget:
        return empty_figure(title)
    figure = go.Figure(go.Indicator(
        mode="gauge+number", value=turns_done,
        # "turns" rides with the number, which Plotly sizes to fit the gauge: as the gauge's own title
        # it was drawn inside the number's box.
        number={"suffix": f" / {budget} turns"},
        gauge={"axis": {"range": [0, budget], "tickmode": "linear", "tick0": 0, "dtick": count_step(budget),
                        "tickformat": "d"}, "bar": {"color": _GAUGE_COLOR}}, domain={"x": [0, 0.55], "y": [0, 1]}))
    for row, (label, rate) in enumerate((("decode tok/s", decode_tps), ("prefill tok/s", prefill_tps))):
        if rate is not None:
            figure.add_trace(go.Indicator(
                mode="number", value=rate, number={"valueformat": ",.1f"}, title={"text": label},
                domain={"x": [0.62, 1], "y": [0.55, 1] if row == 0 else [0, 0.45]}))
    return layout(figure, title)
