"""The catalog tools: one function per entry of catalog.json, each (context, arguments) -> result.

Results are plain JSON data. Chunks carry their source id (from the ledger), path (relative to the
working folder, so `read` can open it), chunk index, score and text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchbox.cancel import Cancelled
from searchbox.retrieval import primitives
from searchbox.retrieval.engine import Hit, RetrievalEngine
from searchbox.retrieval.interfaces import ModelLoadError
from searchbox.tools.catalog import ToolArgumentError, catalog_by_name, validate_arguments
from searchbox.tools.paths import DATAROOM_DIR, confine_write, dataroom_relative
from searchbox.tools.excerpt import excerpt, term_weights
from searchbox.tools.sources import SourceLedger
from searchbox.tools.truncate import MAX_BYTES, format_size

# What a result's JSON adds around its rows (mode, notes, elapsed_ms); the shortest excerpt worth showing.
_ENVELOPE_BYTES = 600
_MIN_EXCERPT_CHARS = 200


@dataclass
class ToolContext:
    work_dir: Path  # the agent's working folder; holds dataroom/
    engine: RetrievalEngine
    ledger: SourceLedger
    max_bytes: int = MAX_BYTES  # TOOL_OUTPUT_BYTES: results past it become excerpts, then are left out


ToolFunction = Callable[[ToolContext, dict[str, Any]], dict[str, Any]]


def _hits(ctx: ToolContext, hits: list[Hit], query: str) -> tuple[list[dict[str, Any]], str | None]:
    """The hits as result rows, best first, within the tool output limit, and a note when they had to
    be made to fit: first each text becomes an excerpt around the query's words (an equal share of the
    limit), then results past the limit are left out and not cited (no source id the model never saw)."""
    rows = [_row(ctx, hit) for hit in hits]
    note = None
    if _size(rows) > ctx.max_bytes and rows:
        row_overhead = _size([{**rows[0], "text": ""}]) - _ENVELOPE_BYTES
        share = (ctx.max_bytes - _ENVELOPE_BYTES) // len(rows) - row_overhead
        weights = term_weights(query, [row["text"] for row in rows])
        for row in rows:
            row["text"] = excerpt(row["text"], weights, max(share, _MIN_EXCERPT_CHARS))
        note = (f"texts are excerpts around the query's words, to keep within the {format_size(ctx.max_bytes)} "
                "tool output limit; read a result's path for all of it")
        kept = len(rows)
        while kept > 1 and _size(rows[:kept]) > ctx.max_bytes:
            kept -= 1
        if kept < len(rows):
            note += f"; {len(rows) - kept} more result{'s' if len(rows) - kept > 1 else ''} left out"
            rows = rows[:kept]
    for row, hit in zip(rows, hits):
        chunk = ctx.engine.corpus.chunks[hit.chunk]
        row["id"] = ctx.ledger.cite_chunk(row["path"], chunk.index, chunk.start, chunk.end, chunk.label, chunk.text).id
    return rows, note


def _row(ctx: ToolContext, hit: Hit) -> dict[str, Any]:
    chunk = ctx.engine.corpus.chunks[hit.chunk]
    row: dict[str, Any] = {"id": "s000", "path": f"{DATAROOM_DIR}/{chunk.path}", "chunk": chunk.index,
                           "score": round(hit.score, 4)}
    if chunk.label:
        row["location"] = chunk.label
    row["text"] = chunk.text
    return row


def _size(rows: list[dict[str, Any]]) -> int:
    """Bytes of the rows as the model sees them (indented JSON), with room for the result's other keys."""
    return _ENVELOPE_BYTES + len(json.dumps(rows, indent=1, ensure_ascii=False).encode())


def _with_hits(result: dict[str, Any], ctx: ToolContext, hits: list[Hit], query: str) -> dict[str, Any]:
    rows, note = _hits(ctx, hits, query)
    result["results"] = rows
    if note:
        result["note"] = note
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


