"""The catalog's tools over the caller's own texts: embed, rerank, compare, classify, cluster, pick
a diverse subset, with the run's embedding model and reranker."""

from __future__ import annotations

import json
import os
from typing import Any

from searchbox.retrieval import primitives
from searchbox.tools.catalog.results import json_result
from searchbox.tools.paths import confine_write, open_regular, relative_to_work
from searchbox.tools.tool import ToolContext, ToolResult, tool


@tool(
    brief="Embed texts and append the vectors to a JSON-lines file.",
    description="Embeds the given texts and appends one JSON line per text ({text, role, vector}) to a file in the "
    "working folder. Returns the file's path, how many vectors were written and their dimension.",
    group="low", default=False,
    properties={
        "texts": {"type": "array", "items": {"type": "string"}, "description": "texts to embed",
                  "minItems": 1, "maxItems": 256},
        "role": {"type": "string", "enum": ["query", "passage"], "default": "passage",
                 "description": "query for questions, passage for documents"},
        "out": {"type": "string", "description": "jsonl file to append to, relative to the working folder",
                "default": "embeddings.jsonl"},
    },
    required=["texts"],
)
def embed_texts(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    texts, role = args["texts"], args["role"]
    vectors = ctx.engine.encoder.encode(texts, role)
    out = confine_write(ctx.work_dir, args["out"])
    out.parent.mkdir(parents=True, exist_ok=True)
    path = relative_to_work(ctx.work_dir, out)
    # A FIFO bash left at the name would block an append forever; a link swapped in is refused.
    with os.fdopen(open_regular(out, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "w", encoding="utf-8") as handle:
        for text, vector in zip(texts, vectors):
            handle.write(json.dumps({"text": text, "role": role, "vector": [round(float(x), 6) for x in vector]}) + "\n")
    return json_result(ctx, {"path": path, "count": len(texts), "dim": int(vectors.shape[1])})


@tool(
    brief="Score documents against a query, best first.",
    description="Scores each document against the query with the reranker and returns them best first as {index, "
    "score, document}.",
    group="low", default=False,
    properties={
        "query": {"type": "string", "description": "the query", "maxLength": 2000},
        "documents": {"type": "array", "items": {"type": "string"}, "description": "documents to score",
                      "minItems": 1, "maxItems": 100},
        "top_n": {"type": "integer", "description": "how many to return (default: all)", "minimum": 1,
                  "maximum": 100},
    },
    required=["query", "documents"],
)
def rerank(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    documents = args["documents"]
    scores = ctx.engine.rerank(args["query"], documents)
    order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))
    top_n = args.get("top_n") or len(documents)
    return json_result(ctx, {
        "reranker": ctx.engine.reranker().name,
        "results": [{"index": i, "score": round(scores[i], 4), "document": documents[i]} for i in order[:top_n]],
    })


@tool(
    brief="Cosine similarity between two lists of texts.",
    description="Cosine similarity between two lists of texts: pairwise when both lists have the same length, "
    "otherwise the full matrix (rows a, columns b).",
    group="low", default=False,
    properties={
        "a": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100},
        "b": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100},
    },
    required=["a", "b"],
)
def similarity(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    a = ctx.engine.encoder.encode(args["a"], "passage")
    b = ctx.engine.encoder.encode(args["b"], "passage")
    values = primitives.similarity(a, b)
    return json_result(ctx, {"pairwise": values} if len(args["a"]) == len(args["b"]) else {"matrix": values})


@tool(
    brief="Give each text its nearest label by embedding similarity.",
    description="Assigns each text the nearest label by embedding similarity; returns the label, its score and the "
    "score of every label.",
    group="low", default=False,
    properties={
        "texts": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100},
        "labels": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50},
    },
    required=["texts", "labels"],
)
def classify(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    texts, labels = args["texts"], args["labels"]
    picks = primitives.classify(ctx.engine.encoder.encode(texts, "passage"), ctx.engine.encoder.encode(labels, "query"))
    return json_result(ctx, {
        "results": [
            {"text": t, "label": labels[best], "score": round(score, 4), "scores": dict(zip(labels, scores))}
            for t, (best, score, scores) in zip(texts, picks)
        ]
    })


@tool(
    brief="Group texts by embedding similarity.",
    description="Groups texts whose embeddings are within a cosine threshold of a cluster's centre (greedy, in input "
    "order).",
    group="low", default=False,
    properties={
        "texts": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 200},
        "threshold": {"type": "number", "description": "cosine needed to join a cluster", "default": 0.82,
                      "minimum": 0.1, "maximum": 0.999},
    },
    required=["texts"],
)
def cluster(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    texts = args["texts"]
    groups = primitives.cluster(ctx.engine.encoder.encode(texts, "passage"), args["threshold"])
    clusters = [{"members": g, "texts": [texts[i] for i in g]} for g in groups]
    return json_result(ctx, {"threshold": args["threshold"], "clusters": clusters})


@tool(
    brief="Pick a diverse subset of texts, dropping near-duplicates.",
    description="Picks a diverse subset of the texts (farthest-first by embedding), dropping near-duplicates.",
    group="low", default=False,
    properties={
        "texts": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 200},
        "k": {"type": "integer", "description": "how many to keep (default: 5)", "default": 5,
              "minimum": 1, "maximum": 100},
    },
    required=["texts"],
)
def select_diverse(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    texts = args["texts"]
    chosen, dropped = primitives.select_diverse(ctx.engine.encoder.encode(texts, "passage"), args["k"])
    selected = [{"index": i, "text": texts[i]} for i in chosen]
    return json_result(ctx, {"selected": selected, "near_duplicates_dropped": dropped})
