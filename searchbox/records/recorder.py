"""The run records (SPEC 2.7), written from the loop's events as the run goes: turns.jsonl at each
turn end, run_meta.json and timing.json at each turn end and at the stop, answer snapshots when the
answer changed. A resumed run adds to what the records already hold."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchbox.records.events import DONE_REASONS, Event, Stop, ToolEnd, TurnEnd, load_events
from searchbox.records.job_folder import JobFolder
from searchbox.records.stats import RunStats
from searchbox.settings import Settings


class RunRecorder:
    def __init__(self, job_dir: Path, settings: Settings, run_info: Callable[[], dict[str, Any]],
                 ledger_ids: Callable[[], set[str]], check_citations: Callable[[str], dict[str, Any]],
                 save_ledger: Callable[[], None]) -> None:
        self.folder = JobFolder(job_dir)
        self.settings = settings
        self.run_info = run_info  # model id, backends, airgap level, tools: asked at each write
        self.ledger_ids = ledger_ids
        self.check_citations = check_citations  # the answer's citations against the ledger and their sources
        self.save_ledger = save_ledger
        # From the events the job recorded, not from timing.json: a run killed mid-turn recorded its
        # tool calls as events but wrote no timing.json after them.
        self.stats = RunStats()
        for event in load_events(job_dir):
            self.stats.add(event)
        self.tokens: dict[str, int] = {}
        self.turns = 0
        self._answer_hash = self._hash_answer()
        self._sources_saved = len(ledger_ids())

    def __call__(self, event: Event) -> None:
        self.stats.add(event)
        match event:
            case ToolEnd():
                self._save_new_sources()
            case TurnEnd():
                self._turn_end(event)
            case Stop():
                self._stop(event)

    # -- event handlers ------------------------------------------------------------------

    def _turn_end(self, event: TurnEnd) -> None:
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
            "elapsed_s": round(self.stats.wall_ms / 1000, 3),
            "budget": self.settings.turn_budget,
            "budget_used_pct": round(100 * event.turn / self.settings.turn_budget, 1),
            "token_metric": metric,
            "tokens_spent": self.tokens.get(metric, 0),
            "tokens": self.tokens,
            "tool_calls": event.tool_calls,
            "answer": {"present": bool(text), "chars": len(text), "changed": changed},
        })
        self.save_ledger()
        self._write_meta(stop_reason=None)

    def _stop(self, event: Stop) -> None:
        self.turns = max(self.turns, event.turns)
        self.tokens = event.tokens or self.tokens
        self.save_ledger()
        self._write_meta(stop_reason=event.reason)

    def _save_new_sources(self) -> None:
        """The ledger after each tool call that added sources: a run killed before its turn ended
        still knows, when restarted, the ids its tool results showed the model."""
        count = len(self.ledger_ids())
        if count != self._sources_saved:
            self.save_ledger()
            self._sources_saved = count

    # -- files ---------------------------------------------------------------------------------

    def _hash_answer(self) -> str | None:
        data = self.folder.answer_bytes()
        return hashlib.sha256(data).hexdigest() if data is not None else None

    def _write_meta(self, stop_reason: str | None) -> None:
        text = self.folder.answer_text()
        self.folder.write_timing(self.stats.timing())
        self.folder.write_meta({
            "stop_reason": stop_reason,
            "done": stop_reason in DONE_REASONS,
            "turns": self.turns,
            "budget": self.settings.turn_budget,
            "force_budget": self.settings.force_budget,
            "tokens": self.tokens,
            "tool_calls": sum(self.stats.tools.values()),
            "tool_counts": dict(self.stats.tools),
            "bash_programs": dict(self.stats.programs),
            "assist_firings": {name: self.stats.assists[name] for name in self.settings.assists},
            "elapsed_seconds": round(self.stats.wall_ms / 1000, 3),
            "citations": self.check_citations(text),
            **self.run_info(),
            "config": self.settings.as_config(),
        })
