"""The answer's knobs: what the system prompt asks of the answer (quotes in citations, a word on a false
premise) and who reads a citation the lexical checker leaves open."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import urlsplit

from searchbox.settings.knob import SettingsError, knob


@dataclass(frozen=True)
class AnswerSettings:
    """What the answer is asked for, and how its citations are checked."""

    TITLE: ClassVar[str] = "The answer and its citations"

    citation_quotes: bool = knob(
        False, "ask the model to put a short verbatim quote in each citation, [s3 \"quoted words\"]; a quote not "
        "in its source makes the citation unsupported"
    )
    premise_check: bool = knob(
        False, "tell the model, in the task, that a question may take for granted something the documents contradict, "
        "and that its answer should then say so (a line of the system prompt)"
    )
    citation_judge: str = knob(
        "off", "who reads each citation the checker's words leave open (no figure missing from its sources, no "
        "denial found): off (the lexical checker alone), self (the run's own model: LLAMA_URL or the built-in "
        "runtime), or an OpenAI-compatible endpoint URL; the judge must quote the passage it rests on, and each "
        "verdict records who gave it (bench/support_calibration.py --judge measures one)"
    )
    citation_judge_model: str = knob("", "the model id sent to a CITATION_JUDGE endpoint")


def check(settings: AnswerSettings) -> None:
    """SettingsError for a value of this section's knobs that cannot be used."""
    judge = settings.citation_judge
    if judge not in ("off", "self") and urlsplit(judge).scheme not in ("http", "https"):
        raise SettingsError(f"CITATION_JUDGE must be off, self or an http(s) endpoint URL (got {judge!r})")
