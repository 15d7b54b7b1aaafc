"""Evaluation (SPEC 4): question sets, scoring a finished run, retrieval-only recall."""
