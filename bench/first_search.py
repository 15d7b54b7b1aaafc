"""The first search over a new room: cold and warm latency, and recall@10 of its question set, for each
retrieval preset and each way of getting the dense half ready, measured in one run, with ratios against
BM25 alone on the same room.

    python bench/first_search.py                       # the shipped rooms, packaged presets
    python bench/first_search.py --room /tmp/room-4k.zip:assets/pydocs_questions.jsonl \\
        --room /tmp/room-40k.zip:assets/pydocs_questions.jsonl --json /tmp/first-search.json

A room is ZIP:QUESTIONS (a question set whose gold files the room holds; bench/padded_room.py builds large
stand-ins). Options (--option, repeatable):
  bm25            keyword search alone: the baseline of every ratio
  full            DENSE_PREFILTER=0: the first search embeds the whole room (skipped past --full-max-chunks)
  prefilter-N     DENSE_PREFILTER=N: each search embeds its query's top-N BM25 chunks (kept for later ones)
  prefilter-N+bg  the same, with the background indexer started at the upload (BACKGROUND_INDEX)

Cold: a fresh upload: a new cache folder (no extracted text, no vectors) and the embedder loaded anew
(its libraries imported before: the app has them). Warm: a new engine and encoder over the same cache folder, as a
second run, the run after an upload preview, or the CLI after a run see it. Recall@10: the questions in
order through one engine, as one run would ask them (with prefilter, later questions rank earlier ones'
candidates too), with a 95% bootstrap interval. Timings are of one run on whatever machine runs it: compare
ratios within a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from searchbox.assets import BUILTIN_DATAROOM, BUILTIN_QUESTIONS, PYDOCS_DATAROOM, PYDOCS_QUESTIONS  # noqa: E402
from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir  # noqa: E402
from searchbox.evaluation.questions import load_questions  # noqa: E402
from searchbox.evaluation.retrieval_eval import files_of, recall_at  # noqa: E402
from searchbox.retrieval import models  # noqa: E402
from searchbox.retrieval.cache import EmbeddingCache  # noqa: E402
from searchbox.retrieval.encoder import Encoder  # noqa: E402
from searchbox.retrieval.engine import RetrievalEngine  # noqa: E402
from searchbox.retrieval.indexer import BackgroundIndexer  # noqa: E402
from searchbox.retrieval.models import embedding_cache_name, load_embedder  # noqa: E402
from searchbox.settings import Settings  # noqa: E402

DEFAULT_ROOMS = [f"{BUILTIN_DATAROOM}:{BUILTIN_QUESTIONS}", f"{PYDOCS_DATAROOM}:{PYDOCS_QUESTIONS}"]
DEFAULT_PRESETS = ["packaged", "packaged-static"]
DEFAULT_OPTIONS = ["bm25", "full", "prefilter-1000", "prefilter-200", "prefilter-50", "prefilter-50+bg"]
_DEPTH = 60  # chunks ranked per question: enough to fill 10 distinct files (as retrieval_eval)
_K = 10


def option_knobs(option: str) -> tuple[dict[str, Any], bool]:
    """An option's knob overrides, and whether the background indexer runs."""
    if option == "full":
        return {"dense_prefilter": 0}, False
    name, _, rest = option.partition("-")
    if name != "prefilter" or not rest:
        raise SystemExit(f"unknown option {option!r}: bm25, full, prefilter-N or prefilter-N+bg")
    count, _, background = rest.partition("+")
    return {"dense_prefilter": int(count)}, background == "bg"


def engine_over(corpus_of: Any, settings: Settings, cache_dir: Path) -> RetrievalEngine:
    encoder = Encoder(embedding_cache_name(settings), lambda: load_embedder(settings),
                      EmbeddingCache(cache_dir / "embeddings.sqlite", max_bytes=settings.embed_cache_mb * 2**20))
    return RetrievalEngine(corpus_of(), settings, encoder)


def first_search(room: Path, settings: Settings, option: str, cache_dir: Path, question: str,
                 scratch: Path) -> dict[str, Any]:
    """One first search from the upload on: seconds for ingestion and in all, and the engine it left."""
    started = time.perf_counter()
    work = prepare_work_dir(scratch / f"job-{time.monotonic_ns()}", room)
    corpus = load_corpus(work, settings)
    ingest = time.perf_counter() - started
    engine = engine_over(lambda: corpus, settings, cache_dir)
    indexer = None
    if option.endswith("+bg"):
        indexer = BackgroundIndexer(lambda: engine).start()
    if option == "bm25":
        engine.keyword_search(question, 8)
        coverage = None
    else:
        _, _, coverage = engine.search(question, 8)
    total = time.perf_counter() - started
    return {"ingest_s": ingest, "first_s": total, "engine": engine, "indexer": indexer,
            "coverage": None if coverage is None else coverage.record(), "chunks": len(corpus.chunks)}


def recall(engine: RetrievalEngine, option: str, questions: list[dict[str, Any]]) -> list[float]:
    values = []
    for q in questions:
        if option == "bm25":
            ranked = files_of(engine, engine.keyword_search(q["question"], _DEPTH))
        else:
            ranked = files_of(engine, engine.search(q["question"], _DEPTH)[0])
        values.append(recall_at(ranked, q["gold_files"], _K))
    return values


