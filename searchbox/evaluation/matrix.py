"""An ablation matrix: named bundles of knob overrides, each run over every question of a sweep.

A matrix file is JSON: {"entries": [{"name": "high-b1", "overrides": {"TURN_BUDGET": 1, ...},
"effort"?: "Quick" | "Balanced" | "Thorough"}]}. Knob names are those of design §2.1 in either case;
an effort expands through EFFORT_PRESETS and explicit overrides win over it. Every entry is checked
up front, so a typo fails the sweep before its first run rather than in the middle of the night.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchbox.assets import ASSETS_DIR
from searchbox.settings import Settings, SettingsError
from searchbox.settings.bundles import EFFORT_PRESETS
from searchbox.settings.resolved import knob_fields
from searchbox.tools.catalog import CATALOG_TOOLS
from searchbox.tools.registry import enabled_tools

DEFAULT_MATRIX_PATH = ASSETS_DIR / "ablation_matrix.json"
_KNOBS = {f.name for f in knob_fields()}
# Entry names become folder names under <out>/runs/.
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class MatrixError(ValueError):
    """A matrix that cannot be swept; the message names the entry."""


@dataclass(frozen=True)
class MatrixEntry:
    name: str
    overrides: dict[str, Any]  # Settings field names -> coerced values, effort already expanded

    def knobs(self) -> dict[str, Any]:
        """The overrides under their environment-variable names, as results and sweep.json record them."""
        return {key.upper(): value for key, value in self.overrides.items()}

    def settings(self, base: Settings) -> Settings:
        try:
            settings = base.with_overrides(**self.overrides)
            enabled_tools(settings.searchbox_tools)  # an unknown tool name would fail every run
        except SettingsError as exc:
            raise MatrixError(f"matrix entry {self.name!r}: {exc}") from None
        return settings


def _default_matrix() -> dict[str, Any]:
    """Four tool sets, each at budget 1 (stop after the first turn) and at a forced budget of 4."""
    catalog = CATALOG_TOOLS
    tool_sets = {
        "high": ",".join(t.name for t in catalog if t.group == "high"),
        "low": ",".join(t.name for t in catalog if t.group == "low"),
        "keyword": "keyword_search",
        "none": "",  # built-ins only: grep, read, bash ...
    }
    budgets = {"b1": {"TURN_BUDGET": 1, "FORCE_BUDGET": False}, "b4f": {"TURN_BUDGET": 4, "FORCE_BUDGET": True}}
    return {"entries": [{"name": f"{label}-{suffix}", "overrides": {"SEARCHBOX_TOOLS": tools, **budget}}
                        for label, tools in tool_sets.items() for suffix, budget in budgets.items()]}


DEFAULT_MATRIX: dict[str, Any] = _default_matrix()


def load_matrix(path: Path) -> list[MatrixEntry]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise MatrixError(f"cannot read matrix {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise MatrixError(f"matrix {path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    return parse_matrix(data)


def parse_matrix(data: Any) -> list[MatrixEntry]:
    """Every entry normalized and validated against the default settings."""
    raw_entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(raw_entries, list) or not raw_entries:
        raise MatrixError('a matrix is a JSON object {"entries": [...]} with at least one entry')
    entries: list[MatrixEntry] = []
    for number, raw in enumerate(raw_entries, start=1):
        entry = _parse_entry(raw, number)
        if any(e.name == entry.name for e in entries):
            raise MatrixError(f"matrix entry {entry.name!r} appears twice; entry names must be unique")
        entries.append(entry)
    return entries


def _parse_entry(raw: Any, number: int) -> MatrixEntry:
    name = raw.get("name") if isinstance(raw, dict) else None
    if not isinstance(name, str) or not SAFE_NAME.match(name):
        raise MatrixError(f"matrix entry {number} needs a name of letters, digits, '.', '_' or '-', got {name!r}")
    where = f"matrix entry {name!r}"
    unknown = set(raw) - {"name", "overrides", "effort"}
    if unknown:
        raise MatrixError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (expected name, overrides, effort)")
    overrides: dict[str, Any] = {}
    effort = raw.get("effort")
    if effort is not None:
        if effort not in EFFORT_PRESETS:
            raise MatrixError(f"{where}: effort must be one of {', '.join(EFFORT_PRESETS)}, got {effort!r}")
        overrides.update(EFFORT_PRESETS[effort])
    given = raw.get("overrides", {})
    if not isinstance(given, dict):
        raise MatrixError(f"{where}: overrides must be an object of KNOB: value")
    explicit: set[str] = set()
    for knob, value in given.items():
        key = str(knob).strip().lower()
        if key not in _KNOBS:
            raise MatrixError(f"{where}: unknown knob {knob!r} (see python -m searchbox knobs)")
        if key in explicit:
            raise MatrixError(f"{where}: knob {key.upper()} is given twice")
        if value is None:
            raise MatrixError(f"{where}: {key.upper()} is null; leave the knob out to keep the base value")
        explicit.add(key)
        overrides[key] = value
    # Coerce through Settings so the recorded overrides are the values a run really gets.
    settings = MatrixEntry(name, overrides).settings(Settings())
    return MatrixEntry(name, {key: getattr(settings, key) for key in overrides})


if __name__ == "__main__":  # regenerate the asset after a catalog change
    DEFAULT_MATRIX_PATH.write_text(json.dumps(DEFAULT_MATRIX, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {DEFAULT_MATRIX_PATH}")
