"""The app-side attack suite of issue 20 (testkit/app_attacks.py) at each confining level this host offers:
whatever bash leaves in work/ (links, FIFOs, sparse giants, a moved mount point), nothing of the host
reaches a visitor, nothing is written through a link, and no reader stalls."""

from __future__ import annotations

import pytest

from testkit.app_attacks import ATTACKS, run_attack
from searchbox.tools.sandbox import choose

pytestmark = pytest.mark.slow  # 14 attacks, each a whole run with real bash calls: about 30 s a level on 2 cores


@pytest.mark.parametrize("level", ["namespaces", "landlock"])
@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name.split(" (")[0] for a in ATTACKS])
def test_nothing_confined_bash_leaves_in_work_reaches_a_visitor(level: str, attack) -> None:
    if choose(level).name != level:
        pytest.skip(f"this host has no {level} level: {choose(level).reason}")
    assert not run_attack(attack, level), f"got through at {level}: {attack.name}"
