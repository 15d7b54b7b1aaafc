"""Run statistics accumulated from the loop's events: wall, LLM and tool time, tool and bash-program
counts, assist firings, decode and prefill speed. One accumulator, used by the recorder (which writes timing.json)
and by the live dashboard, so the two always agree."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from searchbox.records.events import AssistFired, Compaction, Event, RunStart, StepEnd, Stop, ToolEnd


@dataclass
class RunStats:
    wall_ms: float = 0.0
    llm_ms: float = 0.0
    tool_ms: float = 0.0
    tools: Counter[str] = field(default_factory=Counter)
    tools_ms: Counter[str] = field(default_factory=Counter)
    programs: Counter[str] = field(default_factory=Counter)
    decode: dict[str, float] = field(default_factory=lambda: {"tokens": 0, "ms": 0.0})
    prefill: dict[str, float] = field(default_factory=lambda: {"tokens": 0, "ms": 0.0})
    compactions: int = 0
    assists: Counter[str] = field(default_factory=Counter)  # firings per assist
    # The wall time is the sum of the run's parts, each timed by its own bus from its run_start to its
    # stop (a model's boot and a part's setup before its run_start do not count).
    _wall_base: float = field(default=0.0, repr=False)  # the wall time of the earlier parts
    _part_open: bool = field(default=False, repr=False)  # between a run_start and its stop
    _last_elapsed: float = field(default=0.0, repr=False)

    @classmethod
    def from_timing(cls, timing: dict[str, Any]) -> RunStats:
        """Back from timing.json, to draw a past run (a live or resumed run adds up its recorded events instead)."""
        tools = timing.get("tools") or {}
        stats = cls(
            wall_ms=float(timing.get("wall_ms") or 0), llm_ms=float(timing.get("llm_ms") or 0),
            tool_ms=float(timing.get("tool_ms") or 0),
            tools=Counter({k: v["count"] for k, v in tools.items()}),
            tools_ms=Counter({k: v["ms"] for k, v in tools.items()}),
            programs=Counter(timing.get("bash_programs") or {}),
            decode=dict(timing.get("_decode") or {"tokens": 0, "ms": 0.0}),
            prefill=dict(timing.get("_prefill") or {"tokens": 0, "ms": 0.0}),
            compactions=int(timing.get("compactions") or 0),
        )
        stats._wall_base = stats.wall_ms
        return stats

    def add(self, event: Event) -> None:
        self._time(event)
        match event:
            case StepEnd(usage=usage, timings=timings, llm_ms=llm_ms):
                self.llm_ms += llm_ms
                if timings.get("decode_ms"):
                    self.decode["tokens"] += usage.get("output", 0)
                    self.decode["ms"] += timings["decode_ms"]
                if timings.get("prefill_ms"):
                    self.prefill["tokens"] += usage.get("input", 0) - usage.get("cacheRead", 0)
                    self.prefill["ms"] += timings["prefill_ms"]
            case ToolEnd(name=name, duration_ms=duration_ms, details=details):
                self.tools[name] += 1
                self.tools_ms[name] += duration_ms
                self.tool_ms += duration_ms
                self.programs.update(details.get("programs") or [])
            case Compaction(error=""):  # done ones: a failed one is in the events, not in the count
                self.compactions += 1
            case AssistFired(assist=assist):
                self.assists[assist] += 1

    def _time(self, event: Event) -> None:
        if isinstance(event, RunStart):
            self._wall_base, self._part_open = self.wall_ms, True
        elif event.elapsed < self._last_elapsed:  # another bus's clock: the part was killed, it left no stop
            self._part_open = False
        self._last_elapsed = event.elapsed
        if self._part_open:
            self.wall_ms = self._wall_base + event.elapsed * 1000
            self._part_open = not isinstance(event, Stop)

    @property
    def decode_tokens_per_s(self) -> float | None:
        return _rate(self.decode)

    @property
    def prefill_tokens_per_s(self) -> float | None:
        return _rate(self.prefill)

    def timing(self) -> dict[str, Any]:
        """timing.json (the underscored sums let a resumed run go on adding)."""
        return {
            "wall_ms": round(self.wall_ms, 1),
            "llm_ms": round(self.llm_ms, 1),
            "tool_ms": round(self.tool_ms, 1),
            "tools": {name: {"count": self.tools[name], "ms": round(self.tools_ms[name], 1)} for name in sorted(self.tools)},
            "bash_programs": dict(self.programs.most_common()),
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "compactions": self.compactions,
            "_decode": self.decode,
            "_prefill": self.prefill,
        }


def _rate(acc: dict[str, float]) -> float | None:
    return round(acc["tokens"] / (acc["ms"] / 1000), 2) if acc.get("ms") else None