def interval(values: list[float], rounds: int = 2000) -> tuple[float, float]:
    """95% bootstrap interval of the mean."""
    rng = np.random.default_rng(0)
    data = np.asarray(values)
    means = data[rng.integers(0, len(data), (rounds, len(data)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def measure(room: Path, questions: list[dict[str, Any]], preset: str, option: str, args: argparse.Namespace,
            scratch: Path) -> dict[str, Any]:
    knobs, _ = ({}, False) if option == "bm25" else option_knobs(option)
    cache_dir = scratch / f"cache-{preset}-{option}"
    shutil.rmtree(cache_dir, ignore_errors=True)
    settings = Settings.resolve(env={}, searchbox_cache_dir=str(cache_dir), retrieval_preset=preset,
                                background_index=option.endswith("+bg"), **knobs)
    row: dict[str, Any] = {"preset": preset, "option": option}
    models._kept_models.clear()  # cold: the embedder loads anew (the app keeps one loaded across runs)
    question = questions[0]["question"]
    cold = first_search(room, settings, option, cache_dir, question, scratch)
    row.update(chunks=cold["chunks"], ingest_s=round(cold["ingest_s"], 3), cold_s=round(cold["first_s"], 3),
               coverage=cold["coverage"])
    engine, indexer = cold["engine"], cold["indexer"]
    scores = recall(engine, option, questions)
    row["recall@10"] = round(float(np.mean(scores)), 4)
    row["recall@10_ci95"] = [round(v, 4) for v in interval(scores)]
    if option != "bm25":
        row["coverage_after_questions"] = engine.vectors().coverage(list(range(len(engine.corpus.chunks)))).record()
        row["texts_embedded"] = engine.encoder.stats.texts_embedded
        row["model_load_s"] = round(engine.encoder.stats.load_seconds, 3)
    if indexer is not None:
        indexer.wait(args.background_wait)
        indexer.stop(wait_s=30)
        progress = indexer.progress()
        row["background_done_s"] = (round(indexer.finished - indexer.started, 1)
                                    if indexer.finished is not None and progress and progress.complete else None)
        row["coverage_background_end"] = progress.record() if progress else None
    engine.encoder.cache.close()
    warm = first_search(room, settings, "bm25" if option == "bm25" else option.removesuffix("+bg"), cache_dir,
                        question, scratch)
    row["warm_s"] = round(warm["first_s"], 3)
    row["warm_coverage"] = warm["coverage"]
    warm["engine"].encoder.cache.close()
    return row


def warm_up(preset: str, scratch: Path) -> None:
    """Import the preset's model libraries once (the app has them imported): cold loads then compare alike."""
    try:
        load_embedder(Settings.resolve(env={}, searchbox_cache_dir=str(scratch / "warm-up"), retrieval_preset=preset))
    except Exception as exc:  # measured (and reported) below
        print(f"  {preset}: the embedder did not load: {exc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--room", action="append", help="ZIP:QUESTIONS (repeatable; default: the shipped rooms)")
    parser.add_argument("--preset", action="append", help=f"retrieval preset (repeatable; default {DEFAULT_PRESETS})")
    parser.add_argument("--option", action="append", help=f"(repeatable; default {DEFAULT_OPTIONS})")
    parser.add_argument("--full-max-chunks", type=int, default=6000,
                        help="skip `full` on rooms with more chunks (it embeds them all at the first search)")
    parser.add_argument("--background-wait", type=float, default=0,
                        help="seconds to let the background indexer go on after the questions (0: stop it)")
    parser.add_argument("--questions", type=int, default=0, help="use only the first N questions of each set")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    import torch

    print(f"CPU threads: {torch.get_num_threads()}, cores: {os.cpu_count()}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="searchbox-first-search-") as tmp:
        scratch = Path(tmp)
        for spec in args.room or DEFAULT_ROOMS:
            room_path, _, questions_path = spec.rpartition(":")
            room = Path(room_path)
            questions = load_questions(Path(questions_path))[:args.questions or None]
            print(f"\n== {room.name}: {len(questions)} questions ==")
            base: dict[str, Any] | None = None
            for preset in args.preset or DEFAULT_PRESETS:
                warm_up(preset, scratch)
                for option in args.option or DEFAULT_OPTIONS:
                    if option == "bm25" and base is not None:
                        continue  # no model: the same for every preset
                    row = {"room": room.name}
                    try:
                        if option == "full" and base is not None and base["chunks"] > args.full_max_chunks:
                            row.update(preset=preset, option=option, skipped=f"{base['chunks']} chunks to embed")
                        else:
                            row.update(measure(room, questions, preset, option, args, scratch))
                    except Exception as exc:  # a model not available here: say so, go on
                        row.update(preset=preset, option=option, error=f"{type(exc).__name__}: {exc}")
                    if option == "bm25":
                        base = row
                    if base is not None and "cold_s" in row and "cold_s" in base:
                        row["cold_vs_bm25"] = round(row["cold_s"] / base["cold_s"], 2)
                        row["warm_vs_bm25"] = round(row["warm_s"] / base["warm_s"], 2)
                    rows.append(row)
                    print(summary(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


def summary(row: dict[str, Any]) -> str:
    head = f"  {row['preset'] if row['option'] != 'bm25' else '-':<16} {row['option']:<16}"
    if "skipped" in row or "error" in row:
        return head + f" {row.get('skipped') or row.get('error')}"
    low, high = row["recall@10_ci95"]
    text = (f" chunks {row['chunks']:>6}  cold {row['cold_s']:7.2f} s  warm {row['warm_s']:6.2f} s  "
            f"R@10 {row['recall@10']:.3f} [{low:.2f}, {high:.2f}]")
    if "cold_vs_bm25" in row:
        text += f"  cold x{row['cold_vs_bm25']}  warm x{row['warm_vs_bm25']}"
    if row.get("coverage"):
        text += f"  first search covered {row['coverage']['embedded']}/{row['coverage']['total']}"
    return head + text


if __name__ == "__main__":
    main()
