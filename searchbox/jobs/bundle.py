"""The run bundle: one zip of a job's records and answer, for download (the dataroom stays out)."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

from searchbox.records.job_folder import JobFolder


def make_bundle(job_dir: Path) -> Path:
    """Write <job>/bundle.zip afresh and return its path.

    Each call writes its own hidden temporary zip, then renames it into place: calls for one job
    may overlap (a run's final download while visitors open it), and a shared temporary name had
    them truncate and move each other's file."""
    folder = JobFolder(job_dir)
    left_out = {folder.input_zip, folder.bundle}
    target = folder.bundle
    fd, name = tempfile.mkstemp(prefix=".bundle-", suffix=".zip.tmp", dir=job_dir)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(job_dir.rglob("*")):
                rel = path.relative_to(job_dir)
                if not path.is_file() or path.is_symlink() or path in left_out or rel.name.startswith("."):
                    continue
                if path.is_relative_to(folder.dataroom) or ".searchbox" in rel.parts:
                    continue
                archive.write(path, rel.as_posix())
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def downloads(job_dir: Path) -> tuple[str | None, str]:
    """What a finished run offers for download: its ANSWER.md (None when it wrote none) and its bundle."""
    answer = JobFolder(job_dir).answer
    return (str(answer) if answer.exists() else None), str(make_bundle(job_dir))
