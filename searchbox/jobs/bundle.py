"""The run bundle: one zip of a job's records and answer, for download (the dataroom stays out).

Everything under work/ may have been left by confined code, so files are read through
records.work_files (no link followed, regular files only, sizes checked before reading); what is left
out for that reason is named, with why, in the bundle's LEFT_OUT.txt. A visitor's bundle has the
operator's details (endpoint, folders: llm.disclosure.operator_details, which the app passes as `hide`)
replaced in its text records, in any letter case."""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from searchbox.llm.disclosure import hidden
from searchbox.records.echoes import job_echoes
from searchbox.records.job_folder import ANSWER_NAME, DATAROOM_NAME, WORK_NAME, JobFolder
from searchbox.records.tree import MAX_DEPTH, walk
from searchbox.records.work_files import ANSWER_MAX_BYTES, UntrustedFile, copy_out, open_regular_in

FILE_MAX_BYTES = 64 << 20  # no record is this large; a sparse file of terabytes would pass a disk budget
BUNDLE_MAX_BYTES = 256 << 20
_SCRATCH = ".searchbox"
LEFT_OUT_NAME = "LEFT_OUT.txt"
_TEXT_SUFFIXES = (".json", ".jsonl", ".md", ".txt", ".log")  # .log: Pi's stderr names its endpoint


def make_bundle(job_dir: Path, hide: Sequence[str] = ()) -> Path:
    """Write <job>/bundle.zip afresh and return its path; each string of `hide` in a text record becomes
    llm.disclosure.HIDDEN, in any letter case.

    Each call writes its own hidden temporary zip, then renames it into place: calls for one job
    may overlap (a run's final download while visitors open it), and a shared temporary name had
    them truncate and move each other's file."""
    target = JobFolder(job_dir).bundle
    fd, name = tempfile.mkstemp(prefix=".bundle-", suffix=".zip.tmp", dir=job_dir)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
            left_out: list[str] = []
            total = 0
            for rel in _candidates(job_dir):
                try:
                    file_fd = open_regular_in(job_dir, rel, FILE_MAX_BYTES)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    left_out.append(str(exc) if isinstance(exc, UntrustedFile) else f"{rel}: {exc.strerror}")
                    continue
                with os.fdopen(file_fd, "rb") as source:
                    size = os.fstat(source.fileno()).st_size
                    if total + size > BUNDLE_MAX_BYTES:
                        left_out.append(f"{rel}: the bundle reached its {BUNDLE_MAX_BYTES:,} bytes")
                        continue
                    total += size
                    if hide and rel.endswith(_TEXT_SUFFIXES):
                        archive.writestr(rel, hidden(source.read().decode("utf-8", errors="replace"), hide))
                        continue
                    with archive.open(rel, "w") as out:
                        shutil.copyfileobj(source, out)
            if left_out:
                archive.writestr(LEFT_OUT_NAME, "Left out of this bundle:\n" + "\n".join(left_out) + "\n")
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def _candidates(job_dir: Path) -> list[str]:
    """The job's files by path relative to it, sorted: its records and what the agent left in work/, less
    the dataroom, the sandbox's scratch, the upload, hidden files and the app's download copies."""
    folder = JobFolder(job_dir)
    skipped_top = {folder.input_zip.name, folder.bundle.name, folder.downloads.name}
    found: list[str] = []
    # No deeper than work/ may go: a chain bash made deeper (cut by the budget after each command, unless the
    # command never ended cleanly) is left out, where os.walk died of RecursionError on it.
    for folder, dirs, files in walk(job_dir, 1 + MAX_DEPTH):
        rel_folder = folder.relative_to(job_dir)
        if rel_folder == Path(WORK_NAME):
            dirs[:] = [d for d in dirs if d not in (DATAROOM_NAME, _SCRATCH)]
        if rel_folder == Path("."):
            dirs[:] = [d for d in dirs if d not in skipped_top]
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            rel = (rel_folder / name).as_posix()
            if name.startswith(".") or rel in skipped_top:
                continue
            found.append(rel)
    return sorted(found)


def answer_download(job_dir: Path) -> Path | None:
    """A copy of work/ANSWER.md in the job's own download folder (what it only echoed from the harness marked
    as such, records/echoes.py), or None when there is no answer file.
    Raises UntrustedFile when what stands at ANSWER.md is not a regular file of answer size."""
    folder = JobFolder(job_dir).downloads
    folder.mkdir(exist_ok=True)
    target = folder / ANSWER_NAME
    fd, name = tempfile.mkstemp(prefix=".answer-", suffix=".tmp", dir=folder)
    os.close(fd)
    tmp = Path(name)
    try:
        if not copy_out(JobFolder(job_dir).work, ANSWER_NAME, tmp, ANSWER_MAX_BYTES):
            tmp.unlink()
            return None
        # What the model only repeated from the harness goes out marked as the harness's, as the panel shows it.
        echoes = job_echoes(tmp.read_bytes().decode("utf-8", "replace"), job_dir)
        if echoes.spans:
            tmp.write_text(echoes.shown, encoding="utf-8")
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def downloads(job_dir: Path, hide: Sequence[str] = ()) -> tuple[str | None, str]:
    """What a finished run offers for download: a copy of its ANSWER.md (None when it wrote none, or left
    something there that is not a plain file) and its bundle (with `hide` as make_bundle takes it)."""
    try:
        answer = answer_download(job_dir)
    except UntrustedFile:
        answer = None
    return (str(answer) if answer else None), str(make_bundle(job_dir, hide))
