"""Where the built-in datarooms, their question sets and the precomputed vectors live (assets/)."""

from __future__ import annotations

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
BUILTIN_DATAROOM = ASSETS_DIR / "dataroom.zip"
BUILTIN_QUESTIONS = ASSETS_DIR / "questions.jsonl"
# Vectors of the built-in dataroom for the packaged embedders, so its first search is instant.
BUILTIN_VECTORS = ASSETS_DIR / "dataroom_vectors.sqlite"
# A second dataroom, of documentation shipped inside Python packages (assets/pydocs_source/build.py),
# and its question set: retrieval measured on text this project did not write.
PYDOCS_DATAROOM = ASSETS_DIR / "pydocs_dataroom.zip"
PYDOCS_QUESTIONS = ASSETS_DIR / "pydocs_questions.jsonl"
# The same dataroom asked in another style: must-facts written as short claims, not spans
# ("The dataset has 20,640 instances"), as question sets written elsewhere often are.
PYDOCS_CLAIM_QUESTIONS = ASSETS_DIR / "pydocs_claims_questions.jsonl"
# A third dataroom at the size people upload (docs/findings/2026-12-06-third-dataroom.md): the docstrings
# of scikit-learn and SciPy, one page per module (assets/libref_source/build.py, which also builds a room
# ten times larger on demand), and its question set.
LIBREF_DATAROOM = ASSETS_DIR / "libref_dataroom.zip"
LIBREF_QUESTIONS = ASSETS_DIR / "libref_questions.jsonl"
# The same room asked in other words than its pages use (the concept described, not named), so that keyword
# search struggles: what tells whether embedding only BM25's candidates loses answers dense search would find.
LIBREF_CONCEPT_QUESTIONS = ASSETS_DIR / "libref_concept_questions.jsonl"
# A real sweep's records (each assist alone over 10 built-in questions at two seeds; from
# docs/findings/data/2026-12-02-assists-alone-seeds-2-3.tar.gz), which the Compare tab offers before any
# sweep of one's own exists.
EXAMPLE_SWEEP = ASSETS_DIR / "example-sweep"
