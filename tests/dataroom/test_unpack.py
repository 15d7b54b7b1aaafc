"""install_dataroom: hostile zips are refused without writing anything outside the job folder."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import uuid
import warnings
import zipfile
from pathlib import Path

import pytest
from conftest import deep_chain
from dataroom_factories import make_deep_zip, make_zip, snapshot

from searchbox.dataroom import DataroomError, UnpackLimits, install_dataroom
from searchbox.records.removal import remove_job_folder
from searchbox.records.tree import MAX_DEPTH


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """A job folder with work/ in it, and a sibling folder that must stay untouched."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep.txt").write_text("keep")
    (tmp_path / "job" / "work").mkdir(parents=True)
    return tmp_path / "job"


def refuse(source: Path, job: Path, limits: UnpackLimits = UnpackLimits()) -> str:
    """Install, expect a refusal, prove nothing was written anywhere; return the message."""
    before = snapshot(job.parent)
    dest = job / "work" / "dataroom"
    with pytest.raises(DataroomError) as info:
        install_dataroom(source, dest, limits)
    assert not dest.exists()
    assert snapshot(job.parent) == before
    return str(info.value)


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


# --- refusals ------------------------------------------------------------------------------------


def test_not_a_zip(tmp_path: Path, job: Path) -> None:
    source = tmp_path / "report.zip"
    source.write_text("this is a letter, not an archive")
    message = refuse(source, job)
    assert "report.zip is not a zip archive" in message


def test_truncated_zip(tmp_path: Path, job: Path) -> None:
    whole = make_zip(tmp_path / "whole.zip", {"a.txt": os.urandom(20000), "b.txt": "b"})
    source = tmp_path / "cut.zip"
    source.write_bytes(whole.read_bytes()[:10000])
    assert "damaged or incomplete" in refuse(source, job)


def test_corrupt_member_data(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "bad.zip", {"a.txt": "hello world " * 500})
    data = bytearray(source.read_bytes())
    for i in range(40, 80):  # inside the deflated data of the first member
        data[i] ^= 0xFF
    source.write_bytes(bytes(data))
    assert "damaged or incomplete" in refuse(source, job)


@pytest.mark.parametrize(
    "member",
    ["../evil.txt", "docs/../../evil.txt", f"/tmp/evil-{uuid.uuid4().hex}", "C:/evil.txt", "..\\evil.txt"],
)
def test_paths_that_escape(tmp_path: Path, job: Path, member: str) -> None:
    source = make_zip(tmp_path / "escape.zip", {"ok.txt": "fine", member: "evil"})
    message = refuse(source, job)
    assert "points outside the dataroom" in message and repr(member) in message
    assert not Path(member).exists()


def test_symlink_member(tmp_path: Path, job: Path) -> None:
    source = tmp_path / "link.zip"
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr("ok.txt", "fine")
        link = zipfile.ZipInfo("passwd")
        link.create_system = 3
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "/etc/passwd")
    assert "symbolic link (passwd)" in refuse(source, job)


def test_encrypted_member(tmp_path: Path, job: Path) -> None:
    source = tmp_path / "secret.zip"
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr("secret.txt", "the plan")
        zf.infolist()[-1].flag_bits |= 0x1  # written into the central directory at close
    assert "password-protected" in refuse(source, job)


@pytest.mark.skipif(shutil.which("zip") is None, reason="needs the zip command")
def test_zip_tool_archives_with_password_and_link(tmp_path: Path, job: Path) -> None:
    (tmp_path / "secret.txt").write_text("the plan")
    (tmp_path / "link").symlink_to("/etc/passwd")
    subprocess.run(["zip", "-q", "-P", "pw", "locked.zip", "secret.txt"], cwd=tmp_path, check=True)
    subprocess.run(["zip", "-q", "-y", "linked.zip", "secret.txt", "link"], cwd=tmp_path, check=True)
    assert "password-protected" in refuse(tmp_path / "locked.zip", job)
    assert "symbolic link (link)" in refuse(tmp_path / "linked.zip", job)


def test_too_many_entries(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "many.zip", {f"f{i}.txt": "x" for i in range(5)})
    assert "more than 3 entries (5 found)" in refuse(source, job, UnpackLimits(max_entries=3))


def test_member_over_file_limit(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "big.zip", {"big.txt": "a" * 5000})
    message = refuse(source, job, UnpackLimits(max_file_bytes=1000))
    assert "big.txt" in message and "larger than the limit of 1000 bytes" in message


