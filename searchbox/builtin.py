"""Where the built-in dataroom, its question set and its precomputed vectors live."""

from __future__ import annotations

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
BUILTIN_DATAROOM = ASSETS_DIR / "dataroom.zip"
BUILTIN_QUESTIONS = ASSETS_DIR / "questions.jsonl"
# Vectors of the built-in dataroom for the packaged embedders, so its first search is instant.
BUILTIN_VECTORS = ASSETS_DIR / "dataroom_vectors.sqlite"
