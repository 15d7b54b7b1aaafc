"""Named bundles of knobs: the retrieval presets (RETRIEVAL_PRESET) and the app's effort selector."""

from __future__ import annotations

from typing import Any

# Named bundles of retrieval knobs. A preset fills only the knobs the user did not set. Why each bundle holds
# what it holds: recall@10 of each method on both question sets, docs/findings/2026-11-30-retrieval-recall.md.
RETRIEVAL_PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "nano": {
        "embed_model": "jinaai/jina-embeddings-v5-text-nano",
        "rerank_model": "jinaai/jina-reranker-v2-base-multilingual",
    },
    # Fast on a CPU host: a static (model2vec) embedder, no cross-encoder, dense search over a BM25
    # prefilter once a scope is large, fused with BM25 (static vectors alone miss needles in long
    # chunks: see bench/retrieval.py).
    "cpu": {
        "embed_model": "minishlab/potion-retrieval-32M",
        "rerank_model": "none",
        "dense_prefilter": 1000,
        "search_mode": "hybrid",
    },
    # Models that ship inside PyPI packages: work with no network at all. Hybrid search beats dense
    # with both, on the built-in and the pydocs question sets; the static embedder's weak ranking does
    # best fused with only BM25's top 10 (bench/retrieval_sets.py --fusion). Over a scope larger than its
    # dense_prefilter a search embeds only its BM25 candidates (MiniLM is slow on a CPU; the static model is fast, its
    # load is not), and the background indexer embeds the rest
    # (docs/findings/2026-12-06-first-search.md).
    "packaged": {"embed_model": "packaged:minilm", "rerank_model": "none", "search_mode": "hybrid",
                 "dense_prefilter": 50},
    "packaged-static": {"embed_model": "packaged:static", "rerank_model": "none", "search_mode": "hybrid",
                        "hybrid_bm25_candidates": 10, "dense_prefilter": 1000},
}

# Every knob some retrieval preset sets: switching presets resets them to the new preset's values or defaults.
RETRIEVAL_PRESET_KNOBS = sorted({key for bundle in RETRIEVAL_PRESETS.values() for key in bundle})


# The effort selector: how much test-time compute a run may spend.
EFFORT_PRESETS: dict[str, dict[str, Any]] = {
    "Quick": {"turn_budget": 1, "force_budget": False},
    "Balanced": {"turn_budget": 3, "force_budget": True},
    "Thorough": {"turn_budget": 8, "force_budget": True},
}
