"""Text the harness wrote earns no score (issue 21): an answer's spans that repeat a message the
harness sent the model (an assist's follow-up, a wrap-up request) are taken out before its citations
are checked and its facts scored. The 1.5B, asked for its sources and told which source showed which
of its words, answered with the request itself ("The tool results above showed the sources [s1], [s2]
...; of these, [s3] shows “FY2024”"), and the checker approved the citations the harness had written.

A span is an echo when it is a run of at least ECHO_WORDS words (case and punctuation aside) that a
harness message holds, that is not only source ids ("[s1], [s2], [s3]" is how answers cite), and that
the model had not written itself before that message (an assist may quote the model's own words back
to it). The harness messages are the session's user messages after the question, the one message a
person wrote; a marker an echo touches goes with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from searchbox.citations.markers import MARKER, marker_citations
from searchbox.records.files import read_jsonl
from searchbox.records.job_folder import JobFolder

ECHO_WORDS = 3
# What a reader sees where the model only repeated the harness (the answer panel, the ANSWER.md download,
# the CLI): the words are the harness's, not the model's answer.
LEFT_OUT = "⟨repeated from the harness's message: left out⟩"
_WORD = re.compile(r"\w+")
_SOURCE_ID = re.compile(r"s\d+")


@dataclass(frozen=True)
class HarnessMessage:
    text: str  # what the harness sent
    model_before: str  # everything the model had written before it was sent


@dataclass
class Echoes:
    answer: str
    spans: list[tuple[int, int]] = field(default_factory=list)  # character ranges of the answer, in order

    @property
    def scored(self) -> str:
        """The answer without its echoes: what citations and facts are scored on. Each echo leaves an
        ellipsis, which no citation marker can hold, so the cut never joins two pieces into one."""
        out, last = [], 0
        for start, end in self.spans:
            out.append(self.answer[last:start] + " … ")
            last = end
        out.append(self.answer[last:])
        return "".join(out)

    @property
    def shown(self) -> str:
        """The answer as a reader is shown it: each echo replaced by LEFT_OUT, and a closing line that says
        how many were left out. Its citations are those of `scored`, in the same order."""
        if not self.spans:
            return self.answer
        out, last = [], 0
        for start, end in self.spans:
            out.append(self.answer[last:start] + LEFT_OUT)
            last = end
        out.append(self.answer[last:])
        count = len(self.spans)
        note = (f"\n\n*searchbox: {count} passage{'s' if count > 1 else ''} that only repeated the harness's "
                "messages to the model left out (run_meta.json: citations.harness_echoes).*\n")
        return "".join(out).rstrip() + note

    def shown_checks(self, checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The recorded checks (numbered as the answer's own markers) numbered as the markers of `shown`."""
        back = {(source_id, answer_n): shown_n for source_id, ns in self.occurrences().items()
                for shown_n, answer_n in enumerate(ns)}
        return [{**c, "occurrence": back[key]} for c in checks
                if (key := (c.get("id"), c.get("occurrence"))) in back]

    def occurrences(self) -> dict[str, list[int]]:
        """Per source id, the answer's own occurrence numbers (as citations.markers counts them) of the
        citations left in `scored`, in order: the n-th one there is the answer's occurrences[id][n]."""
        seen: dict[str, int] = {}
        kept: dict[str, list[int]] = {}
        for marker in MARKER.finditer(self.answer):
            echoed = any(start < marker.end() and marker.start() < end for start, end in self.spans)
            for source_id, _ in marker_citations(marker[1]):
                if not echoed:
                    kept.setdefault(source_id, []).append(seen.get(source_id, 0))
                seen[source_id] = seen.get(source_id, 0) + 1
        return kept

    def record(self) -> list[str]:
        return [self.answer[start:end] for start, end in self.spans]


def harness_messages(session: Path) -> list[HarnessMessage]:
    """The messages the harness sent, from a session.jsonl, each with what the model had written before it."""
    messages: list[HarnessMessage] = []
    model_text: list[str] = []
    users = 0
    for row in read_jsonl(session):
        message = row.get("message") if row.get("type") == "message" else None
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if message.get("role") == "assistant":
            model_text.append(text)
        elif message.get("role") == "user":
            users += 1
            if users > 1:  # the first is the question
                messages.append(HarnessMessage(text, "\n".join(model_text)))
    return messages


def find_echoes(answer: str, messages: list[HarnessMessage]) -> Echoes:
    words = [(m[0].lower(), m.start(), m.end()) for m in _WORD.finditer(answer)]
    tokens: list[Any] = [word for word, _, _ in words]
    echoed: list[tuple[int, int]] = []  # word index ranges
    for message in messages:
        sent = [w.lower() for w in _WORD.findall(message.text)]
        own = f" {' '.join(w.lower() for w in _WORD.findall(message.model_before))} "
        matcher = SequenceMatcher(None, tokens, sent, autojunk=False)  # sees the masking of `tokens` below
        while True:
            match = matcher.find_longest_match(0, len(tokens), 0, len(sent))
            if match.size < ECHO_WORDS:
                break
            run = tokens[match.a:match.a + match.size]
            for i in range(match.a, match.a + match.size):
                tokens[i] = object()  # matched once: looked at no more
            if all(_SOURCE_ID.fullmatch(word) for word in run) or f" {' '.join(run)} " in own:
                continue
            echoed.append((match.a, match.a + match.size))
    spans = [(words[a][1], words[b - 1][2]) for a, b in sorted(echoed)]
    return Echoes(answer, _with_markers(answer, spans))


def job_echoes(answer: str, job_dir: Path) -> Echoes:
    """The echoes in this answer of the harness messages in the job's session.jsonl."""
    return find_echoes(answer, harness_messages(JobFolder(Path(job_dir)).session))


def _with_markers(answer: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans grown to take in each citation marker they touch, overlapping ones merged."""
    grown = []
    for start, end in spans:
        for marker in MARKER.finditer(answer):
            if marker.start() < end and start < marker.end():
                start, end = min(start, marker.start()), max(end, marker.end())
        grown.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(grown):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
