"""The run records (design §2.7), written as the run goes: turns.jsonl at each turn end, run_meta.json and
timing.json at each turn end and at the stop, answer snapshots when the answer changed. A resumed run
adds to what the records already hold.

A writer only: it writes what its owner gives it, the turn's or the stop's event, the run's counts of the
events so far (records/stats.py: tools, programs, timing) and the parts of run_meta.json the events do not
hold (the answer's checked citations, the model and backends). It calls nothing back (agent/recording.py
is its owner)."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from typing import Any

from searchbox.records.events import DONE_REASONS, Stop, TurnEnd
from searchbox.records.job_folder import JobFolder
from searchbox.records.stats import RunStats
from searchbox.settings import Settings


class RunRecorder:
    def __init__(self, job_dir: Path, settings: Settings) -> None:
        self.folder = JobFolder(job_dir)
        self.settings = settings
        self.tokens: dict[str, int] = {}
        self.turns = 0
        self._answer_hash = self._hash_answer()

    def turn_end(self, event: TurnEnd, stats: RunStats, meta: dict[str, Any]) -> None:
        """The turn's line and answer snapshot, and timing.json and run_meta.json with `meta` in it."""
        self._turn_end(event, stats)
        self._write_meta(None, stats, meta)

    def stop(self, event: Stop, stats: RunStats, meta: dict[str, Any]) -> None:
        self.turns = max(self.turns, event.turns)
        self.tokens = event.tokens or self.tokens
        self._write_meta(event.reason, stats, meta)

    def _turn_end(self, event: TurnEnd, stats: RunStats) -> None:
        self.turns = event.turn
        self.tokens = event.tokens
        data = self.folder.answer_bytes()
        text = data.decode("utf-8", errors="replace") if data else ""
        digest = hashlib.sha256(data).hexdigest() if data is not None else None
        changed = digest != self._answer_hash and bool(text)
        if changed:  # the bytes read, not a copy of the path: a link there is never followed
            self.folder.snapshots.mkdir(exist_ok=True)
            (self.folder.snapshots / f"ANSWER-t{event.turn}.md").write_bytes(data or b"")
        self._answer_hash = digest
        metric = self.settings.budget_metric
        self.folder.append_turn({
            "turn": event.turn,
            "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "elapsed_s": round(stats.wall_ms / 1000, 3),
            "budget": self.settings.turn_budget,
            "budget_used_pct": round(100 * event.turn / self.settings.turn_budget, 1),
            "token_metric": metric,
            "tokens_spent": self.tokens.get(metric, 0),
            "tokens": self.tokens,
            "tool_calls": event.tool_calls,
            "answer": {"present": bool(text), "chars": len(text), "changed": changed},
        })

    # -- files ---------------------------------------------------------------------------------

    def _hash_answer(self) -> str | None:
        data = self.folder.answer_bytes()
        return hashlib.sha256(data).hexdigest() if data is not None else None

    def _write_meta(self, stop_reason: str | None, stats: RunStats, meta: dict[str, Any]) -> None:
        self.folder.write_timing(stats.timing())
        self.folder.write_meta({
            "stop_reason": stop_reason,
            "done": stop_reason in DONE_REASONS,
            "turns": self.turns,
            "budget": self.settings.turn_budget,
            "force_budget": self.settings.force_budget,
            "tokens": self.tokens,
            "tool_calls": sum(stats.tools.values()),
            "tool_counts": dict(stats.tools),
            "bash_programs": dict(stats.programs),
            "assist_firings": {name: stats.assists[name] for name in self.settings.assists},
            "elapsed_seconds": round(stats.wall_ms / 1000, 3),
            **meta,
            "config": self.settings.as_config(),
        })
