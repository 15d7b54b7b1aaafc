"""Handing a job's files to Gradio for download, wherever the jobs folder is.

Gradio serves a returned file from its upload folder (GRADIO_TEMP_DIR), to anyone who asks for its
path: no session is checked. A file returned from elsewhere it first copies there, into a folder named
by a hash of the file's bytes and Gradio's seed (a file in Gradio's package that bash, at either
confining level, can read like the rest of the app's Python). So each download is copied straight into
the upload folder, into a folder of its own named by an HMAC of the visitor's id and the job's id under
a secret this process keeps in memory only: nobody can derive the URL, not from the file's bytes nor
from any file on disk, and only the visitor the handler answered learns it. Even so the URL is no
capability: the file gate (ui.file_gate) serves the copy only to the client address it was offered
to, so a link that leaks (a shared screenshot, a proxy's log) opens nothing. Gradio deletes the copy
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
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gradio.utils import get_upload_folder

from searchbox.ui.uploads import canonical

_SECRET = secrets.token_bytes(32)
_ROOT_NAME = "searchbox-downloads"
_OFFERED: dict[str, str] = {}  # a download folder's name -> the client address it was offered to
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Viewer:
    """Whom a download is handed to: a visitor's id (the page's, or an API caller's) and the client
    address their call came from (ui.visitors.client_address)."""

    owner: str
    address: str


def downloads_root() -> Path:
    return Path(get_upload_folder()) / _ROOT_NAME


def offered_to(path: str | Path) -> str | None:
    """The client address a download copy at `path` was offered to; None when `path` is no download copy."""
    resolved = Path(canonical(path))
    root = Path(canonical(downloads_root()))
    if root not in resolved.parents:
        return None
    folder = resolved.relative_to(root).parts[0]
    with _LOCK:
        return _OFFERED.get(folder, "")  # a folder of no offer (another process's) is no one's


def offer(path: str | Path | None, viewer: Viewer, job_id: str) -> str | None:
    """A copy of `path` that Gradio may serve to `viewer` for this job, or None when there is no file."""
    if path is None or not Path(path).is_file():
        return None
    source = Path(path)
    root = downloads_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    _prune(root)
    folder = root / hmac.new(_SECRET, f"{viewer.owner}\0{job_id}".encode(), hashlib.sha256).hexdigest()[:40]
    folder.mkdir(mode=0o700, exist_ok=True)
    with _LOCK:
        _OFFERED[folder.name] = viewer.address  # the same visitor from a new address: the link moves with them
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
                with _LOCK:
                    _OFFERED.pop(folder.name, None)
        except OSError:  # still holds a copy, or another handler removed it first
            continue
