"""Every hostile dataroom of the catalogue through the real ingestion path (install + extraction),
and a few through `python -m searchbox ingest` as a subprocess. Counts what it tried."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from dataroom_factories import snapshot
from hostile_datarooms import ABSOLUTE_ESCAPE, Case, build_catalogue

from searchbox.dataroom import DataroomError
from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir
from searchbox.settings import Settings
from testkit.tally import report

ROOT = Path(__file__).resolve().parents[2]
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    return build_catalogue(tmp_path_factory.mktemp("hostile"))


def test_every_case_is_refused_skipped_or_read_safely(catalogue: list[Case], tmp_path: Path) -> None:
    settings = Settings.resolve()
    failures = []
    for case in catalogue:
        TALLY["tried"] += 1
        try:
            TALLY[_run_case(case, tmp_path / case.name, settings)] += 1
        except AssertionError as exc:
            failures.append(f"{case.name}: {exc}")
    handled = TALLY["refused"] + TALLY["skipped"]
    report("hostile datarooms", f"tried {TALLY['tried']}, refused or skipped cleanly {handled} "
          f"(refused {TALLY['refused']}, skipped {TALLY['skipped']}), "
          f"read safely inside the dataroom {TALLY['read']}")
    assert not failures, "\n".join(failures)
    assert TALLY["tried"] == len(catalogue) == handled + TALLY["read"]


def _run_case(case: Case, base: Path, settings: Settings) -> str:
    """Ingest one case; assert its outcome and that nothing was written outside the job folder."""
    (base / "outside").mkdir(parents=True)
    (base / "outside" / "keep.txt").write_text("keep")
    before = snapshot(base)
    if case.peak_mb is not None:
        tracemalloc.start()
    try:
        return _ingest(case, base / "job", settings)
    finally:
        if case.peak_mb is not None:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            assert peak < case.peak_mb, f"peak memory {peak:.0f} MB"
        _assert_only_job_written(base, before)


def _ingest(case: Case, job: Path, settings: Settings) -> str:
    try:
        work = prepare_work_dir(job, case.source)
    except DataroomError as exc:
        message = str(exc)
        assert case.outcome == "refused", f"refused unexpectedly: {message}"
        assert case.fragment in message, f"message lacks {case.fragment!r}: {message}"
        assert "\n" not in message and "Traceback" not in message
        assert not (job / "work" / "dataroom").exists() and os.listdir(job / "work") == []
        return "refused"
    assert case.outcome != "refused", f"accepted, expected a refusal with {case.fragment!r}"
    corpus = load_corpus(work, settings)
    extracted = corpus.file(case.member)
    assert extracted is not None, f"{case.member} is not in the dataroom: {[f.path for f in corpus.files][:10]}"
    readme = corpus.file("readme.md")
    assert readme is None or readme.status == "ok", readme  # a bad file never stops the others
    if case.outcome == "skipped":
        assert extracted.status in ("skipped", "error") and case.fragment in extracted.reason, extracted
        return "skipped"
    assert extracted.status == "ok" and case.fragment in extracted.text, extracted.reason
    return "read"


def _assert_only_job_written(base: Path, before: dict[str, int]) -> None:
    after = snapshot(base)
    assert {k: after.get(k) for k in before} == before, "a file outside the job folder changed"
    dataroom = os.path.join("job", "work", "dataroom")
    new = set(after) - set(before) - {"job", os.path.join("job", "work")}
    assert all(p == dataroom or p.startswith(dataroom + os.sep) for p in new), sorted(new)[:5]
    assert not Path(ABSOLUTE_ESCAPE).exists()


# --- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "code", "expected"),
    [
        ("escape_dotdot", 2, "points outside the dataroom"),
        ("bomb_by_ratio", 2, "looks like a zip bomb"),
        ("document_md_random_bytes", 0, "binary content"),
    ],
)
def test_cli_ingest(catalogue: list[Case], tmp_path: Path, name: str, code: int, expected: str) -> None:
    case = next(c for c in catalogue if c.name == name)
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the CLI's temporary job folder goes here
    proc = subprocess.run(
        [sys.executable, "-m", "searchbox", "ingest", "--dataroom", str(case.source)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == code, proc.stderr
    if code:
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], proc.stderr
    else:
        assert any(line.startswith("skipped") and expected in line for line in proc.stdout.splitlines()), proc.stdout
    assert os.listdir(tmp_path) == []  # the temporary job folder is gone, nothing else was left
