"""keep_answer: when an assist asked again after an answer (for its sources, say) and the reply to that
cites nothing, ANSWER.md gets the answer given before, not the reply. Asked only to add its sources,
the 1.5B replaced a right answer with "Sorry, but you didn't provide the id of the source"."""

from __future__ import annotations

from searchbox.agent.assists.base import Assist, RunView
from searchbox.citations.markers import cited_ids


class KeepAnswer(Assist):
    name = "keep_answer"

    def answer(self, run: RunView, final: str) -> str | None:
        earlier = next((reply for reply in reversed(run.asked_again) if reply.strip()), None)
        if earlier is None or cited_ids(final) or earlier.strip() == final.strip():
            return None
        return earlier
