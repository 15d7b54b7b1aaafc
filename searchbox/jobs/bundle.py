"""The run bundle: one zip of a job's records and answer, for download (the dataroom stays out)."""

from __future__ import annotations

import zipfile
from pathlib import Path

_LEFT_OUT = {"input.zip", "bundle.zip"}


def make_bundle(job_dir: Path) -> Path:
    """Write <job>/bundle.zip afresh and return its path."""
    target = job_dir / "bundle.zip"
    tmp = target.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(job_dir.rglob("*")):
            rel = path.relative_to(job_dir)
            if not path.is_file() or path.is_symlink() or rel.name in _LEFT_OUT or rel.name.startswith("."):
                continue
            if rel.parts[:2] == ("work", "dataroom") or ".searchbox" in rel.parts:
                continue
            archive.write(path, rel.as_posix())
    tmp.replace(target)
    return target
