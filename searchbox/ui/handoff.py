"""Handing a job's files to Gradio for download, wherever the jobs folder is.

Gradio serves a returned file from its upload folder (GRADIO_TEMP_DIR), to anyone who asks for its
path: no session is checked. A file returned from elsewhere it first copies there, into a folder named
by a hash of the file's bytes and Gradio's seed (a file in Gradio's package that bash, at either
confining level, can read like the rest of the app's Python). So each download is copied straight into
the upload folder, into a folder of its own named by an HMAC of the visitor's id and the job's id under
a secret this process keeps in memory only: nobody can derive the URL, not from the file's bytes nor
from any file on disk, and only the visitor the handler answered learns it. Gradio deletes the copy
with its other files (SEARCHBOX_UPLOAD_KEEP_SECONDS, and all of them when the app stops); the same
visitor opening the same run again replaces it, so repeated opens cannot fill the disk. The jobs
folder itself never becomes one Gradio serves from.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import shutil
import time
from pathlib import Path

from gradio.utils import get_upload_folder

_SECRET = secrets.token_bytes(32)
_ROOT_NAME = "searchbox-downloads"


def downloads_root() -> Path:
    return Path(get_upload_folder()) / _ROOT_NAME


def offer(path: str | Path | None, viewer: str, job_id: str) -> str | None:
    """A copy of `path` that Gradio may serve to `viewer` for this job, or None when there is no file."""
    if path is None or not Path(path).is_file():
        return None
    source = Path(path)
    root = downloads_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    _prune(root)
    folder = root / hmac.new(_SECRET, f"{viewer}\0{job_id}".encode(), hashlib.sha256).hexdigest()[:40]
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / source.name
    staged = folder / f".{source.name}.{secrets.token_hex(8)}"
    try:
        shutil.copyfile(source, staged)
        os.replace(staged, target)  # whole: a download of the previous copy under way keeps reading that one
    finally:
        staged.unlink(missing_ok=True)
    return str(target)


def _prune(root: Path) -> None:
    """Remove the folders whose copies Gradio has deleted (not one just made, about to get its copy)."""
    settled = time.time() - 60
    for folder in root.iterdir():
        try:
            if folder.stat().st_mtime < settled:
                folder.rmdir()  # only when empty
        except OSError:  # still holds a copy, or another handler removed it first
            continue
