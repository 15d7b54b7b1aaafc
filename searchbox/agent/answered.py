"""Whether a run ended with an answer (issue 45): one rule for every harness, applied where a run would
stop as done (first_turn_done, budget_spent). A run that ends without one stops with `no_answer`, which is
not done: the records, the feed, the Jobs tab and a sweep's rows then say so instead of counting it finished.

What the run ends with is ANSWER.md as the run leaves it (the model's, or the backstop's copy of its final
reply), else the final reply, less the tool calls written in it (backstop.py). It is no answer when, citation
markers, punctuation, case and whitespace aside, it is empty (or was only tool calls), it only repeats the question, or it only repeats what the harness sent the model
(`Continue.`, an assist's message, in whole or as echoes of it: records/echoes.py). The rule is kept
narrow on purpose: a short reply of the model's own words ("Pellworth & Strand LLP [s1].") is an answer,
right or wrong; grading it is the scorer's work, not the stop reason's.
"""

from __future__ import annotations

import re
from typing import Any

from searchbox.agent.backstop import final_reply
from searchbox.citations.markers import MARKER
from searchbox.llm.types import Tool
from searchbox.records.echoes import HarnessMessage, find_echoes, harness_messages
from searchbox.records.events import DONE_REASONS, NO_ANSWER, EventBus, Notice
from searchbox.records.job_folder import JobFolder

_WORD = re.compile(r"\w+")


def missing_answer(text: str, question: str, harness: list[HarnessMessage]) -> str | None:
    """Why `text` is no answer to `question`, given the messages the harness sent; None when it is one."""
    words = _words(text)
    if not words:
        return "the run ended with no ANSWER.md and a final reply empty or only tool calls"
    if words == _words(question):
        return "the run's answer only repeats the question"
    if any(words == _words(message.text) for message in harness) or not _words(find_echoes(text, harness).scored):
        return "the run's answer only repeats the harness's message to the model"
    return None


def final_answer(folder: JobFolder, messages: list[dict[str, Any]], tools: list[Tool] | None) -> str:
    """What the run ends with: ANSWER.md as the run leaves it, else (none, or a link at the name) the final reply."""
    answer = folder.read_answer()
    if answer.exists and answer.problem is None:
        return answer.text
    return final_reply(messages, tools)


def settled_stop(reason: str, folder: JobFolder, question: str, messages: list[dict[str, Any]], tools: list[Tool] | None,
                 bus: EventBus) -> str:
    """The stop reason a run records: a done reason becomes no_answer, with a warning that says why, when
    the run ends without an answer; every other reason stays as it is."""
    if reason not in DONE_REASONS:
        return reason
    why = missing_answer(final_answer(folder, messages, tools), question, harness_messages(folder.session))
    if why is None:
        return reason
    bus.emit(Notice(level="warning", message=f"No answer: {why}. The run is not done ({NO_ANSWER})."))
    return NO_ANSWER


def _words(text: str) -> list[str]:
    """The words of `text` without its citation markers, lower case: what two texts are compared by."""
    return [word.lower() for word in _WORD.findall(MARKER.sub(" ", text))]
