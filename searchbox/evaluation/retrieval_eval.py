"""Retrieval-only evaluation, no LLM needed: for each question, gold-file recall@k of grep-style
literal matching, BM25, dense search, hybrid, and dense + rerank, by question type. A first answer
to "where does dense retrieval add nothing over grep" on any machine.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from searchbox.dataroom.corpus import Corpus
from searchbox.retrieval.engine import Hit, RetrievalEngine

KS = (1, 5, 10)
METHODS = ("grep", "bm25", "dense", "hybrid", "dense+rerank")
_DEPTH = 60  # chunks ranked per method: enough to fill 10 distinct files
_STOPWORDS = set(
    "a an and are as at be by did do does for from had has have how in is it its of on or the this that "
    "to was were what when where which who whom whose why with will would our their there they".split()
)


def whole_room_dense(overrides: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """The overrides with dense search over the whole scope (DENSE_PREFILTER=0) unless DENSE_PREFILTER was given
    (`overrides` or `environ`): a preset's prefilter would make "dense" BM25's candidates ranked by meaning, and
    its recall depend on the order of the questions (each keeps the candidates embedded before it)."""
    if "dense_prefilter" in overrides or "DENSE_PREFILTER" in environ:
        return dict(overrides)
    return {**overrides, "dense_prefilter": 0}


def query_terms(question: str) -> list[str]:
    words = re.findall(r"[a-z0-9][a-z0-9.\-]*[a-z0-9]|[a-z0-9]", question.lower())
    return [w for w in words if w not in _STOPWORDS and len(w) > 2]


def grep_rank(corpus: Corpus, question: str) -> list[str]:
    """grep-style literal matching over the extracted text: files ranked by how many distinct query
    words they contain (case-insensitive, whole words), then by total matches."""
    patterns = [re.compile(rf"\b{re.escape(t)}\b") for t in query_terms(question)]
    scored = []
    for f in corpus.files:
        text = f.text.lower()
        counts = [len(p.findall(text)) for p in patterns]
        distinct = sum(c > 0 for c in counts)
        if distinct:
            scored.append((-distinct, -sum(counts), f.path))
    return [path for *_, path in sorted(scored)]


def files_of(engine: RetrievalEngine, hits: list[Hit]) -> list[str]:
    return list(dict.fromkeys(engine.corpus.chunks[h.chunk].path for h in hits))


def rankers(engine: RetrievalEngine) -> dict[str, Callable[[str], list[str]]]:
    """Each method as question -> files, best first."""
    return {
        "grep": lambda q: grep_rank(engine.corpus, q),
        "bm25": lambda q: files_of(engine, engine.keyword_search(q, _DEPTH)),
        "dense": lambda q: files_of(engine, engine.dense_search(q, _DEPTH)[0]),
        "hybrid": lambda q: files_of(engine, engine.hybrid_search(q, _DEPTH)[0]),
        "dense+rerank": lambda q: files_of(engine, engine.answer_candidates(q, 10)[0]),
    }


def recall_at(ranked: list[str], gold: list[str], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def evaluate(engine: RetrievalEngine, questions: list[dict[str, Any]],
             methods: tuple[str, ...] = METHODS) -> dict[str, Any]:
    """{"methods": {method: {"all": {"R@k": r}, "by_type": {type: {"R@k": r}}}}, "per_question": [...]}"""
    available = rankers(engine)
    sums: dict[str, dict[str, dict[str, float]]] = {m: defaultdict(lambda: defaultdict(float)) for m in methods}
    counts: dict[str, int] = defaultdict(int)
    per_question = []
    for q in questions:
        counts["all"] += 1
        counts[q["type"]] += 1
        row: dict[str, Any] = {"id": q["id"], "type": q["type"], "gold_files": q["gold_files"]}
        for method in methods:
            ranked = available[method](q["question"])
            row[method] = ranked[:10]
            for k in KS:
                r = recall_at(ranked, q["gold_files"], k)
                sums[method]["all"][f"R@{k}"] += r
                sums[method][q["type"]][f"R@{k}"] += r
        per_question.append(row)
    result: dict[str, Any] = {"questions": len(questions), "methods": {}, "per_question": per_question}
    for method in methods:
        by_group = {group: {key: round(value / counts[group], 4) for key, value in keys.items()}
                    for group, keys in sums[method].items()}
        result["methods"][method] = {"all": by_group.pop("all", {}), "by_type": by_group}
    return result


def format_table(result: dict[str, Any]) -> str:
    """The printed table: one row per method, recall@k overall and R@5 per question type."""
    types = sorted({t for m in result["methods"].values() for t in m["by_type"]})
    header = f"{'method':<14}" + "".join(f"{'R@' + str(k):>7}" for k in KS) + "".join(f"{t[:11] + '@5':>15}" for t in types)
    lines = [header, "-" * len(header)]
    for method, scores in result["methods"].items():
        lines.append(f"{method:<14}" + "".join(f"{scores['all'].get(f'R@{k}', 0):7.3f}" for k in KS)
                     + "".join(f"{scores['by_type'].get(t, {}).get('R@5', 0):15.3f}" for t in types))
    return "\n".join(lines)
