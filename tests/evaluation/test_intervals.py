"""The interval and paired-test maths of a sweep's report, against values computed by hand or published."""

from __future__ import annotations

import math

import pytest

from searchbox.evaluation.intervals import (accuracy_interval, format_p, paired_comparison, question_means,
                                            sign_test, wilson)


@pytest.mark.parametrize(("mean", "n", "low", "high"), [
    (0.8, 10, 0.4902, 0.9433),  # 8 of 10: the textbook Wilson interval (Newcombe 1998, method 3)
    (0.0, 10, 0.0, 0.2775),  # none of 10: not the zero-width [0, 0] a normal interval gives
    (1.0, 10, 0.7225, 1.0),
    (0.5, 100, 0.4038, 0.5962),
    (0.75, 2, 0.1979, 0.9733),
])
def test_wilson_interval_known_values(mean: float, n: int, low: float, high: float) -> None:
    got = wilson(mean, n)
    assert got == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_wilson_refuses_what_it_cannot_bound() -> None:
    with pytest.raises(ValueError, match="at least one"):
        wilson(0.5, 0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        wilson(1.5, 4)


def test_repeats_are_averaged_per_question_before_the_interval() -> None:
    # q1 right twice, q2 right once of twice, q3 never; a run with no score is left out.
    runs = [("q1", 1.0), ("q1", 1.0), ("q2", 1.0), ("q2", 0.0), ("q3", 0.0), ("q3", None), ("q3", math.nan)]
    assert question_means(runs) == {"q1": 1.0, "q2": 0.5, "q3": 0.0}
    interval = accuracy_interval(runs)
    assert (interval.mean, interval.questions) == (0.5, 3)  # n is 3 questions, not 5 runs
    assert (interval.low, interval.high) == wilson(0.5, 3)
    assert accuracy_interval([("q1", None)]) is None


def test_sign_test_against_hand_computed_values() -> None:
    # 8 wins, 1 loss (ties dropped): 2 * (C(9,0) + C(9,1)) / 2^9 = 2 * 10 / 512
    assert sign_test(8, 1) == pytest.approx(20 / 512) == pytest.approx(0.0390625)
    assert sign_test(1, 8) == sign_test(8, 1)
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(6, 4) == pytest.approx(2 * (1 + 10 + 45 + 120 + 210) / 1024)  # 0.7539
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0


def test_paired_comparison_counts_wins_losses_ties_on_shared_questions() -> None:
    # Twelve questions: A above B on 8, below on 1, level on 3, as in the brief's example.
    a = {f"q{i}": 1.0 for i in range(8)} | {"q8": 0.0} | {f"q{i}": 0.5 for i in (9, 10, 11)}
    b = {f"q{i}": 0.0 for i in range(8)} | {"q8": 1.0} | {f"q{i}": 0.5 for i in (9, 10, 11)} | {"only_b": 1.0}
    paired = paired_comparison(a, b)
    assert (paired.questions, paired.wins, paired.losses, paired.ties) == (12, 8, 1, 3)
    assert paired.mean_difference == pytest.approx(7 / 12)
    assert paired.p_value == pytest.approx(0.0390625)
    assert paired.as_dict()["p_value"] == 0.0391
    # Means of three repeats: 2/3 - (1/3 + 1/3) is a tie, whatever the float rounding.
    assert paired_comparison({"q": 2 / 3}, {"q": 1 / 3 + 1 / 3}).ties == 1
    assert paired_comparison({"q": 1.0}, {"other": 1.0}) is None


def test_p_values_are_shown_readably() -> None:
    assert format_p(0.0390625) == "0.039" and format_p(0.0004) == "<0.001" and format_p(1.0) == "1.000"
