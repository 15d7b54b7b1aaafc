"""The tools one run gets, from the registry: the seven built-ins plus the catalog tools SEARCHBOX_TOOLS
enables, behind one `call`. Unknown tools and unusable arguments come back as error results the model
can act on; nothing a model sends can crash the run.

Fail-closed: when BASH_SANDBOX finds no confining level on this host (or the one it names is not
there), `bash` is not offered for the run at all, and `notes` says why for the feed. BASH_SANDBOX=off
without SEARCHBOX_OPERATOR=1 is refused the same way: bash gets what `auto` finds, and `notes` says so."""

from __future__ import annotations

from typing import Any

from searchbox.settings import Settings
from searchbox.tools.catalog import CATALOG_TOOLS
from searchbox.tools.registry import ToolRegistry, enabled_tools, offered_tools
from searchbox.tools.sandbox import Level, for_settings
from searchbox.tools.tool import ToolResult
from searchbox.workspace import Workspace


def tools_on_offer(settings: Settings, every_catalog_tool: bool = False, *,
                   bash: bool = True) -> tuple[Level, ToolRegistry]:
    """The sandbox level bash would run at, and the tools offered: the built-ins (bash only where that
    level allows it, and never with `bash=False`) and the catalog tools SEARCHBOX_TOOLS enables, or with
    `every_catalog_tool` the whole catalog (the CLI's `tool` command and the explorer, which run any tool
    on request)."""
    level = for_settings(settings)
    catalog = CATALOG_TOOLS if every_catalog_tool else enabled_tools(settings.searchbox_tools)
    return level, offered_tools(catalog, bash=bash and level.allows_bash)


class RunToolbox:
    def __init__(self, workspace: Workspace, settings: Settings, *, every_catalog_tool: bool = False,
                 bash: bool = True) -> None:
        self.workspace = workspace
        # Every tool on offer with its argument schema: also for checking a call without running it.
        self.sandbox_level, self.tools = tools_on_offer(settings, every_catalog_tool, bash=bash)
        self.context = workspace.tool_context()
        self._schemas = self.tools.schemas(settings.tool_descriptions)

    @property
    def notes(self) -> list[str]:
        """What a person should know about this run's tools (for the feed)."""
        level = self.sandbox_level
        if not level.allows_bash:
            return [f"bash is not offered in this run: {level.reason}"]
        if level.requested == "off" and level.name != "off":
            return [level.reason]
        if level.name == "off":
            return ["bash runs unconfined (BASH_SANDBOX=off): it sees the host's files as the app does"]
        return []

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def schemas(self) -> list[dict[str, Any]]:
        return self._schemas

    def source_texts(self, ids: list[str]) -> dict[str, str]:
        return self.workspace.source_texts(ids)

    def call(self, name: str, arguments: dict[str, Any] | None, parse_error: str | None) -> ToolResult:
        """Run one offered tool by name; a name not on offer gets an error result that lists those that are."""
        if parse_error:
            return ToolResult.error(f"The arguments of {name} could not be parsed ({parse_error}). "
                                    "Call the tool again with a valid JSON object.", parse_error=parse_error)
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult.error(f"There is no tool named '{name}'. Available tools: {', '.join(self.tools)}.",
                                    unknown_tool=name)
        return tool.run(self.context, arguments)
