"""The session file: an append-only transcript of every message (with token usage on each assistant
message) and every compaction. The context sent to the model is rebuilt from it, so a run can resume."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchbox.agent.prompts import COMPACTED_PREFIX
from searchbox.records.files import append_jsonl, read_jsonl

Message = dict[str, Any]


@dataclass
class Session:
    path: Path
    messages: list[Message] = field(default_factory=list)  # every message ever, in order
    usages: list[dict[str, int]] = field(default_factory=list)  # one per LLM call: responses and compactions
    summary: str | None = None  # the latest compaction summary
    first_kept: int = 0  # messages before this index are covered by the summary
    compactions: int = 0

    @classmethod
    def load(cls, path: Path) -> Session:
        session = cls(path)
        for row in read_jsonl(path):
            if row.get("type") == "message":
                session.messages.append(row["message"])
                if row.get("usage"):
                    session.usages.append(row["usage"])
            elif row.get("type") == "compaction":
                session.summary = row["summary"]
                session.first_kept = row["first_kept"]
                session.compactions += 1
                if row.get("usage"):  # as record_compaction counted it live: a resumed run's totals match
                    session.usages.append(row["usage"])
        return session

    def append(self, message: Message, usage: dict[str, int] | None = None, **extra: Any) -> None:
        row: dict[str, Any] = {"type": "message", "ts": time.time(), "message": message}
        if usage is not None:
            row["usage"] = usage
            self.usages.append(usage)
        row.update(extra)
        append_jsonl(self.path, row)
        self.messages.append(message)

    def record_compaction(self, summary: str, first_kept: int, tokens_before: int, usage: dict[str, int]) -> None:
        append_jsonl(self.path, {"type": "compaction", "ts": time.time(), "summary": summary,
                                 "first_kept": first_kept, "tokens_before": tokens_before, "usage": usage})
        self.usages.append(usage)
        self.summary, self.first_kept = summary, first_kept
        self.compactions += 1

    def context(self, system: str) -> list[Message]:
        """What the model sees: the system prompt, the question, the summary, the recent messages."""
        if self.summary is None:
            return [{"role": "system", "content": system}, *self.messages]
        # One user message, not two in a row: some chat templates insist on alternating roles.
        question = self.messages[0]["content"] if self.messages else ""
        opening = {"role": "user", "content": f"{question}\n\n{COMPACTED_PREFIX}{self.summary}"}
        return [{"role": "system", "content": system}, opening, *self.messages[max(self.first_kept, 1):]]

    def tool_results(self) -> int:
        """Tool calls that ran to a result, so a resumed run's count goes on from them (a call left
        without a result gets one on resume, and is counted then)."""
        return sum(1 for message in self.messages if message.get("role") == "tool")

    def responses(self) -> int:
        """LLM responses so far: a resumed run numbers its steps on from them."""
        return sum(1 for message in self.messages if message.get("role") == "assistant")

    def token_totals(self) -> dict[str, int]:
        """Summed over every LLM call in the file, compaction calls included, so nothing is undercounted; the
        reasoning tokens are a part of the output (0 in a session written before they were counted)."""
        totals = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "reasoning": 0}
        for usage in self.usages:
            for key in totals:
                totals[key] += int(usage.get(key, 0))
        totals["total"] = totals["input"] + totals["output"]
        return totals
