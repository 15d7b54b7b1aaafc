"""An optional LLM judge of the answer (`score --judge`, a sweep's --judge): the model compares a run's
answer with the gold answer and says correct / partial / wrong. Its prompt and raw reply are kept, so a
verdict can always be audited. An ad-hoc question (no gold answer: ablate --query) is graded on whether
the answer answers it. Not the run's support judge (citations/judge.py), which the run asks itself."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from searchbox.grading.recorded import RecordedRun
from searchbox.llm.errors import LLMError
from searchbox.llm.dialects.jsonfix import loads_lenient
from searchbox.llm.types import ChatModel

VERDICTS = ("correct", "partial", "wrong")

JUDGE_PROMPT = """You grade an answer to a question about a company's documents against a gold answer.

Question:
{question}

Gold answer:
{gold}

Answer to grade:
{answer}

Judge the facts only, not style, length or citation markers such as [s1].
- "correct": the answer states every key fact of the gold answer and contradicts none.
- "partial": some key facts are right, others are missing or wrong.
- "wrong": the key facts are missing or wrong, or the answer accepts a false premise that the gold answer corrects.

Reply with one JSON object and nothing else:
{{"verdict": "correct" | "partial" | "wrong", "reason": "<one sentence>"}}"""

# With no gold answer the judge can only say whether the question was answered, not whether rightly.
JUDGE_PROMPT_NO_GOLD = """You grade an answer to a question about a company's documents. There is no reference answer.

Question:
{question}

Answer to grade:
{answer}

Judge only whether the answer answers the question, not style, length or citation markers such as [s1].
- "correct": it answers every part of the question directly and specifically.
- "partial": it answers some parts, or only vaguely.
- "wrong": it does not answer the question (off-topic, evasive, or says it found nothing).

Reply with one JSON object and nothing else:
{{"verdict": "correct" | "partial" | "wrong", "reason": "<one sentence>"}}"""

JUDGE_MAX_TOKENS = 1024  # room for a reasoning model to think before the JSON


@dataclass(frozen=True)
class JudgeVerdict:
    model: str
    prompt: str
    raw: str | None  # the judge's reply as it came; None when it gave none
    verdict: str  # one of VERDICTS, or "unknown" when the reply cannot be read
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JudgeGrade:
    reading: JudgeVerdict | None  # None: the run left no answer to judge

    def record(self) -> dict[str, Any]:
        return {"judge": self.reading.as_dict() if self.reading is not None else None}


@dataclass(frozen=True)
class AnswerJudge:
    """The judge as a grader: it reads the answer without its echoes of the harness, as the matcher does."""
    model: ChatModel

    def grade(self, run: RecordedRun, question: dict[str, Any]) -> JudgeGrade:
        return JudgeGrade(judge_answer(self.model, question, run.scored) if run.answer_found else None)


def judge_answer(model: ChatModel, question: dict[str, Any], answer: str) -> JudgeVerdict:
    """The judge's verdict on `answer`: "unknown" when the reply cannot be read."""
    if question.get("answer") is None:
        prompt = JUDGE_PROMPT_NO_GOLD.format(question=question["question"], answer=answer)
    else:
        prompt = JUDGE_PROMPT.format(question=question["question"], gold=question["answer"], answer=answer)
    try:
        response = model.complete([{"role": "user", "content": prompt}], max_tokens=JUDGE_MAX_TOKENS, temperature=0.0)
    except LLMError as exc:
        return JudgeVerdict(model.model_id, prompt, None, "unknown", f"judge failed: {exc}")
    return JudgeVerdict(model.model_id, prompt, response.text, **parse_verdict(response.text))


def parse_verdict(raw: str) -> dict[str, str]:
    """The verdict and reason from the judge's reply, leniently: prose or code fences around the JSON
    are ignored, single quotes and trailing commas repaired."""
    found = re.search(r"\{.*\}", raw, re.DOTALL)
    try:
        data = loads_lenient(found[0] if found else raw)
    except ValueError:
        return {"verdict": "unknown", "reason": "the judge's reply holds no readable JSON verdict"}
    verdict = str(data.get("verdict", "")).strip().lower() if isinstance(data, dict) else ""
    if verdict not in VERDICTS:
        return {"verdict": "unknown", "reason": f"the judge's reply has no valid verdict ({verdict or 'none'})"}
    return {"verdict": verdict, "reason": str(data.get("reason", ""))}
