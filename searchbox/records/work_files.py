"""Files under a job's work/ as the app must open them (design §5: the app never trusts what confined code left).

Confined bash may leave any name in work/ as a symbolic link (`ANSWER.md -> /proc/self/environ`), a hard
link, a FIFO, a device, a folder or a sparse file of terabytes. The app runs unconfined, perhaps as
root, so every read, copy and write it makes of work/ goes through here:
- each component of the path is opened with O_NOFOLLOW from a handle on the folder above it, so no link
  is followed, at the end of the path or in the middle;
- only a regular file with one link is read or copied (a hard link may name a host file);
- sizes are checked before anything is loaded, and reads stop at a cap;
- a new file is created with O_EXCL, so nothing standing at the name is written through.
Refusals say what stood there in words, never the link's host target.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

ANSWER_MAX_BYTES = 1 << 20  # an answer larger than this is shown cut: it is a runaway, not an answer
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would wait for a writer forever; O_NOCTTY: a tty never becomes ours.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class UntrustedFile(OSError):
    """A name under work/ that is not a plain file the app may open; the message says what it is."""


@dataclass(frozen=True)
class WorkFile:
    """What a file of work/ held when read: `text` ("" when absent or refused), whether it was cut at the
    cap, and `problem`, why it was not read (None when it was, or when there is no such file)."""

    text: str
    exists: bool
    truncated: bool = False
    problem: str | None = None


def kind_of(mode: int) -> str:
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def _parts(rel: str) -> list[str]:
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise UntrustedFile(f"{rel!r} is not a path inside the folder")
    return parts


def _open_parent(root: Path, parts: list[str]) -> int:
    """A handle on the folder that holds the last part, every folder on the way opened without following links."""
    fd = os.open(root, _DIR)
    try:
        for name in parts[:-1]:
            child = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refusal(parent: int, name: str, shown: str) -> UntrustedFile:
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except OSError as exc:
        return UntrustedFile(f"{shown} cannot be opened: {exc.strerror}")
    return UntrustedFile(f"{shown} is {kind_of(mode)}, not a regular file: the app does not open it")


def open_regular_in(root: Path, rel: str, max_bytes: int | None = None) -> int:
    """A read descriptor on root/rel, which must be a regular file with one link (and, with max_bytes,
    no larger). FileNotFoundError when nothing stands there; UntrustedFile for anything else refused."""
    parts = _parts(rel)
    try:
        parent = _open_parent(root, parts)
    except FileNotFoundError:
        raise
    except OSError as exc:  # a folder on the way is a link or not a folder
        raise UntrustedFile(f"a folder on the way to {rel} is not a plain folder: {exc.strerror}") from None
    try:
        try:
            fd = os.open(parts[-1], _FILE, dir_fd=parent)
        except FileNotFoundError:
            raise
        except OSError:
            raise _refusal(parent, parts[-1], rel) from None
        info = os.fstat(fd)
        problem = None
        if not stat.S_ISREG(info.st_mode):
            problem = f"{rel} is {kind_of(info.st_mode)}, not a regular file: the app does not open it"
        elif info.st_nlink != 1:
            problem = f"{rel} is a hard link ({info.st_nlink} names for one file): the app does not open it"
        elif max_bytes is not None and info.st_size > max_bytes:
            problem = f"{rel} holds {info.st_size:,} bytes, more than the {max_bytes:,} the app reads of it"
        if problem:
            os.close(fd)
            raise UntrustedFile(problem)
        return fd
    finally:
        os.close(parent)


def read_bytes(root: Path, rel: str, max_bytes: int) -> tuple[bytes, bool]:
    """At most max_bytes of root/rel and whether the file held more. Raises as open_regular_in."""
    fd = open_regular_in(root, rel)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    return data[:max_bytes], len(data) > max_bytes


def read_text(root: Path, rel: str, max_bytes: int) -> WorkFile:
    """root/rel as text for the app to show or check; never raises for what stands at the name."""
    try:
        data, truncated = read_bytes(root, rel, max_bytes)
    except FileNotFoundError:
        return WorkFile("", exists=False)
    except OSError as exc:
        return WorkFile("", exists=True, problem=str(exc) if isinstance(exc, UntrustedFile) else
                        f"{rel} cannot be read: {exc.strerror}")
    return WorkFile(data.decode("utf-8", errors="replace"), exists=True, truncated=truncated)


def entry_exists(root: Path, rel: str) -> bool:
    """Whether anything (a file, a link, even a dangling one, a FIFO) stands at root/rel."""
    parts = _parts(rel)
    try:
        parent = _open_parent(root, parts)
    except OSError:
        return False
    try:
        os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        return True
    except OSError:
        return False
    finally:
        os.close(parent)


def create_new(root: Path, rel: str, text: str, *, replace_special: bool = False) -> bool:
    """Write a new file root/rel; False when something already stands there. Nothing is ever written
    through a link: with replace_special, a link, FIFO or socket at the name (never a regular file or a
    folder) is removed first (unlink removes the link itself, not what it names)."""
    parts = _parts(rel)
    parent = _open_parent(root, parts)
    try:
        if replace_special:
            try:
                mode = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
            except FileNotFoundError:
                pass
            else:
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    os.unlink(parts[-1], dir_fd=parent)
        try:
            fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=parent)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        return True
    finally:
        os.close(parent)


def copy_out(root: Path, rel: str, target: Path, max_bytes: int) -> bool:
    """Copy root/rel to target (a path the app owns, outside work/) when it is a regular file no larger than
    max_bytes; False when there is none. Raises UntrustedFile when what stands there is refused."""
    try:
        fd = open_regular_in(root, rel, max_bytes)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as source, open(target, "wb") as out:
        out.write(source.read(max_bytes))
    return True
