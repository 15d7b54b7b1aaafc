"""wrap_up: a turn cut at MAX_STEPS_PER_TURN or TURN_TIMEOUT_SECONDS gets one more response, offered
no tools, so that it still ends with an answer."""

from __future__ import annotations

from searchbox.agent.assists.base import Assist, RunView

WRAP_UP = "This turn has used all its steps. Using what you found so far, write your answer now, citing sources."


class WrapUp(Assist):
    name = "wrap_up"

    def turn_cut(self, run: RunView) -> str | None:
        return WRAP_UP
