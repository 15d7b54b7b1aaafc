"""source_hint: an answer that cites nothing is told, once per turn, which of the sources shown hold
its names, dates and numbers. Given only the ids, the 1.5B cited the first one shown, which did not
hold the fact.

It finds them with a matcher of its own, deliberately simpler than the citation checker's (which is
the grader: the harness may never tell the model what the grader will look for): a term is a run of
words that each open with a capital or a digit ("&" may join them), holding a digit or more than one
word ("31 March 2029", "Pellworth & Strand LLP"); a source holds it when its text has it, case and spacing aside. Terms the
question holds are left out: they are in every search result."""

from __future__ import annotations

import re

from searchbox.agent.assists.ask_sources import SHOWN_IDS
from searchbox.agent.assists.base import Assist, RunView, uncited_answer

_SOURCES_NAMED = 4
_TERMS_PER_SOURCE = 3
_WORD = re.compile(r"\S+")
_EDGE = "\"'“”‘’()[]*_`"  # stripped from a word's ends; a word ending in , . ; : ! ? ends its run


def answer_terms(text: str, question: str) -> list[str]:
    """The reply's terms, those with a digit first."""
    terms: list[str] = []
    run: list[str] = []

    def close() -> None:
        while run and run[-1] == "&":
            run.pop()
        if run and (len(run) > 1 or any(ch.isdigit() for ch in run[0])):
            terms.append(" ".join(run))
        run.clear()

    for raw in _WORD.findall(text):
        word = raw.strip(_EDGE)
        ends_run = word[-1:] in ",.;:!?"
        word = word.rstrip(",.;:!?").strip(_EDGE)
        if word and (word[0].isupper() or word[0].isdigit()) or word == "&" and run:
            run.append(word)
        else:
            close()
        if ends_run:
            close()
    close()
    asked = _plain(question)
    kept = [term for term in dict.fromkeys(terms) if not _holds(asked, term)]
    return sorted(kept, key=lambda term: not any(ch.isdigit() for ch in term))


def hint(held: dict[str, list[str]]) -> str:
    shows = "; ".join(f"[{source_id}] shows {', '.join(f'“{term}”' for term in terms[:_TERMS_PER_SOURCE])}"
                      for source_id, terms in list(held.items())[:_SOURCES_NAMED])
    return f"Of the sources shown, {shows}."


class SourceHint(Assist):
    name = "source_hint"

    def turn_start(self, run: RunView) -> None:
        self.hinted = False

    def follow_up(self, run: RunView, reply: str) -> str | None:
        if self.hinted or not uncited_answer(run, reply):
            return None
        terms = answer_terms(reply, run.question)
        texts = run.source_texts(run.sources_shown[-SHOWN_IDS:]) if terms else {}
        held = {source_id: found for source_id, text in texts.items()
                if (found := [term for term in terms if _holds(_plain(text), term)])}
        if not held:
            return None
        self.hinted = True
        return hint(held)


def _plain(text: str) -> str:
    return " ".join(text.lower().split())


def _holds(plain_text: str, term: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(_plain(term))}(?!\w)", plain_text) is not None
