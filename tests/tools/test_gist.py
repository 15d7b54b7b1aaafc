"""The one-line gist of a tool result that the terminal and the feed show, built by each tool from what
it knows (never parsed back out of its text), and a paths filter that matches nothing said as such."""

from __future__ import annotations

from pathlib import Path

from conftest import catalog_result
from searchbox.tools.registry import REGISTRY
from searchbox.tools.tool import ToolContext, ToolResult


def gist(ctx: ToolContext, name: str, args: dict) -> str:
    return REGISTRY[name].run(ctx, args).one_line()


def test_gists_say_what_each_call_found(tool_context: ToolContext, small_work: Path) -> None:
    (small_work / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 41)))
    assert gist(tool_context, "keyword_search", {"query": "revenue costs", "k": 3}) == \
        "2 hits in 2 files: revenue_2025.md, costs.md"
    assert gist(tool_context, "embed_texts", {"texts": ["a", "b"], "out": "v.jsonl"}) == "path=v.jsonl, count=2, dim=384"
    # Two cited rows of one file are one file, whatever ids stand before them.
    assert gist(tool_context, "grep", {"pattern": "[Rr]evenue", "path": "dataroom"}) == "2 matches in 1 file: revenue_2025.md"
    assert gist(tool_context, "grep", {"pattern": "line 1", "glob": "*.txt"}) == "11 matches in 1 file: notes.txt"
    assert gist(tool_context, "grep", {"pattern": "no such words anywhere"}) == "0 matches"
    assert gist(tool_context, "read", {"path": "notes.txt", "limit": 2}) == "38 more lines in file. Use offset=3 to continue."
    assert gist(tool_context, "read", {"path": "notes.txt"}) == "40 lines (the whole file)"
    assert gist(tool_context, "read", {"path": "notes.txt", "offset": 31}) == "lines 31-40 of 40"
    # A failing command is an error result too: its exit code says most.
    assert gist(tool_context, "bash", {"command": "echo a; echo b; exit 1"}) == "exit 1, 4 lines of output"
    assert gist(tool_context, "bash", {"command": "sleep 5", "timeout": 1}) == "timed out, 1 line of output"
    assert gist(tool_context, "read", {"path": "nowhere.txt"}) == "File not found: nowhere.txt"
    assert gist(tool_context, "rerank", {"query": "q"}) == "rerank needs the argument 'documents' (a list of strings)"
    assert gist(tool_context, "ls", {"path": "dataroom"}) == "finance/"
    assert len(ToolResult("x" * 500).one_line()) <= 120


def test_a_paths_filter_that_matches_nothing_searches_everything_and_says_why(tool_context) -> None:
    result = catalog_result(tool_context, "keyword_search", {"query": "lease", "paths": ["yours"]})
    assert "dataroom/legal/lease.txt" in [r["path"] for r in result["results"]]
    assert "match no file or folder" in result["paths_note"] and "whole dataroom was searched" in result["paths_note"]
    dense = catalog_result(tool_context, "search_dataroom", {"query": "lease", "paths": ["dataroom/nowhere"]})
    assert dense["results"] and "whole dataroom" in dense["paths_note"]
    scoped = catalog_result(tool_context, "keyword_search", {"query": "lease", "paths": ["dataroom/legal"]})
    assert [r["path"] for r in scoped["results"]] == ["dataroom/legal/lease.txt"]


def test_a_search_whose_arguments_were_clamped_still_says_what_it_found(tool_context) -> None:
    result = REGISTRY["keyword_search"].run(tool_context, {"query": "lease", "k": 999})
    assert result.details["argument_notes"] == ["'k' clamped from 999 to 50"]
    assert result.one_line() == "1 hits in 1 file: lease.txt"
