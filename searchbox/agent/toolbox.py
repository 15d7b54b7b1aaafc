"""The tools one run gets: the seven built-ins plus the catalog tools SEARCHBOX_TOOLS enables,
behind one `call`. Unknown tools and unusable arguments come back as error results the model can
act on; nothing a model sends can crash the run.

Fail-closed: when BASH_SANDBOX finds no confining level on this host (or the one it names is not
there), `bash` is not offered for the run at all, and `notes` says why for the feed."""

from __future__ import annotations

import json
from typing import Any

from searchbox.cancel import Cancelled
from searchbox.settings import Settings
from searchbox.tools.builtins import BUILTIN_TOOLS, BuiltinContext, ToolOutput, cut_output, run_builtin
from searchbox.tools.catalog import CatalogTool, enabled_tools
from searchbox.tools.retrieval_tools import run_catalog_tool
from searchbox.tools.sandbox import Level, SandboxConfig, choose
from searchbox.tools.truncate import truncate_head
from searchbox.workspace import Workspace


class RunToolbox:
    def __init__(self, workspace: Workspace, settings: Settings) -> None:
        self.workspace = workspace
        self.catalog = enabled_tools(settings.searchbox_tools)
        self.sandbox_level: Level = choose(settings.bash_sandbox)
        sandbox = SandboxConfig(level=settings.bash_sandbox, default_timeout=settings.bash_timeout_seconds,
                                max_timeout=min(600, 10 * settings.bash_timeout_seconds),
                                disk_bytes=settings.bash_disk_mb * 2**20, job_disk_bytes=settings.job_disk_mb * 2**20,
                                job_inodes=settings.job_files)
        self.builtin_context = BuiltinContext(workspace.work_dir, workspace.ledger, sandbox, settings.tool_output_bytes,
                                              workspace.cancel)
        self.max_bytes = settings.tool_output_bytes
        builtins = {name: b.spec for name, b in BUILTIN_TOOLS.items() if name != "bash" or self.sandbox_level.allows_bash}
        # Every tool on offer with its argument schema: also for checking a call without running it.
        self.specs: dict[str, CatalogTool] = {**builtins, **{tool.name: tool for tool in self.catalog}}
        self._schemas = [spec.openai_schema(settings.tool_descriptions) for spec in self.specs.values()]

    @property
    def notes(self) -> list[str]:
        """What a person should know about this run's tools (for the feed)."""
        level = self.sandbox_level
        if not level.allows_bash:
            return [f"bash is not offered in this run: {level.reason}"]
        if level.name == "off":
            return ["bash runs unconfined (BASH_SANDBOX=off): it sees the host's files as the app does"]
        return []

    @property
    def names(self) -> list[str]:
        return list(self.specs)

    def schemas(self) -> list[dict[str, Any]]:
        return self._schemas

    def call(self, name: str, arguments: dict[str, Any] | None, parse_error: str | None) -> ToolOutput:
        if parse_error:
            return ToolOutput(f"The arguments of {name} could not be parsed ({parse_error}). "
                              "Call the tool again with a valid JSON object.", is_error=True, details={"parse_error": parse_error})
        if name in BUILTIN_TOOLS and name in self.specs:
            return run_builtin(self.builtin_context, name, arguments)
        if name in {tool.name for tool in self.catalog}:
            return self._catalog(name, arguments)
        return ToolOutput(f"There is no tool named '{name}'. Available tools: {', '.join(self.names)}.",
                          is_error=True, details={"unknown_tool": name})

    def _catalog(self, name: str, arguments: dict[str, Any] | None) -> ToolOutput:
        try:
            result = run_catalog_tool(self.workspace.tool_context(), name, arguments)
        except Cancelled as cut:  # an embedding cut between two batches (those made are kept in the cache)
            return cut_output(name, cut)
        cut = truncate_head(json.dumps(result, indent=1, ensure_ascii=False), max_bytes=self.max_bytes)
        text = cut.text + ("\n[output cut to the tool output limit; ask for fewer results]" if cut.truncated else "")
        sources = [row["id"] for row in result.get("results", []) if isinstance(row, dict) and "id" in row]
        return ToolOutput(text, is_error="error" in result, details={"sources": sources, "truncated": cut.truncated})
