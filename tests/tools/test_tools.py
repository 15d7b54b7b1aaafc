"""Every catalog tool, run as the agent's toolbox runs it (`Tool.run`), on a real dataroom."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import catalog_result
from searchbox.tools.registry import REGISTRY
from searchbox.tools.tool import ToolContext, ToolResult


def refusal(ctx: ToolContext, name: str, args: dict) -> ToolResult:
    result = REGISTRY[name].run(ctx, args)
    assert result.is_error and result.data is None
    return result


def top_paths(result: dict) -> list[str]:
    return [r["path"] for r in result["results"]]


def test_search_dataroom_finds_the_paraphrased_fact(tool_context: ToolContext) -> None:
    tool_context.engine.settings = tool_context.engine.settings.with_overrides(search_mode="dense")
    result = catalog_result(tool_context, "search_dataroom", {"query": "how many vacation days do employees get", "k": 3})
    assert result["mode"] == "dense"
    assert top_paths(result)[0] == "dataroom/hr/handbook.md"
    first = result["results"][0]
    assert first["id"] == "s1" and first["chunk"] == 0 and 0 < first["score"] <= 1
    assert "28 days" in first["text"]


def test_results_are_recorded_in_the_ledger_once(tool_context: ToolContext) -> None:
    catalog_result(tool_context, "search_dataroom", {"query": "office lease end date", "k": 2})
    catalog_result(tool_context, "search_dataroom", {"query": "office lease end date", "k": 2})
    sources = tool_context.ledger.sources()
    assert [s.id for s in sources] == ["s1", "s2"]
    assert sources[0].path.startswith("dataroom/")


def test_every_citing_tool_names_the_ids_it_shows_in_one_field(tool_context: ToolContext) -> None:
    """`sources` is the one field the loop reads whatever the tool; the recorded details keep their keys."""
    search = REGISTRY["search_dataroom"].run(tool_context, {"query": "office lease end date", "k": 2})
    read = REGISTRY["read"].run(tool_context, {"path": "dataroom/legal/lease.txt"})
    grep = REGISTRY["grep"].run(tool_context, {"pattern": "Harbour", "path": "dataroom/legal"})
    listing = REGISTRY["ls"].run(tool_context, {"path": "dataroom"})
    assert search.sources == [row["id"] for row in search.data["results"]] == search.details["sources"]
    lease = next(s.id for s in tool_context.ledger.sources() if s.path == "dataroom/legal/lease.txt" and s.kind == "range")
    assert read.sources == [lease] and read.details["source"] == lease
    assert grep.sources == grep.details["sources"] and len(grep.sources) == 1
    assert listing.sources == [] and not listing.is_error


def test_paths_limit_the_scope(tool_context: ToolContext) -> None:
    result = catalog_result(tool_context, "search_dataroom", {"query": "money", "k": 8, "paths": ["dataroom/finance"]})
    assert set(top_paths(result)) == {"dataroom/finance/revenue_2025.md", "dataroom/finance/costs.md"}
    result = catalog_result(tool_context, "keyword_search", {"query": "euros", "paths": ["legal/"]})
    assert result["results"] == []


def test_keyword_search_ranks_exact_terms(tool_context: ToolContext) -> None:
    result = catalog_result(tool_context, "keyword_search", {"query": "Frankfurt data centre", "k": 2})
    assert result["mode"] == "bm25" and top_paths(result)[0] == "dataroom/finance/costs.md"


def test_answer_question_reranks_a_wide_candidate_set(tool_context: ToolContext) -> None:
    result = catalog_result(tool_context, "answer_question", {"question": "When does the lease expire?", "k": 2})
    assert result["candidates"] == 5  # the whole small dataroom: max(20, 6k) capped by its size
    assert result["reranker"] == "cosine"
    assert top_paths(result)[0] == "dataroom/legal/lease.txt"
    assert len(result["results"]) == 2


def test_hybrid_mode_fuses_dense_and_bm25(tool_context: ToolContext) -> None:
    tool_context.engine.settings = tool_context.engine.settings.with_overrides(search_mode="hybrid")
    result = catalog_result(tool_context, "search_dataroom", {"query": "hardware security keys", "k": 2})
    assert result["mode"] == "hybrid" and top_paths(result)[0] == "dataroom/tech/security.md"


def test_embed_texts_appends_vectors_inside_work(tool_context: ToolContext, small_work: Path) -> None:
    result = catalog_result(tool_context, "embed_texts", {"texts": ["alpha", "beta"], "out": "vec/out.jsonl"})
    assert result["path"] == "vec/out.jsonl" and result["count"] == 2 and result["dim"] == 384
    catalog_result(tool_context, "embed_texts", {"texts": ["gamma"], "out": "vec/out.jsonl", "role": "query"})
    lines = [json.loads(line) for line in (small_work / "vec/out.jsonl").read_text().splitlines()]
    assert [row["text"] for row in lines] == ["alpha", "beta", "gamma"] and lines[2]["role"] == "query"
    assert len(lines[0]["vector"]) == 384


def test_embed_texts_refuses_dataroom_and_escapes(tool_context: ToolContext, small_work: Path) -> None:
    inside = refusal(tool_context, "embed_texts", {"texts": ["x"], "out": "dataroom/evil.jsonl"})
    assert "read-only" in inside.text
    outside = refusal(tool_context, "embed_texts", {"texts": ["x"], "out": "../escape.jsonl"})
    assert "outside the working folder" in outside.text
    assert not (small_work.parent / "escape.jsonl").exists()


def test_embed_texts_refuses_a_fifo_left_at_its_out_file(tool_context: ToolContext, small_work: Path) -> None:
    # Opened for appending, a FIFO with no reader blocked the tool (and the run) forever.
    os.mkfifo(small_work / "trap.jsonl")
    refused = refusal(tool_context, "embed_texts", {"texts": ["x"], "out": "trap.jsonl"})
    assert "FIFO" in refused.text


def test_rerank_similarity_classify_cluster_select(tool_context: ToolContext) -> None:
    docs = ["The cat sat on the mat.", "Quarterly revenue grew strongly.", "A kitten slept on the rug."]
    reranked = catalog_result(tool_context, "rerank", {"query": "sales growth", "documents": docs, "top_n": 2})
    assert [r["index"] for r in reranked["results"]][0] == 1 and len(reranked["results"]) == 2

    pairwise = catalog_result(tool_context, "similarity", {"a": docs[:2], "b": [docs[2], docs[1]]})
    assert len(pairwise["pairwise"]) == 2 and abs(pairwise["pairwise"][1] - 1.0) < 1e-4
    matrix = catalog_result(tool_context, "similarity", {"a": docs, "b": ["cats"]})
    assert len(matrix["matrix"]) == 3 and len(matrix["matrix"][0]) == 1

    classified = catalog_result(tool_context, "classify", {"texts": docs, "labels": ["animals", "finance"]})
    assert [r["label"] for r in classified["results"]] == ["animals", "finance", "animals"]

    clusters = catalog_result(tool_context, "cluster", {"texts": docs + [docs[1]], "threshold": 0.9})
    assert [1, 3] in [c["members"] for c in clusters["clusters"]]

    diverse = catalog_result(tool_context, "select_diverse", {"texts": docs + [docs[0]], "k": 2})
    assert diverse["near_duplicates_dropped"] == [3] and len(diverse["selected"]) == 2


def test_errors_come_back_as_results(tool_context: ToolContext) -> None:  # an unknown name: test_registry.py
    assert "needs the argument" in refusal(tool_context, "rerank", {"query": "x"}).text
    clamped = REGISTRY["search_dataroom"].run(tool_context, {"query": "x", "k": 999})
    assert len(clamped.data["results"]) == 5 and clamped.details["argument_notes"]
