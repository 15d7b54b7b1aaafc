"""Counts what a property-based test file tried and handled, and reports its reliability tallies.

A property calls `count(label)` on entry and `count(f"{label}: handled")` once its checks passed; the
file's last test calls `report(n)`, which asserts that n properties ran and handled every input.
"""

from __future__ import annotations

from collections import Counter

from testkit.tally import report

_HANDLED = ": handled"


class FuzzTally:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def count(self, label: str) -> None:
        self.counts[label] += 1

    def report(self, properties: int) -> list[str]:
        labels = sorted(label for label in self.counts if not label.endswith(_HANDLED))
        assert len(labels) == properties, labels
        for label in labels:
            tried, handled = self.counts[label], self.counts[f"{label}{_HANDLED}"]
            report(f"fuzz {label}", f"{tried} inputs, {handled} handled")
            assert tried > 0 and handled == tried, label
        return labels
