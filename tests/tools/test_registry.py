"""The one tool registry: every tool, built-in or catalog, is declared the same way, answers the same
way, refuses an unknown name and bad arguments the same way, and runs from the CLI's `tool` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from searchbox.agent.toolbox import RunToolbox
from searchbox.cli.main import main
from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.settings import Settings
from searchbox.tools.arguments import ToolArgumentError
from searchbox.tools.builtin import BUILTIN_TOOLS
from searchbox.tools.catalog import CATALOG_TOOLS
from searchbox.tools.registry import REGISTRY
from searchbox.tools.sandbox import choose
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import Tool, ToolContext, ToolResult
from searchbox.workspace import Workspace

# One call of every tool, in an order that works in one job folder (write before edit).
EVERY_CALL: dict[str, dict[str, Any]] = {
    "read": {"path": "dataroom/legal/lease.txt"},
    "bash": {"command": "ls dataroom"},
    "write": {"path": "notes.md", "content": "first draft"},
    "edit": {"path": "notes.md", "edits": [{"oldText": "first", "newText": "second"}]},
    "grep": {"pattern": "Harbour"},
    "find": {"pattern": "*.md"},
    "ls": {"path": "dataroom"},
    "search_dataroom": {"query": "office lease", "k": 2},
    "answer_question": {"question": "When does the lease end?", "k": 1},
    "keyword_search": {"query": "lease"},
    "embed_texts": {"texts": ["alpha"], "out": "vectors.jsonl"},
    "rerank": {"query": "lease", "documents": ["the lease ends in 2029", "revenue grew"]},
    "similarity": {"a": ["cat"], "b": ["kitten"]},
    "classify": {"texts": ["the lease"], "labels": ["legal", "finance"]},
    "cluster": {"texts": ["a cat", "a cat", "revenue"]},
    "select_diverse": {"texts": ["a cat", "a cat", "revenue"], "k": 2},
}


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = prepare_work_dir(tmp_path / "job", write_tree(tmp_path / "room", SMALL_DATAROOM))
    return ToolContext(work, SourceLedger())


def test_every_tool_is_one_declaration_in_one_registry() -> None:
    assert list(REGISTRY) == [tool.name for tool in (*BUILTIN_TOOLS, *CATALOG_TOOLS)]
    assert all(isinstance(tool, Tool) for tool in REGISTRY.values())
    assert {tool.group for tool in BUILTIN_TOOLS} == {"builtin"}
    assert {tool.group for tool in CATALOG_TOOLS} == {"high", "low"}


def test_an_unknown_tool_is_one_clear_error_result(tmp_path: Path) -> None:
    settings = Settings.resolve(env={}, searchbox_tools="keyword_search")
    workspace = Workspace.create(tmp_path / "job", write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
    toolbox = RunToolbox(workspace, settings)
    result = toolbox.call("teleport", {"to": "mars"}, None)
    assert result.is_error and result.details == {"unknown_tool": "teleport"}
    assert result.text == f"There is no tool named 'teleport'. Available tools: {', '.join(toolbox.names)}."
    # A tool the registry has but the run does not offer is unknown to the run.
    assert toolbox.call("rerank", {"query": "x", "documents": ["a"]}, None).text == (
        f"There is no tool named 'rerank'. Available tools: {', '.join(toolbox.names)}.")


def test_argument_errors_come_back_one_way_from_validation_and_from_the_tool(ctx: ToolContext) -> None:
    missing = REGISTRY["read"].run(ctx, {})
    refused = REGISTRY["read"].run(ctx, {"path": "../outside.txt"})  # valid arguments the tool refuses
    wrong_type = REGISTRY["rerank"].run(ctx, {"query": "x", "documents": {"a": 1}})
    for result, message in [(missing, "read needs the argument 'path' (a string)"),
                            (refused, "'../outside.txt' is outside the working folder; use a path inside it"),
                            (wrong_type, "rerank: argument 'documents' must be a list of strings")]:
        assert result == ToolResult(message, is_error=True)
    clamped = REGISTRY["ls"].run(ctx, {"limit": 10**6, "colour": "red"})
    assert not clamped.is_error
    assert clamped.details["argument_notes"] == ["ignored unknown argument 'colour'", "'limit' clamped from 1000000 to 10000"]
    assert clamped.text.endswith("[argument notes: ignored unknown argument 'colour'; 'limit' clamped from 1000000 to 10000]")


def test_a_failing_tool_is_an_error_result_never_an_exception(ctx: ToolContext) -> None:
    def broken(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        raise OSError("disk on fire")

    def refusing(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        raise ToolArgumentError("not that one")

    schema = {"type": "object", "properties": {}, "required": []}
    assert Tool("broken", "b", "b", schema, broken).run(ctx, {}) == ToolResult.error("broken failed: OSError: disk on fire")
    assert Tool("refusing", "r", "r", schema, refusing).run(ctx, {}) == ToolResult.error("not that one")


def test_a_catalog_tool_without_retrieval_says_so(ctx: ToolContext) -> None:
    result = REGISTRY["keyword_search"].run(ctx, {"query": "lease"})
    assert result.is_error and "retrieval is not available here" in result.text


def test_brief_descriptions_are_one_line_each() -> None:
    for full, brief in zip(REGISTRY.schemas("full"), REGISTRY.schemas("brief")):
        assert brief["function"]["description"] == REGISTRY[full["function"]["name"]].brief
        assert "\n" not in brief["function"]["description"]


def test_a_run_offers_the_builtins_and_the_enabled_catalog_tools(tmp_path: Path) -> None:
    settings = Settings.resolve(env={}, searchbox_tools="keyword_search")
    workspace = Workspace.create(tmp_path / "job", write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
    toolbox = RunToolbox(workspace, settings)
    builtins = [t.name for t in BUILTIN_TOOLS if choose(settings.bash_sandbox).allows_bash or t.name != "bash"]
    assert toolbox.names == [*builtins, "keyword_search"]
    assert RunToolbox(workspace, settings, every_catalog_tool=True).names == [*builtins, *(t.name for t in CATALOG_TOOLS)]


@pytest.mark.slow  # a workspace and, for a catalog tool, a retrieval engine per call
def test_every_tool_runs_from_the_cli(tmp_path: Path, packaged_settings: Settings,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert list(EVERY_CALL) == [n for n in EVERY_CALL if n in REGISTRY] and set(EVERY_CALL) == set(REGISTRY)
    room, job = write_tree(tmp_path / "room", SMALL_DATAROOM), tmp_path / "job"
    knobs = ["--set", "RETRIEVAL_PRESET=packaged", "--set", f"SEARCHBOX_CACHE_DIR={packaged_settings.searchbox_cache_dir}"]
    bash_offered = choose(Settings.resolve().bash_sandbox).allows_bash
    for name, args in EVERY_CALL.items():
        code = main(["tool", name, "--dataroom", str(room), "--job", str(job), *knobs, "--args", json.dumps(args)])
        printed = json.loads(capsys.readouterr().out)
        if name == "bash" and not bash_offered:
            assert code == 1 and printed["output"].startswith("There is no tool named 'bash'")
            continue
        assert code == 0 and not printed["is_error"], (name, printed["output"][:500])
        assert set(printed) >= {"output", "is_error", "details", "elapsed_ms"}
        assert ("result" in printed) == (name in {t.name for t in CATALOG_TOOLS})
    assert (job / "work" / "notes.md").read_text() == "second draft"
    assert json.loads((job / "sources.json").read_text())  # the ledger of a kept job is saved


def test_the_cli_refuses_an_unknown_tool_with_the_registry_s_error(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    room = write_tree(tmp_path / "room", SMALL_DATAROOM)
    assert main(["tool", "teleport", "--dataroom", str(room), "--args", "{}"]) == 1
    assert json.loads(capsys.readouterr().out)["output"].startswith("There is no tool named 'teleport'. Available tools: read")


def test_a_run_s_knobs_reach_its_tools(tmp_path: Path) -> None:
    """TOOL_DESCRIPTIONS, TOOL_OUTPUT_BYTES and the bash and job budgets go from the settings to every tool."""
    room = write_tree(tmp_path / "room", {**SMALL_DATAROOM, "long.txt": "".join(f"line {n}\n" for n in range(3000))})
    settings = Settings.resolve(env={}, tool_descriptions="brief", tool_output_bytes=2048, bash_timeout_seconds=7,
                                job_disk_mb=3, job_files=50)
    toolbox = RunToolbox(Workspace.create(tmp_path / "job", room, settings), settings)
    assert toolbox.schemas() == toolbox.tools.schemas("brief") != toolbox.tools.schemas("full")
    sandbox = toolbox.context.sandbox
    assert (sandbox.default_timeout, sandbox.max_timeout, sandbox.job_disk_bytes, sandbox.job_inodes) == (7, 70, 3 * 2**20, 50)
    read = toolbox.call("read", {"path": "dataroom/long.txt"}, None)
    assert len(read.text.encode()) < 2048 + 200 and "(2KB limit)" in read.text
