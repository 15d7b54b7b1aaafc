"""The ranked searches of the catalog: dense (search_dataroom), lexical (keyword_search) and search
then rerank (answer_question). Chunks carry their source id (from the ledger), path (relative to the
working folder, so `read` can open it), chunk index, score and text."""

from __future__ import annotations

import json
from typing import Any

from searchbox.retrieval.chunk_vectors import Coverage
from searchbox.retrieval.engine import Hit
from searchbox.tools.catalog.results import json_result
from searchbox.tools.catalog.excerpt import excerpt, term_weights
from searchbox.tools.paths import DATAROOM_DIR, dataroom_relative
from searchbox.tools.tool import ToolContext, ToolResult, tool
from searchbox.tools.truncate import format_size

# What a result's JSON adds around its rows (mode, notes). The shortest excerpt worth showing: with
# 8 excerpts of about 430 characters in 4 KB, the 1.5B model was shown no auditor's name for "Who audited
# the FY2025 financial statements?" and answered wrong; 4 of about 750 showed 82 of the built-in set's
# 124 must-facts instead of 65 (bench/result_facts.py).
_ENVELOPE_BYTES = 600
_MIN_EXCERPT_CHARS = 700
# Results that do not fit are named (path and chunk), at most this many: with k=50 the names alone
# filled 4 KB and starved the excerpts.
_MAX_NAMED = 8

# The arguments search_dataroom and keyword_search share, so that the two are compared on equal terms.
_CHUNKS = {"type": "integer", "description": "how many chunks to return", "default": 8, "minimum": 1, "maximum": 50}
# Bounded, since a grammar-held call is as long as its schema allows: a forced call of the packaged 1.5B
# once listed made-up folders in `paths` until the output cap (2,048 tokens, 289 s; schema_grammar).
_PATHS = {"type": "array", "items": {"type": "string", "maxLength": 256}, "maxItems": 4,
          "description": "limit the search to these files or folders (relative to dataroom/)"}
_QUERY_CHARS = 500
# The tools that rank by embedding: a run that offers one indexes its dataroom in the background (BACKGROUND_INDEX).
DENSE_TOOLS = frozenset({"search_dataroom", "answer_question"})
# What a search over a partly embedded dataroom (DENSE_PREFILTER, indexing under way) tells the model.
_PARTLY_DENSE = ("; only those (the query's keyword matches among them) were ranked by meaning: "
                 "keyword_search or grep reach the rest")
_PARTLY_HYBRID = "; the rest was ranked by keywords only"


