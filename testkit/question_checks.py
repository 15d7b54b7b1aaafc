"""What the dataroom tests check of a hand-written question set against the room's own text: each answer's
facts stand in its gold files (a label someone can check by reading), each gold file holds one of them, and
the answer states them."""

from __future__ import annotations

from typing import Any


def normalise(text: str) -> str:
    """Lower case, whitespace folded: how a fact is looked for in a document."""
    return " ".join(text.lower().split())


def fact_problems(questions: list[dict[str, Any]], texts: dict[str, str]) -> list[tuple[str, str, str]]:
    """(question id, what is wrong, the fact or file) for every fact or gold file that does not hold up."""
    normalised = {path: normalise(text) for path, text in texts.items()}
    problems = []
    for q in questions:
        problems += [(q["id"], "no such file", f) for f in q["gold_files"] if f not in normalised]
        gold = [normalised.get(f, "") for f in q["gold_files"]]
        problems += [(q["id"], "fact in no gold file", fact) for fact in q["must_facts"]
                     if not any(normalise(fact) in text for text in gold)]
        problems += [(q["id"], "gold file without a fact", f) for f, text in zip(q["gold_files"], gold)
                     if not any(normalise(fact) in text for fact in q["must_facts"])]
        problems += [(q["id"], "fact missing from the answer", fact) for fact in q["must_facts"]
                     if normalise(fact) not in normalise(q["answer"])]
    return problems
