"""A reliability tally reaches bench/reliability.py as a row in the file it names, not as printed text."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.tally import TALLIES_ENV, read_reports, report


def test_a_tally_is_a_row_in_the_file_the_bench_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    rows = tmp_path / "tallies.jsonl"
    monkeypatch.delenv(TALLIES_ENV, raising=False)
    report("fuzz unpacker", "3 archives, 3 handled")  # no file named: only printed
    assert not rows.exists() and "RELIABILITY fuzz unpacker: 3 archives, 3 handled" in capsys.readouterr().out
    monkeypatch.setenv(TALLIES_ENV, str(rows))
    report("faults cache", "injected 2, survived 2: of 2")
    report("load", "4 submissions")
    assert read_reports(rows) == [{"what": "faults cache", "figures": "injected 2, survived 2: of 2"},
                                  {"what": "load", "figures": "4 submissions"}]
    assert read_reports(tmp_path / "none.jsonl") == []
