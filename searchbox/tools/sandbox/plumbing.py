"""The sandbox's own files inside work/.searchbox (spill files, TMPDIR, the namespace level's mount
point), reached only through directory handles opened with O_NOFOLLOW: bash can write in work/, so it
may have swapped any of these names for a link to a host path, and the app (perhaps root) must never
write, truncate or delete through one. A plumbing name that is not a real folder is put back as one,
and the job is told; when that cannot be done, the error says why."""

from __future__ import annotations

import os
import stat
from pathlib import Path

SCRATCH = ".searchbox"
ROOT_MOUNT = "root"  # work/.searchbox/root: where the namespace level builds its root (empty on the host)
TMP = "tmp"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PlumbingError(OSError):
    """work/.searchbox cannot be made a real folder again."""


class Scratch:
    """An open handle on work/.searchbox/<parts>: every name is looked up inside that very folder."""

    def __init__(self, fd: int, repairs: list[str]) -> None:
        self.fd = fd
        self.repairs = repairs  # what had to be put back, for the job's output

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def create(self, name: str) -> int:
        """A new file for writing (an fd); a name already there, link or not, is refused."""
        return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=self.fd)

    def remove(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)  # unlink never follows a link: at worst it removes the link
        except FileNotFoundError:
            pass


def open_scratch(work: Path, *parts: str) -> Scratch:
    """Open work/.searchbox/<parts>, creating or repairing each level without following links."""
    repairs: list[str] = []
    fd = os.open(work, _DIR_FLAGS)
    shown = ""
    try:
        for name in (SCRATCH, *parts):
            shown = f"{shown}/{name}" if shown else name
            fd = _enter(fd, name, shown, repairs)
    except BaseException:
        os.close(fd)
        raise
    return Scratch(fd, repairs)


def remove_scratch_file(work: Path, name: str) -> None:
    """Remove work/.searchbox/<name> if .searchbox is still the real folder; a link or file put in its
    place is left for the next command to repair (and report)."""
    parent = os.open(work, _DIR_FLAGS)
    try:
        scratch = os.open(SCRATCH, _DIR_FLAGS, dir_fd=parent)
    except OSError:
        return
    finally:
        os.close(parent)
    with Scratch(scratch, []) as folder:
        folder.remove(name)


def _enter(parent: int, name: str, shown: str, repairs: list[str]) -> int:
    try:
        return _open_child(parent, name)
    except FileNotFoundError:
        pass
    except OSError:  # a link, a file, a FIFO, ...: not the folder the sandbox needs
        kind = _kind(parent, name)
        try:
            os.unlink(name, dir_fd=parent)
        except OSError as exc:
            raise PlumbingError(exc.errno, f"work/{shown} is {kind} and cannot be replaced by a folder: "
                                           f"{exc.strerror}; remove or rename it, then try again") from None
        repairs.append(f"work/{shown} was {kind}; it was replaced by an empty folder")
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except FileExistsError:  # made meanwhile by a command still running: look again
        pass
    return _open_child(parent, name)


def _open_child(parent: int, name: str) -> int:
    child = os.open(name, _DIR_FLAGS, dir_fd=parent)
    os.close(parent)
    return child


def _kind(parent: int, name: str) -> str:
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        return "unreadable"
    if stat.S_ISLNK(mode):
        return f"a link to {os.readlink(name, dir_fd=parent)!r}"
    return "a file" if stat.S_ISREG(mode) else "not a folder"
