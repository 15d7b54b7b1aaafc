"""Where BM25 alone ranks each question's gold files, on one or more datarooms: per question, the rank of
the first gold file among the ranked files, and of the first fact chunk (a chunk of a gold file holding one
of the question's must-facts) among the ranked chunks. No embedder is loaded. The chunk rank is what
DENSE_PREFILTER=N rests on: a question whose first fact chunk ranks past N has none among the candidates
its dense search embeds.

    python bench/bm25_ranks.py --questions assets/libref_concept_questions.jsonl \\
        --room assets/libref_dataroom.zip --room /tmp/libref-large/libref_large_dataroom.zip
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.question_checks import normalise  # noqa: E402

from searchbox.dataroom.corpus import Corpus  # noqa: E402
from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir  # noqa: E402
from searchbox.evaluation.questions import load_questions  # noqa: E402
from searchbox.retrieval.cache import EmbeddingCache  # noqa: E402
from searchbox.retrieval.encoder import Encoder  # noqa: E402
from searchbox.retrieval.engine import RetrievalEngine  # noqa: E402
from searchbox.settings import Settings  # noqa: E402


def no_embedder() -> Any:
    raise AssertionError("BM25 ranks need no embedder")


def gold_ranks(engine: RetrievalEngine, corpus: Corpus, question: dict[str, Any]) -> tuple[int | None, int | None]:
    """1-based ranks under BM25 of the first gold file and of the first fact chunk (a chunk of a gold file
    that holds one of the question's facts); None where it scores zero."""
    hits = [corpus.chunks[h.chunk] for h in engine.keyword_search(question["question"], len(corpus.chunks))]
    gold = set(question["gold_files"])
    facts = [normalise(fact) for fact in question["must_facts"]]
    chunk_rank = next((i + 1 for i, chunk in enumerate(hits)
                       if chunk.path in gold and any(fact in normalise(chunk.text) for fact in facts)), None)
    files = list(dict.fromkeys(chunk.path for chunk in hits))
    file_rank = next((i + 1 for i, path in enumerate(files) if path in gold), None)
    return file_rank, chunk_rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--room", type=Path, action="append", required=True, help="a dataroom .zip (repeatable)")
    args = parser.parse_args()
    questions = load_questions(args.questions)
    columns: dict[str, tuple[int, list[tuple[int | None, int | None]]]] = {}
    with tempfile.TemporaryDirectory(prefix="bm25-ranks-") as scratch:
        for n, room in enumerate(args.room):
            settings = Settings.resolve(env={}, searchbox_cache_dir=str(Path(scratch) / "cache"))
            corpus = load_corpus(prepare_work_dir(Path(scratch) / f"job{n}", room), settings)
            engine = RetrievalEngine(corpus, settings, Encoder("none", no_embedder, EmbeddingCache()))
            missing = {f for q in questions for f in q["gold_files"]} - {f.path for f in corpus.files}
            if missing:
                raise SystemExit(f"{room}: gold files not in the room: {sorted(missing)}")
            columns[room.name] = (len(corpus.chunks), [gold_ranks(engine, corpus, q) for q in questions])
    header = "| id | " + " | ".join(f"{name} ({chunks:,} chunks): file, chunk" for name, (chunks, _) in
                                      columns.items()) + " |"
    print(header)
    print("|" + "---|" * (1 + len(columns)))
    for i, q in enumerate(questions):
        cells = [f"{file or '-'}, {chunk or '-'}" for _, ranks in columns.values() for file, chunk in [ranks[i]]]
        print(f"| {q['id']} | " + " | ".join(cells) + " |")
    for name, (_, ranks) in columns.items():
        files = sum(file is not None and file <= 10 for file, _ in ranks)
        chunks = sum(chunk is not None and chunk <= 50 for _, chunk in ranks)
        print(f"{name}: first gold file in the top 10 for {files}/{len(ranks)}; "
              f"first fact chunk in the top 50 chunks for {chunks}/{len(ranks)}")


if __name__ == "__main__":
    main()