def test_total_over_limit(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "total.zip", {f"f{i}.txt": os.urandom(800) for i in range(3)})
    message = refuse(source, job, UnpackLimits(max_total_bytes=2000))
    assert "more than the limit of 1.95 KB in total" in message


def test_ratio_bomb_with_default_limits(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "bomb.zip", {"zeros.bin": bytes(8 * 2**20)})
    message = refuse(source, job)
    assert "zip bomb" in message and "zeros.bin expands" in message


def test_declared_sizes_are_not_trusted(tmp_path: Path, job: Path) -> None:
    # The central directory claims 10 bytes; the member really holds 100 KB.
    source = make_zip(tmp_path / "liar.zip", {"liar.txt": os.urandom(100_000)})
    data = bytearray(source.read_bytes())
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    source.write_bytes(bytes(data))
    refuse(source, job, UnpackLimits(max_file_bytes=1000))


def test_duplicate_names(tmp_path: Path, job: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate we write on purpose
        source = tmp_path / "dup.zip"
        with zipfile.ZipFile(source, "w") as zf:
            zf.writestr("docs/a.txt", "one")
            zf.writestr("docs/a.txt", "two")
    assert "docs/a.txt more than once" in refuse(source, job)


def test_file_and_folder_with_one_name(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "clash.zip", {"a": "file", "a/b.txt": "inside"})
    assert "both as a file and as a folder" in refuse(source, job)


def test_empty_zip(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "empty.zip", {})
    assert "contains no files" in refuse(source, job)


def test_zip_of_only_junk_is_empty(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "junk.zip", {"__MACOSX/._a.txt": "x", ".DS_Store": "x", "docs/": ""})
    assert "contains no files" in refuse(source, job)


def test_missing_source(tmp_path: Path, job: Path) -> None:
    assert "was not found" in refuse(tmp_path / "nowhere.zip", job)


def test_dest_must_be_empty(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "ok.zip", {"a.txt": "a"})
    dest = job / "work" / "dataroom"
    dest.mkdir()
    (dest / "old.txt").write_text("old")
    with pytest.raises(FileExistsError):
        install_dataroom(source, dest)


# --- good datarooms ------------------------------------------------------------------------------


def test_wrapper_folder_is_stripped_and_junk_dropped(tmp_path: Path, job: Path) -> None:
    source = make_zip(
        tmp_path / "report.zip",
        {
            "report/": "",
            "report/a.md": "# A",
            "report/sub/b.txt": "b",
            "report/.DS_Store": "junk",
            "__MACOSX/report/._a.md": "junk",
        },
    )
    dest = install_dataroom(source, job / "work" / "dataroom")
    assert dest == job / "work" / "dataroom"
    assert files_under(dest) == ["a.md", "sub/b.txt"]
    assert (dest / "a.md").read_text() == "# A"
    assert sorted(os.listdir(job / "work")) == ["dataroom"]  # the staging folder is gone
    assert sorted(os.listdir(job)) == ["work"]


def test_two_top_level_entries_are_kept(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "two.zip", {"a.md": "a", "docs/b.md": "b"})
    dest = install_dataroom(source, job / "work" / "dataroom")
    assert files_under(dest) == ["a.md", "docs/b.md"]


def test_single_file_is_not_a_wrapper(tmp_path: Path, job: Path) -> None:
    dest = install_dataroom(make_zip(tmp_path / "one.zip", {"a.md": "a"}), job / "work" / "dataroom")
    assert files_under(dest) == ["a.md"]


def test_small_repetitive_files_pass_the_ratio_check(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "sparse.zip", {"blank.csv": ",,,,\n" * 50_000})
    assert files_under(install_dataroom(source, job / "work" / "dataroom")) == ["blank.csv"]


def test_empty_dest_folder_is_accepted(tmp_path: Path, job: Path) -> None:
    dest = job / "work" / "dataroom"
    dest.mkdir()
    install_dataroom(make_zip(tmp_path / "a.zip", {"a.md": "a"}), dest)
    assert files_under(dest) == ["a.md"]


def test_result_is_read_only(tmp_path: Path, job: Path) -> None:
    source = make_zip(tmp_path / "ro.zip", {"a.md": "a", "docs/b.md": "b"})
    dest = install_dataroom(source, job / "work" / "dataroom")
    for path in [dest, *dest.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o555 if path.is_dir() else 0o444), path
    if os.geteuid() != 0:  # root ignores permission bits
        with pytest.raises(PermissionError):
            (dest / "a.md").write_text("changed")
        with pytest.raises(PermissionError):
            (dest / "new.md").write_text("new")


def test_folder_source(tmp_path: Path, job: Path) -> None:
    source = tmp_path / "room"
    (source / "docs").mkdir(parents=True)
    (source / "docs" / "a.md").write_text("a")
    (source / "b.txt").write_text("b")
    (source / ".DS_Store").write_text("junk")
    (source / "docs" / "link.md").symlink_to(source / "b.txt")  # inside: skipped, not copied twice
    dest = install_dataroom(source, job / "work" / "dataroom")
    assert files_under(dest) == ["b.txt", "docs/a.md"]
    assert stat.S_IMODE(dest.stat().st_mode) == 0o555
    assert (source / "b.txt").stat().st_mode & stat.S_IWUSR  # the source itself is left writable


def test_folder_source_with_wrapper(tmp_path: Path, job: Path) -> None:
    source = tmp_path / "room"
    (source / "wrapper").mkdir(parents=True)
    (source / "wrapper" / "a.md").write_text("a")
    assert files_under(install_dataroom(source, job / "work" / "dataroom")) == ["a.md"]


def test_folder_source_link_outside_is_refused(tmp_path: Path, job: Path) -> None:
    source = tmp_path / "room"
    source.mkdir()
    (source / "a.md").write_text("a")
    (source / "secret").symlink_to(tmp_path / "outside")
    assert "link that points outside it (secret)" in refuse(source, job)


def test_folder_source_limits(tmp_path: Path, job: Path) -> None:
    source = tmp_path / "room"
    source.mkdir()
    for i in range(4):
        (source / f"f{i}.txt").write_text("x" * 600)
    assert "more than 3 entries" in refuse(source, job, UnpackLimits(max_entries=3))
    assert "in total" in refuse(source, job, UnpackLimits(max_total_bytes=2000))
    assert "larger than the limit" in refuse(source, job, UnpackLimits(max_file_bytes=500))


# --- depth (issue #43) ---------------------------------------------------------------------------


@pytest.mark.parametrize("components", [MAX_DEPTH + 1, 40, 1000])
def test_a_path_deeper_than_max_depth_is_refused(tmp_path: Path, job: Path, components: int) -> None:
    """1,000 levels made the recursive walks of Python 3.11 die of RecursionError (and left the tree in the
    job); 40 put into the job a tree deeper than any tool may write or walk."""
    message = refuse(make_deep_zip(tmp_path / "deep.zip", components), job)
    assert f"deep.zip contains a path {MAX_DEPTH + 1} levels deep (d/d/d/...), more than the {MAX_DEPTH}" in message


def test_a_path_max_depth_deep_is_kept_and_made_read_only(tmp_path: Path, job: Path) -> None:
    source = make_deep_zip(tmp_path / "deep.zip", MAX_DEPTH)
    with zipfile.ZipFile(source, "a") as zf:
        zf.writestr("e/" * MAX_DEPTH, "")  # the deepest folder a dataroom may hold, empty
    dest = install_dataroom(source, job / "work" / "dataroom")
    assert (dest / ("d/" * (MAX_DEPTH - 1) + "deep.txt")).read_text() == "deep text"
    assert stat.S_IMODE(dest.joinpath(*["e"] * MAX_DEPTH).stat().st_mode) == 0o555


def test_a_folder_source_deeper_than_max_depth_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                          job: Path) -> None:
    source = tmp_path_factory.mktemp("deep") / "room"  # beside the job's folder: refuse() walks that one
    deep_chain(source, 1000, "deep.txt")
    (source / "readme.md").write_text("# Data room")
    try:
        message = refuse(source, job)
    finally:
        remove_job_folder(source)
    assert f"room contains a path {MAX_DEPTH + 1} levels deep (d/d/d/...), more than the {MAX_DEPTH}" in message


def test_a_folder_source_max_depth_deep_is_copied(tmp_path: Path, job: Path) -> None:
    source = tmp_path / "room"
    deep_chain(source, MAX_DEPTH - 1, "deep.txt")
    (source / "readme.md").write_text("# Data room")
    dest = install_dataroom(source, job / "work" / "dataroom")
    assert files_under(dest) == ["d/" * (MAX_DEPTH - 1) + "deep.txt", "readme.md"]
