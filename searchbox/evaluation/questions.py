"""Loading a question set (JSONL, design §4) with errors that name the offending line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QUESTION_TYPES = ("literal", "paraphrased", "multihop", "aggregate", "negative")
_REQUIRED = ("id", "question", "answer", "must_facts", "gold_files", "type")


def load_questions(path: Path) -> list[dict[str, Any]]:
    """Every question of the file, validated; ValueError naming the file and line on the first problem."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ValueError(f"cannot read question set {path}: {exc.strerror or exc}") from None
    questions: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            question = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
        validate_question(question, where)
        if question["id"] in seen:
            raise ValueError(f"{where}: duplicate id {question['id']!r} (first on line {seen[question['id']]})")
        seen[question["id"]] = number
        questions.append(question)
    if not questions:
        raise ValueError(f"{path}: no questions")
    return questions


def find_question(questions: list[dict[str, Any]], question_id: str) -> dict[str, Any]:
    for question in questions:
        if question["id"] == question_id:
            return question
    raise ValueError(f"no question with id {question_id!r} in the question set")


def validate_question(question: Any, where: str) -> None:
    if not isinstance(question, dict):
        raise ValueError(f"{where}: expected a JSON object")
    missing = [key for key in _REQUIRED if key not in question]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    for key in ("id", "question", "answer"):
        if not isinstance(question[key], str) or not question[key].strip():
            raise ValueError(f"{where}: {key} must be a non-empty string")
    if question["type"] not in QUESTION_TYPES:
        raise ValueError(f"{where}: type {question['type']!r} is not one of {', '.join(QUESTION_TYPES)}")
    # Scoring needs at least one fact: a verdict over zero facts would mean nothing.
    if not _strings(question["must_facts"]) or not question["must_facts"]:
        raise ValueError(f"{where}: must_facts must be a non-empty list of strings")
    if not _strings(question["gold_files"]):
        raise ValueError(f"{where}: gold_files must be a list of strings")
    if not _strings(question.get("computed_facts", [])):
        raise ValueError(f"{where}: computed_facts must be a list of strings")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) and item.strip() for item in value)
