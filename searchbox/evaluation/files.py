"""Names shared by the sweep that writes an evaluation folder and the reports that read it."""

from __future__ import annotations

RESULTS, SUMMARY, SWEEP, RETRIEVAL = "results.jsonl", "summary.json", "sweep.json", "retrieval.json"

# Accuracy of a run from its verdict: a partial answer counts half.
VERDICT_POINTS = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
