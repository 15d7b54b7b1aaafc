"""An optional LLM judge: the model compares a run's answer with the gold answer and says
correct / partial / wrong. Its prompt and raw reply are kept, so a verdict can always be audited.
An ad-hoc question (no gold answer: ablate --query) is graded on whether the answer answers it."""

from __future__ import annotations

import re
from typing import Any

from searchbox.llm.errors import LLMError
from searchbox.llm.jsonfix import loads_lenient
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


def judge_answer(model: ChatModel, question: dict[str, Any], answer: str) -> dict[str, Any]:
    """{"model", "prompt", "raw", "verdict", "reason"}; verdict "unknown" when the reply cannot be read."""
    if question.get("answer") is None:
        prompt = JUDGE_PROMPT_NO_GOLD.format(question=question["question"], answer=answer)
    else:
        prompt = JUDGE_PROMPT.format(question=question["question"], gold=question["answer"], answer=answer)
    record: dict[str, Any] = {"model": model.model_id, "prompt": prompt, "raw": None}
    try:
        response = model.complete([{"role": "user", "content": prompt}], max_tokens=JUDGE_MAX_TOKENS, temperature=0.0)
    except LLMError as exc:
        return {**record, "verdict": "unknown", "reason": f"judge failed: {exc}"}
    record["raw"] = response.text
    return {**record, **parse_verdict(response.text)}


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
