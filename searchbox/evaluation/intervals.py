"""How sure a sweep's numbers are: a 95% interval for a configuration's mean accuracy, and a paired
comparison of two configurations on the same questions.

The unit is the question, not the run. Repeats of one question are not independent draws (the same
question is easy or hard for every repeat), so each question's runs are first averaged into one
score in [0, 1]; the questions are the sample.

The interval is Wilson's score interval on that mean with n = the number of questions. For a plain
correct/wrong score it is the standard interval for a proportion; for partial credit and averaged
repeats a question's score still lies in [0, 1], so its variance is at most mu(1 - mu), the binomial
one, and the interval is conservative. Unlike a normal or bootstrap interval it does not shrink to a
point when every question scores 1 (or 0), which on ten questions would claim certainty it lacks.

The paired comparison counts per question whether A scored higher (win), lower (loss) or the same
(tie), and tests wins against losses with the exact two-sided sign test: under "no difference" each
non-tied question is a fair coin. It assumes nothing about the size of the differences, which with
three repeats take only a few values, so a rank test's normal approximation would be shaky.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    questions: int

    def as_dict(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Paired:
    questions: int  # scored by both
    wins: int  # A above B
    losses: int
    ties: int
    mean_difference: float  # mean over the questions of A's score minus B's
    p_value: float  # exact two-sided sign test of wins against losses

    def as_dict(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}


def wilson(mean: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval of a proportion `mean` observed over n trials."""
    if n < 1:
        raise ValueError("an interval needs at least one question")
    if not 0.0 <= mean <= 1.0:
        raise ValueError(f"a score must lie in [0, 1], got {mean}")
    z2 = z * z
    centre = (mean + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(mean * (1 - mean) / n + z2 / (4 * n * n))
    # At 0 or 1 one bound is exactly that score; rounding would leave it a hair inside.
    low = 0.0 if mean == 0.0 else max(0.0, centre - half)
    high = 1.0 if mean == 1.0 else min(1.0, centre + half)
    return low, high


def question_means(scores: Iterable[tuple[str, float | None]]) -> dict[str, float]:
    """Each question's mean score over its runs (repeats); runs without a score are left out."""
    runs: dict[str, list[float]] = defaultdict(list)
    for question, score in scores:
        if score is not None and not math.isnan(score):
            runs[question].append(float(score))
    return {question: sum(values) / len(values) for question, values in runs.items()}


def accuracy_interval(scores: Iterable[tuple[str, float | None]]) -> Interval | None:
    """Mean accuracy over questions (each question's runs averaged first) with its 95% Wilson interval;
    None when no run has a score."""
    means = question_means(scores)
    if not means:
        return None
    mean = sum(means.values()) / len(means)
    low, high = wilson(mean, len(means))
    return Interval(mean, low, high, len(means))


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test: the chance, with each untied question a fair coin, of a split at
    least as lopsided as wins : losses. 1.0 when nothing is untied."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_comparison(a: Mapping[str, float], b: Mapping[str, float]) -> Paired | None:
    """A against B on the questions both scored (question -> mean score, as question_means gives);
    None when they share none."""
    shared = [q for q in a if q in b]
    if not shared:
        return None
    differences = [a[q] - b[q] for q in shared]
    # Means of repeats are fractions: a difference within rounding error of 0 is a tie.
    wins = sum(d > 1e-9 for d in differences)
    losses = sum(d < -1e-9 for d in differences)
    return Paired(len(shared), wins, losses, len(shared) - wins - losses, sum(differences) / len(shared),
                  sign_test(wins, losses))


def format_p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"
