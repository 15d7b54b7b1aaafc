"""The sandbox's own files inside work/.searchbox (spill files, TMPDIR, the namespace level's mount
point), reached only through directory handles opened with O_NOFOLLOW: bash can write in work/, so it
may have swapped any of these names for a link to a host path, and the app (perhaps root) must never
write, truncate or delete through one. A plumbing name that is not a real folder is put back as one,
and the job is told; when that cannot be done, the error says why."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from searchbox.records.job_folder import DATAROOM_NAME
from searchbox.records.removal import remove_entry_at

SCRATCH = ".searchbox"
DATAROOM = DATAROOM_NAME
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


class DataroomGuard:
    """Puts work/dataroom back if a command renamed it away (the Landlock level lets a command remove and
    rename folders in work/, and cannot single the dataroom out: its rights cover everything below
    work/). The original can only have been renamed inside work/ (no rename across folders), so after
    the command it is found by its inode, whatever stands in its place is removed, and it goes back."""

    def __init__(self, work: Path) -> None:
        self.work = work
        try:
            info = os.lstat(work / DATAROOM)
        except FileNotFoundError:
            self.identity = None
        else:
            self.identity = (info.st_dev, info.st_ino)

    def restore(self) -> str:
        """After the command: "" when the dataroom is where it was, else what was done."""
        if self.identity is None:
            return ""
        fd = os.open(self.work, _DIR_FLAGS)
        try:
            try:
                now = os.stat(DATAROOM, dir_fd=fd, follow_symlinks=False)
                if (now.st_dev, now.st_ino) == self.identity:
                    return ""
            except FileNotFoundError:
                now = None
            moved = next((e.name for e in os.scandir(fd)
                          if (e.stat(follow_symlinks=False).st_dev, e.inode()) == self.identity), None)
            if moved is None:
                return "work/dataroom was moved or removed and could not be found to put back"
            if now is not None:  # an impostor: the command's own making
                # Any depth, links and read-only folders: shutil.rmtree died of RecursionError on a deep one.
                remove_entry_at(fd, DATAROOM)
            os.rename(moved, DATAROOM, src_dir_fd=fd, dst_dir_fd=fd)
            return (f"work/dataroom was renamed to work/{moved}"
                    f"{' and something else put in its place' if now is not None else ''}: the dataroom was put back")
        finally:
            os.close(fd)
