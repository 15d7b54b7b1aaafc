"""What a small model's context gets from tools: brief tool descriptions and a tool output limit
(TOOL_DESCRIPTIONS, TOOL_OUTPUT_BYTES), on real tools over a real dataroom."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchbox.tools.builtins import BUILTIN_TOOLS, BuiltinContext, run_builtin
from searchbox.tools.catalog import enabled_tools, load_catalog
from searchbox.tools.retrieval_tools import ToolContext, run_catalog_tool
from searchbox.tools.sources import SourceLedger

EVERY_SPEC = [tool.spec for tool in BUILTIN_TOOLS.values()] + list(load_catalog())


@pytest.mark.parametrize("spec", EVERY_SPEC, ids=lambda spec: spec.name)
def test_a_brief_schema_keeps_what_a_call_needs(spec) -> None:
    full, brief = spec.openai_schema("full")["function"], spec.openai_schema("brief")["function"]
    assert brief["name"] == full["name"] and brief["description"] == spec.brief
    assert "\n" not in spec.brief and len(spec.brief) <= 100
    properties = full["parameters"]["properties"]
    assert brief["parameters"]["properties"].keys() == properties.keys()
    assert brief["parameters"]["required"] == full["parameters"]["required"]
    for name, prop in brief["parameters"]["properties"].items():
        assert prop["type"] == properties[name]["type"]
        assert prop.get("enum") == properties[name].get("enum") and prop.get("default") == properties[name].get("default")
        assert "description" not in prop and "maximum" not in prop


def test_a_default_run_s_tools_take_half_the_prompt_when_brief() -> None:
    offered = [tool.spec for tool in BUILTIN_TOOLS.values()] + enabled_tools(None)

    def size(descriptions: str) -> int:
        return sum(len(json.dumps(spec.openai_schema(descriptions))) for spec in offered)

    assert size("brief") < size("full") / 2


def test_a_search_returns_the_results_that_fit_and_cites_only_those(tool_context: ToolContext) -> None:
    everything = run_catalog_tool(tool_context, "keyword_search", {"query": "revenue lease costs office", "k": 8})
    assert len(everything["results"]) >= 3 and "note" not in everything
    small = ToolContext(tool_context.work_dir, tool_context.engine, SourceLedger(), max_bytes=1024)
    limited = run_catalog_tool(small, "keyword_search", {"query": "revenue lease costs office", "k": 8})
    shown = limited["results"]
    assert 1 <= len(shown) < len(everything["results"])
    assert [r["path"] for r in shown] == [r["path"] for r in everything["results"][:len(shown)]]
    left_out = len(everything["results"]) - len(shown)
    assert limited["note"].startswith(f"{left_out} more result") and "1KB tool output limit" in limited["note"]
    assert [s.id for s in small.ledger.sources()] == [r["id"] for r in shown]  # no id the model never saw
    assert len(json.dumps(limited, indent=1)) <= 1024


def test_builtins_cut_at_the_limit_and_say_how_to_read_on(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    (work / "dataroom" / "long.txt").write_text("".join(f"line {n}: {'x' * 60}\n" for n in range(1, 501)))
    ctx = BuiltinContext(work, SourceLedger(), max_bytes=2048)
    read = run_builtin(ctx, "read", {"path": "dataroom/long.txt"})
    assert len(read.text.encode()) < 2048 + 300
    last = read.details["last_line"]
    assert 20 <= last < 40 and f"Use offset={last + 1} to continue" in read.text and "(2KB limit)" in read.text
    grep = run_builtin(ctx, "grep", {"pattern": "line", "path": "dataroom", "limit": 1000})
    assert "2000 lines or 2KB, whichever comes first output limit reached" in grep.text
    bash = run_builtin(ctx, "bash", {"command": "cat dataroom/long.txt"})
    assert "line 500:" in bash.text and "line 1:" not in bash.text and "(2KB limit)" in bash.text
