"""ask_sources: an answer that cites nothing although tools showed sources is asked, once per turn, to
cite them, and told the ids shown. Told the rule once in the system prompt, small models answer from
the passages and drop the ids; asked without the ids, the 1.5B repeated its answer uncited. Which shown
source holds what is not said here (that is source_hint's, an assist of its own)."""

from __future__ import annotations

from searchbox.agent.assists.base import Assist, RunView, uncited_answer

SHOWN_IDS = 8  # the latest ids named


def ask_sources(shown: list[str]) -> str:
    ids = ", ".join(f"[{source_id}]" for source_id in shown[-SHOWN_IDS:])
    return (f"Your answer cites no source. The tool results above showed the sources {ids}. Reply with the "
            "answer again, putting after each fact the id of the source that shows it, e.g. \"... [s1].\"")


class AskSources(Assist):
    name = "ask_sources"

    def turn_start(self, run: RunView) -> None:
        self.asked = False

    def follow_up(self, run: RunView, reply: str) -> str | None:
        if self.asked or not uncited_answer(run, reply):
            return None
        self.asked = True
        return ask_sources(run.sources_shown)
