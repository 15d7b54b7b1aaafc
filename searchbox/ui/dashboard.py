"""The run dashboard's state: what the charts need, accumulated from live events or rebuilt from a
finished run's records, so that a past run's dashboard looks like the live one did.

To follow a resumed run, start from `Dashboard.from_records(job_dir)` and `add` the new events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from searchbox.records.events import Compaction, Event, RunStart, StepEnd, TurnEnd, TurnStart, load_events
from searchbox.records.job_folder import JobFolder
from searchbox.records.stats import RunStats
from searchbox.ui import charts

@dataclass
class Dashboard:
    context_window: int | None = None
    budget: int | None = None
    turns_done: int = 0
    turn_rows: list[dict[str, Any]] = field(default_factory=list)  # {turn, tokens (cumulative)}
    points: list[dict[str, Any]] = field(default_factory=list)  # {step, turn, tokens} per LLM response
    compactions: list[dict[str, Any]] = field(default_factory=list)  # {step, tokens_before}
    stats: RunStats = field(default_factory=RunStats)  # the same accumulator as the recorder's
    # Counts the recorded events added: the charts change with them only (a Delta moves the wall clock alone),
    # so a live view redraws when it moved, not at every streamed token.
    revision: int = 0

    def add(self, event: Event) -> None:
        self.stats.add(event)
        self.revision += event.recorded
        match event:
            case RunStart(context_window=window) if window:
                # The window the run really has (fitted to its model), which the job's own settings may not know.
                self.context_window = window
            case TurnStart(budget=budget) if budget:
                self.budget = budget
            case StepEnd(context_tokens=tokens):
                self.points.append({"step": len(self.points) + 1, "turn": event.turn, "tokens": tokens})
            case Compaction(tokens_before=tokens_before, error=""):  # a failed one changed no context
                # It happens inside a step, before that step's response: between two points.
                self.compactions.append({"step": len(self.points) + 0.5, "tokens_before": tokens_before})
            case TurnEnd(tokens=tokens):
                self.turns_done = max(self.turns_done, event.turn)
                self.turn_rows.append({"turn": event.turn, "tokens": dict(tokens)})

    @classmethod
    def from_records(cls, job_dir: Path) -> Dashboard:
        """The context points and compactions come from events.jsonl (their only record); turns,
        tools and timings from the files the recorder wrote, which are the authority."""
        folder = JobFolder(job_dir)
        meta = folder.read_meta()
        config = meta.get("config") or {}
        dashboard = cls(context_window=config.get("CONTEXT_WINDOW"), budget=meta.get("budget") or config.get("TURN_BUDGET"))
        for event in load_events(job_dir):
            dashboard.add(event)
        rows = folder.read_turns()
        if rows:
            dashboard.turn_rows = [{"turn": r["turn"], "tokens": dict(r.get("tokens") or {})} for r in rows]
        dashboard.turns_done = max([dashboard.turns_done, meta.get("turns") or 0, *(r["turn"] for r in rows)])
        timing = folder.read_timing()
        if timing:
            dashboard.stats = RunStats.from_timing(timing)
        return dashboard

    def figures(self) -> dict[str, go.Figure]:
        return {
            "tokens": charts.tokens_per_turn(self.turn_rows),
            "tools": charts.tool_distribution(dict(self.stats.tools), dict(self.stats.programs)),
            "time": charts.wall_time_split(self.stats.timing()),
            "context": charts.context_usage(self.points, self.context_window, self.compactions),
            "budget": charts.budget_gauge(self.turns_done, self.budget, self.stats.decode_tokens_per_s,
                                          self.stats.prefill_tokens_per_s),
        }
