"""The reliability tallies: a hardening test counts what it tried and handled and reports it here, and
`python bench/reliability.py` gathers the reports into the README's table. A report is printed (seen
with `pytest -s`) and, where TALLIES_ENV names a file, added to it as a JSON row: the bench reads
those rows, never the tests' printed output."""

from __future__ import annotations

import json
import os
from pathlib import Path

TALLIES_ENV = "SEARCHBOX_RELIABILITY_TALLIES"


def report(what: str, figures: str) -> None:
    print(f"\nRELIABILITY {what}: {figures}")
    path = os.environ.get(TALLIES_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"what": what, "figures": figures}) + "\n")


def read_reports(path: Path) -> list[dict[str, str]]:
    """The reports added to `path`, in the order they came."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
