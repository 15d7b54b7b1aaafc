"""Evaluation (design §4): question sets, scoring a finished run, retrieval-only recall."""
