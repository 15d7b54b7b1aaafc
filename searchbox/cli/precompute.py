"""python -m searchbox precompute: a dataroom's chunks embedded into a vector file later runs read as a seed cache."""

from __future__ import annotations

import argparse
from pathlib import Path

from searchbox.cli.options import Subcommands, add_dataroom_command, job_workspace


def add_to(sub: Subcommands) -> None:
    parser = add_dataroom_command(sub, "precompute", "embed a dataroom's chunks into a reusable vector file")
    parser.add_argument("--out", required=True)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Embed every chunk of a dataroom into a vector file that later runs read as a seed cache."""
    from searchbox.retrieval.cache import EmbeddingCache
    from searchbox.retrieval.encoder import Encoder
    from searchbox.retrieval.engine import RetrievalEngine
    from searchbox.retrieval.models import embedding_cache_name, load_embedder

    with job_workspace(args) as workspace:
        corpus, settings = workspace.corpus, workspace.settings
        encoder = Encoder(embedding_cache_name(settings), lambda: load_embedder(settings), EmbeddingCache(Path(args.out)))
        engine = RetrievalEngine(corpus, settings, encoder)  # its index text is what searches embed
        encoder.encode([engine.index_text(i) for i in range(len(corpus.chunks))], "passage")
        encoder.cache.close()
    print(f"{len(corpus.chunks)} chunks of {len(corpus.files)} files embedded with {encoder.model_name} into {args.out}")
    return 0
