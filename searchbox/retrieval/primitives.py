"""Embedding primitives over caller-given texts: similarity, classify, cluster, select_diverse.

Each takes L2-normalized vectors (cosine = dot) and returns plain Python data.
"""

from __future__ import annotations

import numpy as np


def similarity(a: np.ndarray, b: np.ndarray) -> list[float] | list[list[float]]:
    """Pairwise cosine when both sides have the same length, else the full |a| x |b| matrix."""
    if len(a) == len(b):
        return np.einsum("ij,ij->i", a, b).astype(float).round(6).tolist()
    return (a @ b.T).astype(float).round(6).tolist()


def classify(texts: np.ndarray, labels: np.ndarray) -> list[tuple[int, float, list[float]]]:
    """For each text: the nearest label's index, its cosine, and the cosine to every label."""
    scores = texts @ labels.T
    best = scores.argmax(axis=1)
    return [(int(b), float(row[b]), row.astype(float).round(6).tolist()) for b, row in zip(best, scores)]


def cluster(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Greedy threshold clustering: each item joins the first cluster whose centroid is within
    `threshold` cosine, else starts a new one. Deterministic in input order."""
    clusters: list[list[int]] = []
    centroids: list[np.ndarray] = []
    for i, v in enumerate(vectors):
        if centroids:
            sims = np.stack(centroids) @ v
            best = int(sims.argmax())
            if sims[best] >= threshold:
                clusters[best].append(i)
                members = vectors[clusters[best]].mean(axis=0)
                centroids[best] = members / max(float(np.linalg.norm(members)), 1e-12)
                continue
        clusters.append([i])
        centroids.append(v)
    return clusters


def select_diverse(vectors: np.ndarray, k: int, duplicate_threshold: float = 0.95) -> tuple[list[int], list[int]]:
    """Up to k items chosen farthest-first (max-min cosine distance), starting from the item most
    central to the set; near-duplicates (cosine >= duplicate_threshold to a kept item) are dropped.
    Returns (selected indices in selection order, dropped duplicate indices)."""
    n = len(vectors)
    if n == 0 or k <= 0:
        return [], []
    sims = vectors @ vectors.T
    kept: list[int] = []
    duplicates: list[int] = []
    for i in range(n):  # drop near-duplicates first, keeping the earliest of each group
        if any(sims[i, j] >= duplicate_threshold for j in kept):
            duplicates.append(i)
        else:
            kept.append(i)
    pool = np.array(kept)
    first = int(pool[sims[np.ix_(pool, pool)].mean(axis=1).argmax()])
    selected = [first]
    nearest = sims[pool, first].copy()
    while len(selected) < min(k, len(pool)):
        nearest[np.isin(pool, selected)] = np.inf
        pick = int(pool[nearest.argmin()])
        selected.append(pick)
        nearest = np.maximum(nearest, sims[pool, pick])
    return selected, duplicates
