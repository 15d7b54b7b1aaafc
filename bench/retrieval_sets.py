"""Does retrieval generalise? Gold-file recall of BM25, dense and hybrid search on the question sets:
the built-in one (a dataroom written for this project), the pydocs one (documentation shipped
inside Python packages) and, with --sets, the libref one (scikit-learn's and SciPy's docstrings, at
the size people upload), with the packaged embedders: MiniLM in fp32 and int8, and the 64-d static one.

    python bench/retrieval_sets.py                          # the current defaults
    python bench/retrieval_sets.py --set CHUNK_SIZE=1000    # a change to try, as knob overrides
    python bench/retrieval_sets.py --fusion                 # hybrid with 10..200 BM25 candidates fused
    python bench/retrieval_sets.py --json out.json          # also write every figure
    python bench/retrieval_sets.py --sets libref            # the upload-sized room (its dense pass takes minutes)

Embeddings go through the disk cache in SEARCHBOX_CACHE_DIR (the built-in dataroom's precomputed
vectors seed it), so a second run with the same chunking embeds only the questions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.assets import (  # noqa: E402
    BUILTIN_DATAROOM,
    BUILTIN_QUESTIONS,
    BUILTIN_VECTORS,
    LIBREF_DATAROOM,
    LIBREF_QUESTIONS,
    PYDOCS_DATAROOM,
    PYDOCS_QUESTIONS,
)
from searchbox.cli.options import parse_overrides  # noqa: E402
from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir  # noqa: E402
from searchbox.evaluation.questions import load_questions  # noqa: E402
from searchbox.evaluation.retrieval_eval import KS, evaluate, files_of, recall_at, whole_room_dense  # noqa: E402
from searchbox.retrieval.engine import RetrievalEngine  # noqa: E402
from searchbox.settings import Settings  # noqa: E402

SETS = {"built-in": (BUILTIN_DATAROOM, BUILTIN_QUESTIONS), "pydocs": (PYDOCS_DATAROOM, PYDOCS_QUESTIONS),
        "libref": (LIBREF_DATAROOM, LIBREF_QUESTIONS)}
DEFAULT_SETS = ("built-in", "pydocs")  # the small rooms; libref's dense pass takes minutes on a CPU
EMBEDDERS = {
    "MiniLM": {"retrieval_preset": "packaged"},
    "MiniLM int8": {"retrieval_preset": "packaged", "embed_dtype": "int8"},
    "static": {"retrieval_preset": "packaged-static"},
}
METHODS = ("bm25", "dense", "hybrid")
FUSED_BM25 = (10, 20, 30, 50, 100, 200)  # BM25 candidates fused (--fusion); HYBRID_BM25_CANDIDATES sets it
_RANKED = 60  # chunks ranked per question, as retrieval_eval does


def fusion_rows(engine: RetrievalEngine, questions: list[dict], embedder: str) -> dict[str, dict[str, float]]:
    """Hybrid recall with each number of BM25 candidates fused."""
    rows = {}
    for candidates in FUSED_BM25:
        ranked = [files_of(engine, engine.hybrid_search(q["question"], _RANKED, keyword_candidates=candidates)[0])
                  for q in questions]
        rows[f"hybrid ({embedder}) bm25 {candidates}"] = {
            f"R@{k}": sum(recall_at(r, q["gold_files"], k) for r, q in zip(ranked, questions)) / len(questions)
            for k in KS}
    return rows


def measure(overrides: dict[str, str], tmp: Path, fusion: bool = False,
            sets: tuple[str, ...] = DEFAULT_SETS) -> dict[str, dict[str, dict[str, float]]]:
    """{set: {"bm25" | "dense (MiniLM)" | "hybrid (MiniLM int8)" ...: {"R@k": r}}}"""
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for set_name in sets:
        dataroom, questions_path = SETS[set_name]
        questions = load_questions(questions_path)
        work = prepare_work_dir(tmp / set_name, dataroom)
        rows: dict[str, dict[str, float]] = {}
        for i, (embedder, extra) in enumerate(EMBEDDERS.items()):
            settings = Settings.resolve(**whole_room_dense({**extra, **overrides}, os.environ))
            engine = RetrievalEngine.for_corpus(load_corpus(work, settings), settings, seed_caches=[BUILTIN_VECTORS])
            methods = METHODS if i == 0 else METHODS[1:]  # BM25 needs no embedder: measured once
            result = evaluate(engine, questions, methods)["methods"]
            for method in methods:
                rows[method if method == "bm25" else f"{method} ({embedder})"] = result[method]["all"]
            if fusion:
                rows.update(fusion_rows(engine, questions, embedder))
        figures[set_name] = rows
    return figures


def format_figures(figures: dict[str, dict[str, dict[str, float]]]) -> str:
    sets = list(figures)
    header = f"{'method':<30}" + "".join(f"{s + ' R@' + k:>16}" for s in sets for k in ("1", "5", "10"))
    lines = [header, "-" * len(header)]
    for method in figures[sets[0]]:
        lines.append(f"{method:<30}" + "".join(f"{figures[s][method][f'R@{k}']:16.3f}" for s in sets for k in (1, 5, 10)))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="knob override (repeatable)")
    parser.add_argument("--fusion", action="store_true", help="also hybrid with each number of BM25 candidates in FUSED_BM25")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS), help=f"comma-separated, of {', '.join(SETS)}")
    args = parser.parse_args()
    overrides = parse_overrides(args.set)
    sets = tuple(args.sets.split(","))
    if not set(sets) <= set(SETS):
        parser.error(f"--sets takes a comma-separated subset of {', '.join(SETS)}")
    with tempfile.TemporaryDirectory(prefix="searchbox-sets-") as tmp:
        figures = measure(overrides, Path(tmp), args.fusion, sets)
    counts = {name: len(load_questions(SETS[name][1])) for name in sets}
    print(f"gold-file recall; questions: {counts}; overrides: {overrides or 'none'}")
    print(format_figures(figures))
    if args.json:
        Path(args.json).write_text(json.dumps({"overrides": overrides, "figures": figures}, indent=2))


if __name__ == "__main__":
    main()
