"""records.work_files: how the app opens what confined code left in work/ (issue 20 item 1). Fast and
without bash: the names are made here as bash would make them; tests/ui/test_app_attacks.py makes them with
the real sandbox and follows every surface."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from searchbox.jobs.bundle import LEFT_OUT_NAME, answer_download, make_bundle
from searchbox.records.job_folder import JobFolder
from searchbox.records.work_files import UntrustedFile, create_new, entry_exists, read_bytes, read_text
from searchbox.tools.sandbox.budget import measure


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "job" / "work"
    (folder / "dataroom").mkdir(parents=True)
    return folder


def test_a_regular_file_reads_and_stops_at_the_cap(work: Path) -> None:
    (work / "ANSWER.md").write_text("x" * 100)
    assert read_text(work, "ANSWER.md", 1000).text == "x" * 100
    data, cut = read_bytes(work, "ANSWER.md", 10)
    assert data == b"x" * 10 and cut


@pytest.mark.parametrize("make, kind", [
    (lambda w: os.symlink("/proc/self/environ", w / "ANSWER.md"), "symbolic link"),
    (lambda w: os.symlink("/dev/zero", w / "ANSWER.md"), "symbolic link"),
    (lambda w: os.mkfifo(w / "ANSWER.md"), "FIFO"),
    (lambda w: (w / "ANSWER.md").mkdir(), "folder"),
])
def test_links_fifos_and_folders_are_refused_without_being_followed_or_waited_on(work: Path, make, kind: str) -> None:
    make(work)
    read = read_text(work, "ANSWER.md", 1000)
    assert read.exists and read.text == "" and kind in (read.problem or "")
    assert "environ" not in (read.problem or "") and "/dev" not in (read.problem or "")  # never the link's target


def test_a_hard_link_to_a_host_file_is_refused(work: Path, tmp_path: Path) -> None:
    host = tmp_path / "host-secret"
    host.write_text("secret")
    os.link(host, work / "ANSWER.md")
    assert "hard link" in (read_text(work, "ANSWER.md", 1000).problem or "")


def test_a_folder_on_the_way_that_is_a_link_is_refused(work: Path, tmp_path: Path) -> None:
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "a.md").write_text("secret")
    os.symlink(tmp_path / "host", work / "notes")
    with pytest.raises(UntrustedFile):
        read_bytes(work, "notes/a.md", 100)


def test_a_new_file_is_never_written_through_a_link(work: Path, tmp_path: Path) -> None:
    target = tmp_path / "planted.pth"
    os.symlink(target, work / "ANSWER.md")
    assert entry_exists(work, "ANSWER.md")  # a dangling link stands there
    assert not create_new(work, "ANSWER.md", "import os")  # not replaced unless asked
    assert create_new(work, "ANSWER.md", "the answer", replace_special=True)
    assert not target.exists() and (work / "ANSWER.md").read_text() == "the answer"
    assert not (work / "ANSWER.md").is_symlink()
    assert not create_new(work, "ANSWER.md", "again", replace_special=True)  # a regular file is the model's answer


def test_the_answer_download_is_a_copy_and_a_link_gives_none(work: Path) -> None:
    job = work.parent
    (work / "ANSWER.md").write_text("Revenue was 48.2 million [s1].")
    copy = answer_download(job)
    assert copy is not None and copy.read_text() == "Revenue was 48.2 million [s1]." and work not in copy.parents
    (work / "ANSWER.md").unlink()
    os.symlink("/proc/self/environ", work / "ANSWER.md")
    with pytest.raises(UntrustedFile):
        answer_download(job)


def test_the_bundle_leaves_out_links_and_sparse_giants_and_says_why(work: Path, tmp_path: Path) -> None:
    job = work.parent
    JobFolder(job).write_meta({"done": True})
    (work / "notes.md").write_text("kept")
    os.symlink("/proc/self/environ", work / "ANSWER.md")
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "host", work / "linked-folder")
    with open(work / "giant.txt", "wb") as giant:
        giant.truncate(64 << 30)  # 64 GB of nothing: no disk used, so no disk budget stops it
    with zipfile.ZipFile(make_bundle(job)) as bundle:
        names = set(bundle.namelist())
        left_out = bundle.read(LEFT_OUT_NAME).decode()
    assert {"run_meta.json", "work/notes.md", LEFT_OUT_NAME} <= names
    assert not names & {"work/ANSWER.md", "work/giant.txt", "work/linked-folder/secret.txt"}
    assert "work/ANSWER.md is a symbolic link" in left_out and "work/giant.txt holds" in left_out


def test_the_budget_counts_a_folder_named_as_the_namespace_mount_point(work: Path) -> None:
    # bash moved the real mount point aside and made a new one of that name: it must count like any folder
    (work / ".searchbox" / "aside").mkdir(parents=True)
    (work / ".searchbox" / "root").mkdir()
    (work / ".searchbox" / "root" / "fill.bin").write_bytes(os.urandom(1 << 20))
    usage, entries = measure(work)
    assert usage.bytes >= 1 << 20 and ".searchbox/root/fill.bin" in {e.path for e in entries}


def test_a_visitors_bundle_has_the_operators_endpoint_and_folders_hidden(work: Path, tmp_path: Path) -> None:
    from searchbox.settings import Settings
    from searchbox.llm.disclosure import operator_details

    settings = Settings.resolve(env={}, llama_url="http://user:pw@10.1.2.3:8080/v1",
                                searchbox_cache_dir=str(tmp_path / "operator-cache"))
    job = work.parent
    JobFolder(job).write_config(settings.as_config())
    JobFolder(job).write_meta({"backends": {"loaded": {"embed": {"path": f"{tmp_path}/operator-cache/models/m"}}}})
    hide = operator_details(settings)
    with zipfile.ZipFile(make_bundle(job, hide)) as bundle:
        text = bundle.read("config.json").decode() + bundle.read("run_meta.json").decode()
    assert "10.1.2.3" not in text and "operator-cache" not in text and "(the app's own)" in text
    assert operator_details(settings.with_overrides(searchbox_operator=True)) == ()
