"""Each tool has one colour, the same in every chart: the dashboard's and the report's (issue 14, item 6)."""

from __future__ import annotations

import pandas as pd

from searchbox.charts import ToolColors
from searchbox.evaluation import report_charts
from searchbox.evaluation.report_charts import TOOL_COLORS
from searchbox.tools.registry import REGISTRY
from searchbox.ui import charts

EVERY_TOOL = list(REGISTRY)


def test_every_tool_of_the_catalog_has_a_colour_of_its_own() -> None:
    colors = {name: TOOL_COLORS(name) for name in EVERY_TOOL}
    assert len(set(colors.values())) == len(EVERY_TOOL) == 16
    # The pairs an 8-colour palette gave one colour in docs/report/tool_usage.png.
    for one, other in (("read", "grep"), ("write", "answer_question"), ("search_dataroom", "ls")):
        assert colors[one] != colors[other]
    programs = {TOOL_COLORS(f"bash: {p}") for p in ("grep", "cat", "head", "sed", "awk", "wc", "sort", "find")}
    assert not programs & set(colors.values())  # bash's programs are shades of bash, never another tool's colour
    assert TOOL_COLORS("bash: grep") == ToolColors(EVERY_TOOL)("bash: grep")  # the same in every process
    assert TOOL_COLORS("teleport") not in colors.values()  # a made-up tool takes no real tool's colour


def test_the_dashboard_and_the_report_draw_a_tool_in_the_same_colour() -> None:
    tool_counts = {"read": 3, "grep": 2, "search_dataroom": 4, "write": 1, "answer_question": 1, "ls": 2, "bash": 3}
    programs = {"grep": 2, "head": 1}
    dashboard = charts.tool_distribution(tool_counts, programs).data[0]
    in_dashboard = dict(zip(dashboard.y, dashboard.marker.color))
    runs = pd.DataFrame([{"entry": "grep-only", "tool_counts": tool_counts, "bash_programs": programs},
                         {"entry": "dense", "tool_counts": {"search_dataroom": 2, "read": 1}, "bash_programs": {}}])
    in_report = {bar.name: bar.marker.color for bar in report_charts.tool_usage(runs).data}
    names = ["read", "grep", "search_dataroom", "write", "answer_question", "ls", "bash: grep", "bash: head"]
    assert set(in_dashboard) == set(in_report) == set(names)
    assert all(in_dashboard[name] == in_report[name] == TOOL_COLORS(name) for name in names)
    assert len({in_report[name] for name in names}) == len(names)
    # Every segment of the report's stacked bars also says which tool it is, where it has room.
    assert all(list(bar.text) == [bar.name] * 2 for bar in report_charts.tool_usage(runs).data)
