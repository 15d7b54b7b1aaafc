"""The one-line gist of a tool result that the terminal and the feed show, and a paths filter that
matches nothing said as such."""

from __future__ import annotations

import json

from conftest import catalog_result
from searchbox.tools.gist import result_gist
from searchbox.tools.registry import REGISTRY


def test_gists_say_what_each_call_found() -> None:
    hits = {"mode": "dense", "results": [{"id": "s1", "path": "dataroom/a/x.md"}, {"id": "s2", "path": "dataroom/b/y.pdf"},
                                         {"id": "s3", "path": "dataroom/a/x.md"}]}
    assert result_gist("search_dataroom", json.dumps(hits, indent=1), None, False) == "3 hits in 2 files: x.md, y.pdf"
    grep = "dataroom/a.md:3:audit\ndataroom/b.md:9:auditor\ndataroom/b.md:12:audit"
    assert result_gist("grep", grep, {"matches": 3}, False) == "3 matches in 2 files: a.md, b.md"
    read = "line one\nline two\n\n[Showing lines 1-2 of 40. Use offset=3 to continue.]"
    assert result_gist("read", read, {}, False) == "Showing lines 1-2 of 40. Use offset=3 to continue."
    assert result_gist("bash", "a\nb\n", {"exit_code": 1}, False) == "exit 1, 2 lines of output"
    assert result_gist("bash", "", {"exit_code": -9, "timed_out": True}, False).startswith("timed out")
    assert result_gist("embed_texts", '{"path": "v.jsonl", "count": 2, "dim": 384}', None, False) == \
        "path=v.jsonl, count=2, dim=384"
    assert result_gist("read", "Error: no such file", None, True) == "Error: no such file"
    assert result_gist("rerank", "rerank needs the argument 'documents' (a list of strings)", None, True) == \
        "rerank needs the argument 'documents' (a list of strings)"
    assert len(result_gist("ls", "x" * 500, None, False)) <= 120


def test_a_paths_filter_that_matches_nothing_searches_everything_and_says_why(tool_context) -> None:
    result = catalog_result(tool_context, "keyword_search", {"query": "lease", "paths": ["yours"]})
    assert "dataroom/legal/lease.txt" in [r["path"] for r in result["results"]]
    assert "match no file or folder" in result["paths_note"] and "whole dataroom was searched" in result["paths_note"]
    dense = catalog_result(tool_context, "search_dataroom", {"query": "lease", "paths": ["dataroom/nowhere"]})
    assert dense["results"] and "whole dataroom" in dense["paths_note"]
    scoped = catalog_result(tool_context, "keyword_search", {"query": "lease", "paths": ["dataroom/legal"]})
    assert [r["path"] for r in scoped["results"]] == ["dataroom/legal/lease.txt"]


def test_a_search_whose_arguments_were_clamped_still_says_what_it_found(tool_context) -> None:
    result = REGISTRY.run(tool_context, "keyword_search", {"query": "lease", "k": 999})
    assert result.details["argument_notes"] == ["'k' clamped from 999 to 50"]
    assert result_gist("keyword_search", result.text, result.details, False) == "1 hits in 1 file: lease.txt"
