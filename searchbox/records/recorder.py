"""The run records (SPEC 2.7), written from the loop's events as the run goes: turns.jsonl at each
turn end, run_meta.json and timing.json at each turn end and at the stop, answer snapshots when the
answer changed. A resumed run adds to what the records already hold."""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchbox.records.events import DONE_REASONS, Event, dispatch
from searchbox.records.files import append_jsonl, read_json, write_json
from searchbox.records.stats import RunStats
from searchbox.settings import Settings

ANSWER_PATH = Path("work") / "ANSWER.md"


class RunRecorder:
    def __init__(self, job_dir: Path, settings: Settings, run_info: Callable[[], dict[str, Any]],
                 check_citations: Callable[[str], dict[str, Any]], save_ledger: Callable[[], None]) -> None:
        self.job_dir = job_dir
        self.settings = settings
        self.run_info = run_info  # model id, backends, airgap level, tools: asked at each write
        self.check_citations = check_citations  # the answer's citations against the ledger and their sources
        self.save_ledger = save_ledger
        self.stats = RunStats.from_timing(read_json(job_dir / "timing.json", {}) or {})
        self.tokens: dict[str, int] = {}
        self.turns = 0
        self._answer_hash = self._hash_answer()

    def __call__(self, event: Event) -> None:
        self.stats.add(event)
        dispatch(self, event)

    # -- event handlers ------------------------------------------------------------------

    def _on_turn_end(self, event: Event) -> None:
        self.turns = event.turn
        self.tokens = event.data["tokens"]
        answer = self.job_dir / ANSWER_PATH
        text = answer.read_text(encoding="utf-8", errors="replace") if answer.exists() else ""
        digest = self._hash_answer()
        changed = digest != self._answer_hash and bool(text)
        if changed:
            snapshots = self.job_dir / "snapshots"
            snapshots.mkdir(exist_ok=True)
            shutil.copyfile(answer, snapshots / f"ANSWER-t{event.turn}.md")
        self._answer_hash = digest
        metric = self.settings.budget_metric
        append_jsonl(self.job_dir / "turns.jsonl", {
            "turn": event.turn,
            "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "elapsed_s": round(self.stats.wall_ms / 1000, 3),
            "budget": self.settings.turn_budget,
            "budget_used_pct": round(100 * event.turn / self.settings.turn_budget, 1),
            "token_metric": metric,
            "tokens_spent": self.tokens.get(metric, 0),
            "tokens": self.tokens,
            "tool_calls": event.data["tool_calls"],
            "answer": {"present": bool(text), "chars": len(text), "changed": changed},
        })
        self.save_ledger()
        self._write_meta(stop_reason=None)

    def _on_stop(self, event: Event) -> None:
        self.turns = max(self.turns, event.data.get("turns", 0))
        self.tokens = event.data.get("tokens", self.tokens)
        self.save_ledger()
        self._write_meta(stop_reason=event.data["reason"])

    # -- files ---------------------------------------------------------------------------------

    def _hash_answer(self) -> str | None:
        answer = self.job_dir / ANSWER_PATH
        return hashlib.sha256(answer.read_bytes()).hexdigest() if answer.exists() else None

    def _write_meta(self, stop_reason: str | None) -> None:
        answer = self.job_dir / ANSWER_PATH
        text = answer.read_text(encoding="utf-8", errors="replace") if answer.exists() else ""
        write_json(self.job_dir / "timing.json", self.stats.timing())
        write_json(self.job_dir / "run_meta.json", {
            "stop_reason": stop_reason,
            "done": stop_reason in DONE_REASONS,
            "turns": self.turns,
            "budget": self.settings.turn_budget,
            "force_budget": self.settings.force_budget,
            "tokens": self.tokens,
            "tool_calls": sum(self.stats.tools.values()),
            "tool_counts": dict(self.stats.tools),
            "bash_programs": dict(self.stats.programs),
            "elapsed_seconds": round(self.stats.wall_ms / 1000, 3),
            "citations": self.check_citations(text),
            **self.run_info(),
            "config": self.settings.as_config(),
        })
