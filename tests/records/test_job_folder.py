"""The job folder has one owner (records.job_folder): every record file carries its schema version,
older folders read back, newer ones are refused clearly, and no other module names a record file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import SMALL_DATAROOM, write_tree
from searchbox.records.files import append_jsonl, write_json
from searchbox.records.job_folder import SCHEMA_VERSION, JobFolder, RecordVersionError
from searchbox.settings import Settings
from searchbox.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
RECORD_NAMES = ("query.txt", "config.json", "input.zip", "run_meta.json", "timing.json", "sources.json",
                "session.jsonl", "events.jsonl", "turns.jsonl", "snapshots", "bundle.zip", "ANSWER.md", "score.json")


def version_0_folder(root: Path) -> JobFolder:
    """A job folder as searchbox wrote it before records carried a version."""
    folder = JobFolder(root)
    folder.work.mkdir(parents=True)
    write_json(folder.run_meta, {"stop_reason": "first_turn_done", "done": True, "turns": 1})
    write_json(folder.timing, {"wall_ms": 1200.0})
    write_json(folder.sources, [{"id": "s1", "kind": "range", "path": "dataroom/legal/lease.txt", "start": 1, "end": 3}])
    append_jsonl(folder.turns, {"turn": 1, "tool_calls": 2})
    return folder


def test_a_folder_written_before_schema_versions_reads_back(tmp_path: Path) -> None:
    folder = version_0_folder(tmp_path / "job")
    assert folder.read_meta() == {"stop_reason": "first_turn_done", "done": True, "turns": 1}
    assert folder.read_timing() == {"wall_ms": 1200.0}
    assert folder.read_turns() == [{"turn": 1, "tool_calls": 2}]
    assert [row["id"] for row in folder.read_sources()] == ["s1"]
    ledger = Workspace.open(folder.root, Settings.resolve(env={})).ledger
    assert [(s.id, s.path, s.start, s.end) for s in ledger.sources()] == [("s1", "dataroom/legal/lease.txt", 1, 3)]


def test_records_written_now_carry_the_version_and_read_back_without_it(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    workspace = Workspace.create(tmp_path / "job", source, Settings.resolve(env={}))
    workspace.ledger.cite_range("dataroom/legal/lease.txt", 1, 2, "The office lease")
    workspace.save_ledger()
    folder = workspace.folder
    folder.write_meta({"turns": 2})
    folder.append_turn({"turn": 1})
    assert json.loads(folder.sources.read_text())["schema_version"] == SCHEMA_VERSION
    assert json.loads(folder.run_meta.read_text()) == {"schema_version": SCHEMA_VERSION, "turns": 2}
    assert folder.read_meta() == {"turns": 2} and folder.read_turns() == [{"schema_version": SCHEMA_VERSION, "turn": 1}]
    assert [s.id for s in Workspace.open(folder.root, workspace.settings).ledger.sources()] == ["s1"]


@pytest.mark.parametrize("record", ["run_meta", "timing", "sources", "turns"])
def test_a_record_from_a_newer_searchbox_is_refused_with_its_path(tmp_path: Path, record: str) -> None:
    folder = version_0_folder(tmp_path / "job")
    path = getattr(folder, record)
    if record == "turns":
        append_jsonl(path, {"schema_version": SCHEMA_VERSION + 1, "turn": 2})
    else:
        write_json(path, {"schema_version": SCHEMA_VERSION + 1})
    read = {"run_meta": folder.read_meta, "timing": folder.read_timing, "sources": folder.read_sources,
            "turns": folder.read_turns}[record]
    with pytest.raises(RecordVersionError, match=re.escape(str(path))):
        read()


def test_no_module_but_the_job_folder_names_a_record_file() -> None:
    """One owner: a record's name written anywhere else is a second place to change it."""
    owner = ROOT / "searchbox" / "records" / "job_folder.py"
    names = re.compile(r"""["'](?:[^"'\s]*/)?(?:""" + "|".join(re.escape(n) for n in RECORD_NAMES) + r""")["']""")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "searchbox").rglob("*.py")) if path != owner
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if names.search(line) and "model_dir" not in line]  # a model's own config.json is not a record
    assert found == []