@tool(
    brief="Search the dataroom by meaning; returns the best chunks, each with its source id.",
    description="Semantic (dense embedding) search over the dataroom, or over the given files/folders. Returns the k "
    "most similar chunks with their source id, path, chunk index, score and text. Good for questions "
    "phrased differently from the documents.",
    group="high", default=True,
    properties={
        "query": {"type": "string", "description": "what to look for, in natural language",
                  "maxLength": _QUERY_CHARS},
        "k": _CHUNKS,
        "paths": _PATHS,
    },
    required=["query"],
)
def search_dataroom(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    scope, scope_note = _scope(ctx, args.get("paths"))
    hits, mode, coverage = ctx.engine.search(args["query"], args["k"], scope)
    result: dict[str, Any] = {"mode": mode}
    if scope_note:
        result["paths_note"] = scope_note
    if not coverage.complete:
        result["coverage"] = coverage.line() + (_PARTLY_HYBRID if mode == "hybrid" else _PARTLY_DENSE)
    return _with_coverage(_with_hits(result, ctx, hits, args["query"]), coverage)


@tool(
    brief="Search the dataroom by keywords (BM25); returns the best chunks, each with its source id.",
    description="Lexical ranked search (BM25, stemmed) over the dataroom, or over the given files/folders. Returns "
    "the k best-matching chunks. Good for exact names, numbers and terms.",
    group="high", default=False,
    properties={
        "query": {"type": "string", "description": "keywords to rank by", "maxLength": _QUERY_CHARS},
        "k": _CHUNKS,
        "paths": _PATHS,
    },
    required=["query"],
)
def keyword_search(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    scope, scope_note = _scope(ctx, args.get("paths"))
    hits = ctx.engine.keyword_search(args["query"], args["k"], scope)
    return _with_hits({"mode": "bm25", **({"paths_note": scope_note} if scope_note else {})}, ctx, hits, args["query"])


@tool(
    brief="Find the passages that best answer a question (search, then rerank), with source ids.",
    description="Finds the passages that best answer a question: dense retrieval of a wide candidate set, then a "
    "cross-encoder reranker keeps the k best. Slower than search_dataroom, more precise.",
    group="high", default=True,
    properties={
        "question": {"type": "string", "description": "the question to answer", "maxLength": _QUERY_CHARS},
        "k": {"type": "integer", "description": "how many passages to return", "default": 5,
              "minimum": 1, "maximum": 20},
    },
    required=["question"],
)
def answer_question(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    hits, candidates, coverage = ctx.engine.answer_candidates(args["question"], args["k"])
    result: dict[str, Any] = {"candidates": candidates, "reranker": ctx.engine.reranker().name}
    if not coverage.complete:
        result["coverage"] = coverage.line() + _PARTLY_DENSE
    return _with_coverage(_with_hits(result, ctx, hits, args["question"]), coverage)


def _hits(ctx: ToolContext, hits: list[Hit], query: str) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """The hits as result rows, best first, within the tool output limit; the paths of hits that did
    not fit; and a note when they had to be made to fit. Only as many rows are kept as fit with an
    excerpt of at least _MIN_EXCERPT_CHARS around the query's words (an equal share of the limit); the
    rest are named by path and chunk but not cited (no source id for a text the model never saw)."""
    rows = [_row(ctx, hit) for hit in hits]
    also: list[str] = []
    note = None
    if _size(rows) > ctx.max_bytes and rows:
        row_overhead = _size([{**rows[0], "text": ""}]) - _ENVELOPE_BYTES
        fit = max(1, (ctx.max_bytes - _ENVELOPE_BYTES) // (row_overhead + _MIN_EXCERPT_CHARS))
        rows, rest = rows[:fit], rows[fit:]
        also = [_named(row) for row in rest[:_MAX_NAMED]]
        # The names take their bytes from the excerpts' share, which stays at least half the minimum.
        share = (ctx.max_bytes - _ENVELOPE_BYTES - _size_of(also)) // len(rows) - row_overhead
        weights = term_weights(query, [row["text"] for row in rows])
        for row in rows:
            row["text"] = excerpt(row["text"], weights, max(share, _MIN_EXCERPT_CHARS // 2))
        note = (f"texts are excerpts around the query's words, to keep within the {format_size(ctx.max_bytes)} "
                "tool output limit; read a result's path for all of it")
        while len(rows) > 1 and _size(rows) + _size_of(also) > ctx.max_bytes:
            rest.insert(0, rows.pop())
            also = [_named(row) for row in rest[:_MAX_NAMED]]
        if rest:
            named = "" if len(also) == len(rest) else f" (the first {len(also)})"
            note += (f"; {len(rest)} more result{'s' if len(rest) > 1 else ''} in also_matched{named}, by rank: "
                     "read them, or search with paths to see their text")
    for row, hit in zip(rows, hits):
        chunk = ctx.engine.corpus.chunks[hit.chunk]
        row["id"] = ctx.ledger.cite_chunk(row["path"], chunk.index, chunk.start, chunk.end, chunk.label, chunk.text).id
    return rows, also, note


def _row(ctx: ToolContext, hit: Hit) -> dict[str, Any]:
    chunk = ctx.engine.corpus.chunks[hit.chunk]
    row: dict[str, Any] = {"id": "s000", "path": f"{DATAROOM_DIR}/{chunk.path}", "chunk": chunk.index,
                           "score": round(hit.score, 4)}
    if chunk.label:
        row["location"] = chunk.label
    row["text"] = chunk.text
    return row


def _named(row: dict[str, Any]) -> str:
    return f"{row['path']} (chunk {row['chunk']})"


def _size(rows: list[dict[str, Any]]) -> int:
    """Bytes of the rows as the model sees them, with room for the result's other keys."""
    return _ENVELOPE_BYTES + _size_of(rows)


def _size_of(value: Any) -> int:
    """Bytes of a value as the model sees it (indented JSON); nothing for an empty one (not shown)."""
    return len(json.dumps(value, indent=1, ensure_ascii=False).encode()) if value else 0


def _with_hits(result: dict[str, Any], ctx: ToolContext, hits: list[Hit], query: str) -> ToolResult:
    rows, also, note = _hits(ctx, hits, query)
    result["results"] = rows
    if also:
        result["also_matched"] = also
    if note:
        result["note"] = note
    return json_result(ctx, result)


def _with_coverage(result: ToolResult, coverage: Coverage) -> ToolResult:
    """The dense half's coverage in the record (events.jsonl's tool_end details), complete or not."""
    result.details["dense_coverage"] = coverage.record()
    return result


def _scope(ctx: ToolContext, paths: list[str] | None) -> tuple[list[str] | None, str | None]:
    """The dataroom-relative paths to search in, and a note when the paths match no file: then the
    whole dataroom is searched (a small model invents paths; an error or an empty result only made it
    repeat the call)."""
    if not paths:
        return None, None
    scope = [dataroom_relative(p) for p in paths]
    if ctx.engine.scope(scope):
        return scope, None
    return None, (f"paths {paths} match no file or folder of dataroom/, so the whole dataroom was searched; "
                  "take paths from ls or find results")
