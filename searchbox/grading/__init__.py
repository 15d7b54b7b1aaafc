"""Grading a finished run (design §4), after it and apart from it."""
