"""Evaluation (design §4): question sets, sweeps and their reports, retrieval-only recall. A finished run's
score comes from grading (searchbox/grading), which evaluation uses."""