def search_dataroom(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    scope, scope_note = _scope(ctx, args.get("paths"))
    hits, mode, prefiltered = ctx.engine.search(args["query"], args["k"], scope)
    result: dict[str, Any] = {"mode": mode}
    if scope_note:
        result["paths_note"] = scope_note
    if prefiltered:
        result["prefilter"] = "large scope: only keyword-matching chunks were embedded (DENSE_PREFILTER)"
    return _with_hits(result, ctx, hits, args["query"])


def keyword_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    scope, scope_note = _scope(ctx, args.get("paths"))
    hits = ctx.engine.keyword_search(args["query"], args["k"], scope)
    return _with_hits({"mode": "bm25", **({"paths_note": scope_note} if scope_note else {})}, ctx, hits, args["query"])


def answer_question(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    hits, candidates = ctx.engine.answer_candidates(args["question"], args["k"])
    return _with_hits({"candidates": candidates, "reranker": ctx.engine.reranker().name}, ctx, hits, args["question"])


def embed_texts(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    texts, role = args["texts"], args["role"]
    vectors = ctx.engine.encoder.encode(texts, role)
    out = confine_write(ctx.work_dir, args["out"])
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as handle:
        for text, vector in zip(texts, vectors):
            handle.write(json.dumps({"text": text, "role": role, "vector": [round(float(x), 6) for x in vector]}) + "\n")
    return {"path": out.relative_to(ctx.work_dir).as_posix(), "count": len(texts), "dim": int(vectors.shape[1])}


def rerank(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    documents = args["documents"]
    scores = ctx.engine.rerank(args["query"], documents)
    order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))
    top_n = args.get("top_n") or len(documents)
    return {
        "reranker": ctx.engine.reranker().name,
        "results": [{"index": i, "score": round(scores[i], 4), "document": documents[i]} for i in order[:top_n]],
    }


def similarity(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    a = ctx.engine.encoder.encode(args["a"], "passage")
    b = ctx.engine.encoder.encode(args["b"], "passage")
    values = primitives.similarity(a, b)
    return {"pairwise": values} if len(args["a"]) == len(args["b"]) else {"matrix": values}


def classify(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    texts, labels = args["texts"], args["labels"]
    picks = primitives.classify(ctx.engine.encoder.encode(texts, "passage"), ctx.engine.encoder.encode(labels, "query"))
    return {
        "results": [
            {"text": t, "label": labels[best], "score": round(score, 4), "scores": dict(zip(labels, scores))}
            for t, (best, score, scores) in zip(texts, picks)
        ]
    }


def cluster(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    texts = args["texts"]
    groups = primitives.cluster(ctx.engine.encoder.encode(texts, "passage"), args["threshold"])
    return {"threshold": args["threshold"], "clusters": [{"members": g, "texts": [texts[i] for i in g]} for g in groups]}


def select_diverse(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    texts = args["texts"]
    chosen, dropped = primitives.select_diverse(ctx.engine.encoder.encode(texts, "passage"), args["k"])
    return {"selected": [{"index": i, "text": texts[i]} for i in chosen], "near_duplicates_dropped": dropped}


TOOL_FUNCTIONS: dict[str, ToolFunction] = {
    "search_dataroom": search_dataroom,
    "answer_question": answer_question,
    "keyword_search": keyword_search,
    "embed_texts": embed_texts,
    "rerank": rerank,
    "similarity": similarity,
    "classify": classify,
    "cluster": cluster,
    "select_diverse": select_diverse,
}


def run_catalog_tool(ctx: ToolContext, name: str, raw_args: dict[str, Any] | None) -> dict[str, Any]:
    """Validate, run, and time one catalog tool. Bad arguments become an error result, never a crash."""
    tool = catalog_by_name().get(name)
    if tool is None or name not in TOOL_FUNCTIONS:
        return {"error": f"unknown tool '{name}'; available: {', '.join(TOOL_FUNCTIONS)}"}
    try:
        args, notes = validate_arguments(tool, raw_args)
        started = time.perf_counter()
        result = TOOL_FUNCTIONS[name](ctx, args)
    except (ToolArgumentError, ModelLoadError) as exc:
        return {"error": str(exc)}
    except Cancelled:  # not a failure of the tool: the run's caller says how the call ended
        raise
    except Exception as exc:  # a tool bug or an OS error (out= naming a folder) must not end the run
        return {"error": f"{name} failed: {type(exc).__name__}: {exc}"}
    result["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
    if notes:
        result["argument_notes"] = notes
    return result
