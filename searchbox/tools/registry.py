"""Every tool in one registry: the seven built-ins, then the catalog tools.

It picks the tools a run offers (SEARCHBOX_TOOLS for the catalog; bash only where a sandbox level
allows it; the run's toolbox, agent/toolbox.py, calls them by name), and writes catalog.json,
the published list of what the catalog offers (`python -m searchbox.tools.registry`; a test checks it
is up to date).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from searchbox.settings import SettingsError
from searchbox.tools.builtin import BUILTIN_TOOLS
from searchbox.tools.catalog import CATALOG_TOOLS
from searchbox.tools.tool import Tool

CATALOG_PATH = Path(__file__).with_name("catalog.json")


class ToolRegistry(Mapping[str, Tool]):
    """Tools by name, in the order they are offered to the model."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = {tool.name: tool for tool in tools}

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def schemas(self, descriptions: str = "full") -> list[dict[str, Any]]:
        """The OpenAI function-calling schemas (TOOL_DESCRIPTIONS: full or brief)."""
        return [tool.openai_schema(descriptions) for tool in self.values()]


REGISTRY = ToolRegistry([*BUILTIN_TOOLS, *CATALOG_TOOLS])


def enabled_tools(selection: str | None) -> list[Tool]:
    """The catalog tools SEARCHBOX_TOOLS picks: None = the catalog's defaults, "" = none, "a,b" = exactly those."""
    if selection is None:
        return [tool for tool in CATALOG_TOOLS if tool.default]
    names = [n.strip() for n in selection.split(",") if n.strip()]
    catalog = {tool.name: tool for tool in CATALOG_TOOLS}
    unknown = [n for n in names if n not in catalog]
    if unknown:
        raise SettingsError(
            f"SEARCHBOX_TOOLS names unknown tool(s) {', '.join(unknown)}; the catalog has {', '.join(catalog)}"
        )
    return [catalog[n] for n in dict.fromkeys(names)]


def offered_tools(catalog: Iterable[Tool], bash: bool) -> ToolRegistry:
    """The built-ins (bash only when a sandbox level allows it) and the given catalog tools."""
    return ToolRegistry([*(t for t in BUILTIN_TOOLS if bash or t.name != "bash"), *catalog])


def catalog_json() -> str:
    """catalog.json as the declarations make it."""
    entries = [{"name": t.name, "group": t.group, "default": t.default, "description": t.description,
                "brief": t.brief, "parameters": t.parameters} for t in CATALOG_TOOLS]
    return json.dumps({"tools": entries}, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    CATALOG_PATH.write_text(catalog_json(), encoding="utf-8")
    print(f"wrote {CATALOG_PATH}")
