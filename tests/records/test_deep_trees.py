"""Issue #43: a chain of folders a thousand deep, made by bash in work/ (before the budget cut it, or in a job
from before the cut) or standing in a dataroom installed before the unpacker bounded depth, never stops what
walks it. Python 3.11's os.walk, Path.rglob and shutil.rmtree recurse once per level and died of
RecursionError on it: the bundle, the explorer's load, the dataroom put back after a bash command, a sweep."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import deep_chain

from searchbox.dataroom.extract import extract_dataroom
from searchbox.evaluation.sweep_ray import pack_job
from searchbox.jobs.bundle import make_bundle
from searchbox.records.removal import remove_job_folder
from searchbox.records.tree import MAX_DEPTH, walk
from searchbox.tools.sandbox.plumbing import DataroomGuard

DEEP = 1000


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Path]:
    """A job folder with notes in work/, the deepest file work/ may hold (MAX_DEPTH components) and a chain
    DEEP folders deep; removed without recursion afterwards (pytest's own cleanup recurses)."""
    folder = tmp_path / "job"
    (folder / "work" / "dataroom").mkdir(parents=True)
    (folder / "work" / "notes.md").write_text("notes")
    deep_chain(folder / "work" / "ok", MAX_DEPTH - 2, "deepest.md")
    deep_chain(folder / "work" / "chain", DEEP)
    yield folder
    remove_job_folder(folder)


DEEPEST = "work/ok/" + "d/" * (MAX_DEPTH - 2) + "deepest.md"


def test_a_bundle_over_a_deep_work_folder_leaves_out_only_what_is_too_deep(job: Path) -> None:
    with zipfile.ZipFile(make_bundle(job)) as bundle:
        names = set(bundle.namelist())
    assert {"work/notes.md", DEEPEST} <= names
    assert not any(name.startswith("work/chain/") for name in names)


def test_a_sweep_packs_a_deep_job_folder(job: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(pack_job(job))) as archive:
        names = set(archive.getnames())
    assert {"work/notes.md", DEEPEST} <= names
    assert max(name.count("/") + 1 for name in names) == 1 + MAX_DEPTH


def test_the_explorer_reads_a_deep_dataroom_installed_before_the_bound(tmp_path: Path) -> None:
    room = tmp_path / "room"
    deep_chain(room / "docs", DEEP, "deep.md")
    (room / "a.md").write_text("# A\n\nshallow text\n")
    try:
        files = extract_dataroom(room)
    finally:
        remove_job_folder(room)
    assert [f.path for f in files] == ["a.md"] and files[0].status == "ok"


def test_a_deep_folder_put_in_place_of_the_dataroom_is_removed_and_the_dataroom_put_back(tmp_path: Path) -> None:
    """`mv dataroom d2 && mkdir -p dataroom/d/d/...` in one bash call: the guard removes the impostor."""
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    (work / "dataroom" / "a.md").write_text("the real one")
    guard = DataroomGuard(work)
    os.rename(work / "dataroom", work / "d2")
    deep_chain(work / "dataroom", 2 * DEEP)
    try:
        said = guard.restore()
        restored = (work / "dataroom" / "a.md").read_text()
    finally:
        remove_job_folder(work)  # whatever the guard left
    assert "renamed to work/d2 and something else put in its place: the dataroom was put back" in said
    assert restored == "the real one"


def test_walk_never_follows_a_link_nor_goes_below_max_depth(tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "secret.txt").write_text("secret")
    root = tmp_path / "root"
    deep_chain(root, 3, "f.txt")
    (root / "host").symlink_to(tmp_path / "host")
    seen = {(folder.relative_to(root).as_posix(), tuple(dirs), tuple(others)) for folder, dirs, others in walk(root, 2)}
    assert seen == {(".", ("d",), ("host",)), ("d", ("d",), ())}
