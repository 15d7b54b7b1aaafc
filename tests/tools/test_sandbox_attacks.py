"""The attack suite of issue 12 (testkit/sandbox_attacks.py) at each confining level this host offers:
nothing may get through at a level a public app uses."""

from __future__ import annotations

import pytest

from testkit.sandbox_attacks import ATTACKS, run_suite
from searchbox.tools.sandbox import choose
from testkit.tally import report

pytestmark = pytest.mark.slow  # 27 attacks, each a real bash call: about 25 s a level on 2 cores


@pytest.mark.parametrize("level", ["namespaces", "landlock"])
def test_nothing_gets_through_a_confining_level(level: str) -> None:
    if choose(level).name != level:
        pytest.skip(f"this host has no {level} level: {choose(level).reason}")
    outcomes = run_suite(level)
    through = [name for name, got in outcomes.items() if got]
    report(f"sandbox attacks at {level}", f"{len(ATTACKS)} tried, {len(through)} got through")
    assert through == []
