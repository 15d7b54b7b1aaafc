"""What every retrieval model backend shares: the two model interfaces, the load report, the load
error, row normalization. The factory (models.py) imports the backends and the backends import
this, so neither imports the other.

An `Embedder` turns texts into L2-normalized float32 rows for a role ("query" or "passage").
A `Reranker` scores documents against a query (higher is more relevant).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

Role = Literal["query", "passage"]


class ModelLoadError(RuntimeError):
    """A model could not be loaded or called; the message says what to change."""


class Embedder(Protocol):
    name: str  # identifies the vectors: part of every cache key

    def embed(self, texts: list[str], role: Role) -> np.ndarray: ...


class Reranker(Protocol):
    name: str

    def score(self, query: str, documents: list[str]) -> list[float]: ...


@dataclass
class LoadReport:
    """Where a model ended up and why; recorded in the run record."""

    model: str
    backend: str
    requested_device: str
    device: str
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            "backend": self.backend,
            "requested_device": self.requested_device,
            "device": self.device,
            "notes": list(self.notes),
        }


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
