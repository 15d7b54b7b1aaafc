"""Dashboard charts: built from live events and from a finished run's records, and from nothing."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest

from test_ui_feed import run_scripted_job
from searchbox.ui import charts
from searchbox.ui.dashboard import Dashboard

KEYS = {"tokens", "tools", "time", "context", "budget"}


def is_empty(figure: go.Figure) -> bool:
    return any(a.text == "no data yet" for a in figure.layout.annotations)


@pytest.fixture(scope="module")
def live_and_recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dashboard, Dashboard, Path]:
    live = Dashboard(context_window=2048, budget=2)
    job_dir, _ = run_scripted_job(tmp_path_factory.mktemp("charts"), listeners=[live.add])
    return live, Dashboard.from_records(job_dir), job_dir


def test_live_and_recorded_dashboards_agree(live_and_recorded: tuple[Dashboard, Dashboard, Path]) -> None:
    live, recorded, _ = live_and_recorded
    assert live.stats.tools == recorded.stats.tools == {"bash": 2, "read": 1}
    assert live.stats.programs == recorded.stats.programs == {"grep": 1, "head": 1, "cat": 1}
    assert charts.turn_deltas(live.turn_rows) == charts.turn_deltas(recorded.turn_rows)
    assert live.points == recorded.points and live.compactions == recorded.compactions
    assert live.turns_done == recorded.turns_done == 2 and live.budget == recorded.budget == 2
    assert recorded.context_window == 2048
    assert live.stats.llm_ms == pytest.approx(recorded.stats.llm_ms, abs=1) and live.stats.tool_ms == pytest.approx(recorded.stats.tool_ms, abs=1)
    assert live.stats.decode == pytest.approx(recorded.stats.decode)


def test_every_figure_builds_from_real_records(live_and_recorded: tuple[Dashboard, Dashboard, Path]) -> None:
    _, recorded, _ = live_and_recorded
    figures = recorded.figures()
    assert set(figures) == KEYS
    for key, figure in figures.items():
        assert isinstance(figure, go.Figure) and figure.layout.title.text and not is_empty(figure), key
        assert figure.layout.height <= 400, key
        figure.to_json()  # serializable, as gr.Plot sends it
    tokens = figures["tokens"]
    # Turn 1: the step calls, the compaction call (900/40) included; turn 2: one call. The first step's reasoning
    # ("Let me look.", in four streamed deltas) is its own part of turn 1's output.
    assert [t.name for t in tokens.data] == ["input (uncached)", "cache read", "output", "reasoning"]
    assert list(tokens.data[0].y) == [300 + 1600 + 900 + 700, 800] and list(tokens.data[2].y) == [102 - 4, 10]
    assert list(tokens.data[3].y) == [4, 0]
    context = figures["context"]
    assert list(context.data[0].y) == [320, 1630, 712, 810]
    assert list(context.data[1].x) == [2.5] and list(context.data[1].y) == [1630]  # the compaction marker
    assert figures["budget"].data[0].value == 2 and figures["time"].layout.title.text.startswith("Wall time:")


def test_every_figure_handles_empty_data() -> None:
    figures = Dashboard().figures()
    assert set(figures) == KEYS and all(is_empty(f) and f.layout.title.text for f in figures.values())
    assert is_empty(charts.tokens_per_turn([]))
    assert is_empty(charts.tool_distribution({}, {})) and is_empty(charts.tool_distribution({"ls": 0}, {}))
    assert is_empty(charts.wall_time_split({})) and is_empty(charts.wall_time_split({"wall_ms": 0, "llm_ms": 5}))
    assert is_empty(charts.context_usage([], 8192, []))
    assert is_empty(charts.budget_gauge(0, None)) and is_empty(charts.budget_gauge(0, 0))


def test_per_turn_tokens_are_deltas_of_the_cumulative_totals() -> None:
    rows = [
        {"turn": 2, "tokens": {"input": 5000, "output": 300, "cacheRead": 2500, "cacheWrite": 0, "total": 5300}},
        {"turn": 1, "tokens": {"input": 1000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "total": 1100}},
        {"turn": 3, "tokens": {"input": 9000, "output": 350, "cacheRead": 6000, "cacheWrite": 0, "total": 9350}},
    ]
    assert charts.turn_deltas(rows) == [
        {"turn": 1, "input": 1000, "cacheRead": 0, "output": 100, "reasoning": 0},
        {"turn": 2, "input": 1500, "cacheRead": 2500, "output": 200, "reasoning": 0},
        {"turn": 3, "input": 500, "cacheRead": 3500, "output": 50, "reasoning": 0},
    ]
    figure = charts.tokens_per_turn(rows)
    assert figure.layout.barmode == "stack" and list(figure.data[0].x) == [1, 2, 3]
    assert [list(t.y) for t in figure.data] == [[1000, 1500, 500], [0, 2500, 3500], [100, 200, 50]]
    # The stack of each turn adds up to the turn's total.
    assert [sum(t.y[i] for t in figure.data) for i in range(3)] == [1100, 4200, 4050]
    assert figure.layout.xaxis.title.text == "turn" and figure.layout.yaxis.title.text == "tokens"


def test_reasoning_tokens_are_their_own_part_of_the_output_never_counted_twice() -> None:
    rows = [
        {"turn": 1, "tokens": {"input": 1000, "output": 400, "cacheRead": 0, "reasoning": 300, "total": 1400}},
        {"turn": 2, "tokens": {"input": 3000, "output": 500, "cacheRead": 1000, "reasoning": 320, "total": 3500}},
    ]
    figure = charts.tokens_per_turn(rows)
    assert [t.name for t in figure.data] == ["input (uncached)", "cache read", "output", "reasoning"]
    assert list(figure.data[2].y) == [100, 80] and list(figure.data[3].y) == [300, 20]
    assert [sum(t.y[i] for t in figure.data) for i in range(2)] == [1400, 2100]


def test_bash_is_broken_down_by_program() -> None:
    figure = charts.tool_distribution({"bash": 3, "read": 2, "keyword_search": 4}, {"grep": 3, "head": 1, "cat": 1})
    bars = dict(zip(figure.data[0].y, figure.data[0].x))
    assert bars == {"keyword_search": 4, "bash: grep": 3, "read": 2, "bash: head": 1, "bash: cat": 1}
    assert list(figure.data[0].y)[-1] == "keyword_search"  # the largest is drawn at the top
    # A bash whose commands named no program still shows.
    assert dict(zip(*(charts.tool_distribution({"bash": 2}, {}).data[0][k] for k in ("y", "x")))) == {"bash": 2}


def test_wall_time_split_and_the_budget_gauge() -> None:
    figure = charts.wall_time_split({"wall_ms": 10_000, "llm_ms": 6_000, "tool_ms": 3_000})
    assert dict(zip(figure.data[0].labels, figure.data[0].values)) == {"LLM 60%": 6.0, "tools 30%": 3.0, "other 10%": 1.0}
    gauge = charts.budget_gauge(3, 8, decode_tps=42.5, prefill_tps=None)
    assert [t.value for t in gauge.data] == [3, 42.5] and gauge.data[0].gauge.axis.range == (0, 8)


def test_tiny_shares_and_one_turn_runs_draw_labels_that_cannot_collide() -> None:
    """The issue's run: tools 4.48% and other 0.0478% were printed over each other, and a one-turn
    run's gauge had a tick at 0.5 turn."""
    figure = charts.wall_time_split({"wall_ms": 100_000, "llm_ms": 95_470, "tool_ms": 4_482})
    pie = figure.data[0]
    assert list(pie.labels) == ["LLM 95%", "tools 4.5%", "other <1%"]
    assert list(pie.text) == ["95%", "", ""]  # thin slices say their share in the legend only
    assert figure.layout.margin.t > 45 and figure.layout.legend.y > 1  # the legend sits under the title
    gauge = charts.budget_gauge(1, 1).data[0].gauge.axis
    assert (gauge.tickmode, gauge.tick0, gauge.dtick, gauge.tickformat) == ("linear", 0, 1, "d")
    tools = charts.tool_distribution({"read": 1, "a_tool_with_a_very_long_made_up_name_indeed": 1}, {})
    assert all(len(label) <= 28 for label in tools.data[0].y) and tools.layout.xaxis.dtick == 1
    assert "a_tool_with_a_very_long_made_up_name_indeed" in tools.data[0].customdata


def test_context_usage_draws_the_window_and_compactions() -> None:
    points = [{"step": 1, "turn": 1, "tokens": 3000}, {"step": 2, "turn": 1, "tokens": 7000}, {"step": 3, "turn": 2, "tokens": 2000}]
    figure = charts.context_usage(points, 8192, [{"step": 2.5, "tokens_before": 7000}])
    assert [t.name for t in figure.data] == ["context", "compaction"]
    assert figure.layout.shapes[0].y0 == 8192 and figure.layout.yaxis.range[1] > 8192
