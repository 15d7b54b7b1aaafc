"""Handing a job's files to Gradio for download, wherever the jobs folder is.

Gradio serves a returned file only after copying it into its own cache, and copies only from the
working directory, the system temp folder or `allowed_paths`. The jobs folder (under the home
folder by default) is none of these, and must not become one: every visitor could then fetch any
run's files by path. So each download is first copied into a private staging folder in the
system temp folder; Gradio copies that into its cache under a name derived from a per-process
secret and the content, and only the session the handler answered learns that URL. Staging copies
are removed once they are old enough that Gradio has long taken its own copy.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

_STAGING_NAME = "searchbox-downloads"
_KEEP_S = 600


def staging_root() -> Path:
    return Path(tempfile.gettempdir()) / _STAGING_NAME


def offer(path: str | Path | None) -> str | None:
    """A copy of `path` that Gradio may serve, or None when there is no file."""
    if path is None or not Path(path).is_file():
        return None
    source = Path(path)
    root = staging_root()
    root.mkdir(mode=0o700, exist_ok=True)
    _prune(root)
    folder = Path(tempfile.mkdtemp(dir=root))
    target = folder / source.name
    shutil.copyfile(source, target)
    return str(target)


def _prune(root: Path) -> None:
    cutoff = time.time() - _KEEP_S
    for folder in root.iterdir():
        try:
            if folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # another handler removed it first
            continue

