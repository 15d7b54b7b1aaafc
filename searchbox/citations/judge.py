"""A model that reads a cited passage and says whether it states the claim: the optional judge of
citation support (CITATION_JUDGE), behind check_answer beside the lexical rule (citations/check.py).

The lexical rule sees words; a reader sees what the passage says of them. The judge is asked one
(claim, passage) at a time and must quote the words of the passage its verdict rests on, so the
caller can hold the verdict to the passage (a quote the passage lacks voids it) and a reader can check
it. The prompt's examples are about a company of neither shipped dataroom, so the calibration pairs
(bench/data/support_pairs.jsonl) stay held out from it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from searchbox.citations.markers import MARKER

JUDGE_VERDICTS = ("supported", "contradicted", "unsupported")
JUDGE_MAX_TOKENS = 160  # a quote and a verdict; a reasoning model's thinking is not waited for

INSTRUCTIONS = """You check citations. You get a passage from a document and a claim that cites it. Decide \
what the passage says about the claim, reading it as a careful reader would, not by matching words:
- "supported": the passage states the claim: the same figures, dates and names, tied to the same \
subject, year or period, in the same relation.
- "contradicted": the passage states otherwise: another figure or year for that subject, the roles or \
figures swapped, or it says the thing did not happen, is not done yet, is only planned, preliminary, \
a draft or unaudited.
- "unsupported": the passage does not say it either way (it is about something else, or holds the \
words without stating the claim).
First copy the few words of the passage that decide it, exactly as written, then give the verdict. \
Reply with one JSON object and nothing else: {"quote": "<words copied from the passage>", \
"verdict": "supported" | "contradicted" | "unsupported"}"""

# Worked examples, as earlier turns of the conversation (a fixed prefix the runtime's cache keeps).
EXAMPLES = (
    ("Orrin Tide Ltd's FY2023 accounts were audited by Beck & Moss LLP; its FY2024 accounts are in draft "
     "and have not yet been audited.", "Beck & Moss LLP audited Orrin Tide's FY2024 accounts.",
     "its FY2024 accounts are in draft and have not yet been audited", "contradicted"),
    ("Net revenue | 2022: 41,200 | 2023: 47,950 (USD thousands)",
     "Orrin Tide's net revenue rose to about $48.0 million in 2023.", "2023: 47,950", "supported"),
    ("The Harlow lease runs to 30 June 2027. Base rent is $31.00 per square foot.",
     "The Harlow lease includes an option to renew for five years.", "The Harlow lease runs to 30 June 2027",
     "unsupported"),
    ("Mira Osei became chief financial officer in May 2024, succeeding Tom Vail, who became chief "
     "operating officer.", "Tom Vail succeeded Mira Osei as chief financial officer.",
     "Mira Osei became chief financial officer in May 2024, succeeding Tom Vail", "contradicted"),
)


@dataclass(frozen=True)
class JudgeReading:
    verdict: str  # one of JUDGE_VERDICTS, or "unknown" when the reply cannot be read
    quote: str | None  # the passage's words the verdict rests on, as the judge copied them
    reason: str  # why, in words a reader can check (or why the reply is void)
    raw: str | None  # the judge's reply as it came
    seconds: float
    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ChatReply:
    text: str
    prompt_tokens: int
    output_tokens: int


class JudgeUnavailable(Exception):
    """The judge's model could not answer (its endpoint is down, the runtime failed): the reason."""


# messages, max_tokens -> the reply, greedy; raises JudgeUnavailable. The run makes one of a chat model
# (agent/support_judge.py): this module stays plain logic.
Chat = Callable[[list[dict[str, str]], int], ChatReply]


class SupportJudge:
    def __init__(self, name: str, chat: Chat) -> None:
        self.name = name  # recorded with every verdict it gives: the model's id
        self.chat = chat

    def read(self, claim: str, passage: str) -> JudgeReading:
        """`claim`: the citing sentence as the answer has it (its markers are taken out here)."""
        started = time.monotonic()
        try:
            reply = self.chat(judge_messages(claim, passage), JUDGE_MAX_TOKENS)
        except JudgeUnavailable as exc:
            return JudgeReading("unknown", None, f"the judge failed: {exc}", None, time.monotonic() - started, 0, 0)
        verdict, quote, reason = parse_reading(reply.text)
        return JudgeReading(verdict, quote, reason, reply.text, time.monotonic() - started,
                            reply.prompt_tokens, reply.output_tokens)


def judge_messages(claim: str, passage: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": INSTRUCTIONS}]
    for example_passage, example_claim, quote, verdict in EXAMPLES:
        messages.append({"role": "user", "content": _ask(example_claim, example_passage)})
        messages.append({"role": "assistant", "content": json.dumps({"quote": quote, "verdict": verdict})})
    messages.append({"role": "user", "content": _ask(plain_claim(claim), passage)})
    return messages


def plain_claim(sentence: str) -> str:
    """The sentence as a claim: its citation markers and Markdown emphasis taken out."""
    return " ".join(re.sub(r"\*\*|__|`", "", MARKER.sub("", sentence)).split())


def parse_reading(raw: str) -> tuple[str, str | None, str]:
    """(verdict, quote, reason) from the judge's reply, leniently: prose or fences around the JSON, single
    quotes, a reply cut after the verdict."""
    verdict_found = _FIELD.search(raw.replace("'", '"')) if "verdict" in raw else None
    verdict = verdict_found[1].strip().lower() if verdict_found else ""
    quote_found = re.search(r"""["']quote["']\s*:\s*(["'])(.*?)\1\s*[,}]""", raw, re.DOTALL)
    quote = " ".join(quote_found[2].split()) if quote_found and quote_found[2].strip() else None
    if verdict not in JUDGE_VERDICTS:
        return "unknown", quote, f"the judge gave no valid verdict ({verdict or 'none'})"
    return verdict, quote, f'the judge reads {verdict} from "{quote}"' if quote else f"the judge reads {verdict}"


_FIELD = re.compile(r'"verdict"\s*:\s*"([^"]*)"')


def _ask(claim: str, passage: str) -> str:
    return f"Passage:\n{passage}\n\nClaim:\n{claim}"
