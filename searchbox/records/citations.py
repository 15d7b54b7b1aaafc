"""[sN] citations in an answer, checked against the source ledger (the ledger is the authority)."""

from __future__ import annotations

import re

_GROUP = re.compile(r"\[(\s*s\d+\s*(?:[,;]\s*s\d+\s*)*)\]")
_ID = re.compile(r"s\d+")


def cited_ids(answer: str) -> list[str]:
    """Ids in citation markers, in first-seen order: [s1], [s2, s5], [s3; s4]."""
    ids: list[str] = []
    for group in _GROUP.findall(answer):
        for source_id in _ID.findall(group):
            if source_id not in ids:
                ids.append(source_id)
    return ids


def check_citations(answer: str, ledger_ids: set[str]) -> dict[str, object]:
    ids = cited_ids(answer)
    invalid = [i for i in ids if i not in ledger_ids]
    return {"cited": ids, "valid": len(ids) - len(invalid), "invalid": len(invalid), "invalid_ids": invalid}
