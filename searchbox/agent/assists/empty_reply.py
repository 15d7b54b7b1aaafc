"""empty_reply: a reply with neither a tool call nor text is asked again, once per turn, instead of
ending the turn with no answer (a small model's call the parser could not read, or nothing at all)."""

from __future__ import annotations

from searchbox.agent.assists.base import Assist, RunView

EMPTY_REPLY = "Your reply was empty. Call a tool, or reply with your answer citing sources."


class EmptyReply(Assist):
    name = "empty_reply"

    def turn_start(self, run: RunView) -> None:
        self.asked = False

    def follow_up(self, run: RunView, reply: str) -> str | None:
        if reply.strip() or self.asked:
            return None
        self.asked = True
        return EMPTY_REPLY
