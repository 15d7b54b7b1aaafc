"""The run dashboard's state: what the charts need, accumulated from live events or rebuilt from a
finished run's records, so that a past run's dashboard looks like the live one did.

To follow a resumed run, start from `Dashboard.from_records(job_dir)` and `add` the new events.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from searchbox.agent.events import Event
from searchbox.records.files import read_json, read_jsonl
from searchbox.ui import charts

_EVENT_KEYS = {"type", "turn", "step", "elapsed", "ts"}


def load_events(job_dir: Path) -> list[Event]:
    """events.jsonl read back as Events (no deltas: those are never recorded)."""
    return [Event(row["type"], int(row.get("turn", 0)), int(row.get("step", 0)), float(row.get("elapsed", 0.0)),
                  {k: v for k, v in row.items() if k not in _EVENT_KEYS})
            for row in read_jsonl(job_dir / "events.jsonl") if "type" in row]


@dataclass
class Dashboard:
    context_window: int | None = None
    budget: int | None = None
    turns_done: int = 0
    turn_rows: list[dict[str, Any]] = field(default_factory=list)  # {turn, tokens (cumulative)}
    tool_counts: Counter[str] = field(default_factory=Counter)
    bash_programs: Counter[str] = field(default_factory=Counter)
    points: list[dict[str, Any]] = field(default_factory=list)  # {step, turn, tokens} per LLM response
    compactions: list[dict[str, Any]] = field(default_factory=list)  # {step, tokens_before}
    wall_ms: float = 0.0
    llm_ms: float = 0.0
    tool_ms: float = 0.0
    decode: dict[str, float] = field(default_factory=lambda: {"tokens": 0, "ms": 0.0})
    prefill: dict[str, float] = field(default_factory=lambda: {"tokens": 0, "ms": 0.0})
    _wall_base: float = field(default=0.0, init=False, repr=False)

    def add(self, event: Event) -> None:
        if event.type == "run_start":  # a resumption's clock starts again at zero
            self._wall_base = self.wall_ms
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)
        self.wall_ms = self._wall_base + event.elapsed * 1000

    def _on_turn_start(self, event: Event) -> None:
        self.budget = event.data.get("budget", self.budget)

    def _on_step_end(self, event: Event) -> None:
        data = event.data
        self.points.append({"step": len(self.points) + 1, "turn": event.turn, "tokens": data.get("context_tokens", 0)})
        self.llm_ms += data.get("llm_ms", 0.0)
        # Rates accumulate as the recorder's do, so live and recorded speeds agree.
        usage, timings = data.get("usage") or {}, data.get("timings") or {}
        if timings.get("decode_ms"):
            self.decode["tokens"] += usage.get("output", 0)
            self.decode["ms"] += timings["decode_ms"]
        if timings.get("prefill_ms"):
            self.prefill["tokens"] += usage.get("input", 0) - usage.get("cacheRead", 0)
            self.prefill["ms"] += timings["prefill_ms"]

    def _on_tool_end(self, event: Event) -> None:
        self.tool_counts[event.data.get("name", "?")] += 1
        self.tool_ms += event.data.get("duration_ms", 0.0)
        self.bash_programs.update((event.data.get("details") or {}).get("programs") or [])

    def _on_compaction(self, event: Event) -> None:
        # It happens inside a step, before that step's response: between two points.
        self.compactions.append({"step": len(self.points) + 0.5, "tokens_before": event.data.get("tokens_before", 0)})

    def _on_turn_end(self, event: Event) -> None:
        self.turns_done = max(self.turns_done, event.turn)
        self.turn_rows.append({"turn": event.turn, "tokens": dict(event.data.get("tokens") or {})})

    @classmethod
    def from_records(cls, job_dir: Path) -> Dashboard:
        """The context points and compactions come from events.jsonl (their only record); turns,
        tools and timings from the files the recorder wrote, which are the authority."""
        meta = read_json(job_dir / "run_meta.json", {}) or {}
        config = meta.get("config") or {}
        dashboard = cls(context_window=config.get("CONTEXT_WINDOW"), budget=meta.get("budget") or config.get("TURN_BUDGET"))
        for event in load_events(job_dir):
            dashboard.add(event)
        rows = read_jsonl(job_dir / "turns.jsonl")
        if rows:
            dashboard.turn_rows = [{"turn": r["turn"], "tokens": dict(r.get("tokens") or {})} for r in rows]
        dashboard.turns_done = max([dashboard.turns_done, meta.get("turns") or 0, *(r["turn"] for r in rows)])
        timing = read_json(job_dir / "timing.json", {}) or {}
        if timing:
            dashboard.tool_counts = Counter({name: t["count"] for name, t in (timing.get("tools") or {}).items()})
            dashboard.bash_programs = Counter(timing.get("bash_programs") or {})
            dashboard.wall_ms, dashboard.llm_ms, dashboard.tool_ms = (
                float(timing.get(k) or 0) for k in ("wall_ms", "llm_ms", "tool_ms"))
            dashboard.decode = dict(timing.get("_decode") or dashboard.decode)
            dashboard.prefill = dict(timing.get("_prefill") or dashboard.prefill)
        dashboard._wall_base = dashboard.wall_ms
        return dashboard

    def figures(self) -> dict[str, go.Figure]:
        return {
            "tokens": charts.tokens_per_turn(self.turn_rows),
            "tools": charts.tool_distribution(dict(self.tool_counts), dict(self.bash_programs)),
            "time": charts.wall_time_split({"wall_ms": self.wall_ms, "llm_ms": self.llm_ms, "tool_ms": self.tool_ms}),
            "context": charts.context_usage(self.points, self.context_window, self.compactions),
            "budget": charts.budget_gauge(self.turns_done, self.budget, _rate(self.decode), _rate(self.prefill)),
        }


def _rate(acc: dict[str, float]) -> float | None:
    return round(acc["tokens"] / (acc["ms"] / 1000), 2) if acc.get("ms") else None
