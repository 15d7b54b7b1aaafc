"""A job's work/ folder: a read-only dataroom/ installed in it, and the corpus extracted from it."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from searchbox.dataroom.corpus import Corpus
from searchbox.dataroom.extract_cache import ExtractionCache
from searchbox.dataroom.unpack import install_dataroom
from searchbox.records.job_folder import DATAROOM_NAME, JobFolder
from searchbox.settings import Settings


def prepare_work_dir(job_dir: Path, source: Path) -> Path:
    """Create <job>/work/dataroom from a zip or folder; returns the work folder."""
    folder = JobFolder(job_dir)
    folder.work.mkdir(parents=True, exist_ok=True)
    install_dataroom(source, folder.dataroom)
    return folder.work


def extraction_cache(settings: Settings) -> ExtractionCache:
    """The documents' extracted text on disk, shared by every job (and process) with this cache dir."""
    return ExtractionCache(Path(settings.cache_dir) / "extracted", settings.extract_cache_mb * 2**20)


def load_corpus(work_dir: Path, settings: Settings) -> Corpus:
    return Corpus.load(work_dir / DATAROOM_NAME, settings.chunk_size, settings.chunk_overlap, extraction_cache(settings))


def remove_job_folder(path: Path) -> None:
    """Remove a folder even when it holds a read-only dataroom, never following a link.

    Bash may leave links and read-only folders in work/ (`ln -s HOST_FILE d/x && chmod 555 d`):
    a chmod by path would follow the link and change a host file's mode. So every entry is
    lstat'ed through its parent's directory handle, only real folders are entered (O_NOFOLLOW),
    and a permission is only ever changed on a folder handle we opened ourselves.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)  # a link or file where the folder was: remove it, never its target
        return
    parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _remove_entry(parent_fd, path.name)
    finally:
        os.close(parent_fd)


def _open_dir_nofollow(parent_fd: int, name: str) -> int:
    """Open a real folder under parent_fd, making it searchable first if it is not."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=parent_fd)
    except PermissionError:
        pass
    # O_PATH needs no permission on the folder; chmod through /proc/self/fd acts on the inode
    # this handle holds (O_NOFOLLOW: a link there is never the one opened), not on a path.
    path_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
    try:
        os.chmod(f"/proc/self/fd/{path_fd}", stat.S_IRWXU)
    finally:
        os.close(path_fd)
    return os.open(name, flags, dir_fd=parent_fd)


def _unlink_at(parent_fd: int, name: str, *, is_dir: bool) -> None:
    try:
        os.unlink(name, dir_fd=parent_fd) if not is_dir else os.rmdir(name, dir_fd=parent_fd)
    except PermissionError:
        os.fchmod(parent_fd, stat.S_IRWXU)  # the parent folder's own handle: never a link
        os.unlink(name, dir_fd=parent_fd) if not is_dir else os.rmdir(name, dir_fd=parent_fd)


def _remove_entry(parent_fd: int, name: str) -> None:
    try:
        info = os.lstat(name, dir_fd=parent_fd)
    except FileNotFoundError:
        return
    except PermissionError:  # a parent readable but not searchable (chmod 400)
        os.fchmod(parent_fd, stat.S_IRWXU)
        info = os.lstat(name, dir_fd=parent_fd)
    if not stat.S_ISDIR(info.st_mode):
        _unlink_at(parent_fd, name, is_dir=False)
        return
    fd = _open_dir_nofollow(parent_fd, name)
    try:
        with os.scandir(fd) as entries:
            names = [entry.name for entry in entries]
        for child in names:
            _remove_entry(fd, child)
    finally:
        os.close(fd)
    _unlink_at(parent_fd, name, is_dir=True)
