"""Path confinement for tools: everything stays inside the working folder, nothing is written
inside dataroom/ (design §5)."""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path

from searchbox.records.job_folder import DATAROOM_NAME
from searchbox.records.tree import MAX_DEPTH  # re-exported: the tools and the unpacker share one bound
from searchbox.records.work_files import kind_of
from searchbox.tools.arguments import ToolArgumentError

DATAROOM_DIR = DATAROOM_NAME
# The tools' own scratch space inside work/ (bash spill files, TMPDIR): never inside dataroom/.
SCRATCH_DIR = ".searchbox"


def dataroom_relative(path: str) -> str:
    """A path as the agent may write it ("dataroom/a.md", "./dataroom/a.md", "a.md") made relative
    to the dataroom root."""
    normal = posixpath.normpath(path.strip().replace("\\", "/")).lstrip("/")
    if normal == DATAROOM_DIR:
        return "."
    if normal.startswith(DATAROOM_DIR + "/"):
        return normal[len(DATAROOM_DIR) + 1 :]
    return normal


def confine(work_dir: Path, path: str) -> Path:
    """Resolve `path` (relative to the working folder) and refuse anything that leaves it,
    including through symlinks."""
    if "\0" in path:  # the OS refuses it with a ValueError that would not say which path or why
        raise ToolArgumentError(f"{path!r} contains a NUL character, which no file name can hold")
    root = work_dir.resolve()
    try:
        target = (root / path).resolve()
    except (RuntimeError, OSError):  # a symlink loop; the exception's text would name the host path
        raise ToolArgumentError(f"'{path}' is a symbolic link loop") from None
    if target != root and root not in target.parents:
        raise ToolArgumentError(f"'{path}' is outside the working folder; use a path inside it")
    return target


def confine_write(work_dir: Path, path: str) -> Path:
    target = confine(work_dir, path)
    dataroom = (work_dir / DATAROOM_DIR).resolve()
    if target == dataroom or dataroom in target.parents:
        raise ToolArgumentError(f"'{path}' is inside dataroom/, which is read-only; write elsewhere in the working folder")
    depth = len(target.relative_to(work_dir.resolve()).parts)
    if depth > MAX_DEPTH:
        raise ToolArgumentError(f"the path has {depth} components, more than the {MAX_DEPTH} a path in the working "
                                "folder may have; use a shallower path")
    return target


def scratch_dir(work_dir: Path, *parts: str) -> Path:
    """work/.searchbox/<parts>, created on first use."""
    folder = work_dir.joinpath(SCRATCH_DIR, *parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def relative_to_work(work_dir: Path, target: Path) -> str:
    """A resolved path inside work/ as the agent writes it (posix, relative; "." for work/ itself)."""
    return target.relative_to(work_dir.resolve()).as_posix()


# O_NONBLOCK: opening a FIFO waits for a peer forever otherwise (for writing with no reader it fails
# with ENXIO at once). O_NOFOLLOW: a link put in place of the file after confine() resolved the path
# is refused, not followed out of work/.
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_regular(target: Path, shown: str, flags: int = os.O_RDONLY) -> int:
    """A descriptor on `target` (a confined path) that is a regular file: a FIFO, device or socket
    would block a tool or feed it endless data. Refusals name `shown`, never a host path."""
    try:
        fd = os.open(target, flags | _OPEN_FLAGS, 0o644)
    except OSError as exc:
        raise ToolArgumentError(_open_refusal(target, shown, exc)) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ToolArgumentError(f"'{shown}' is {kind_of(mode)}, not a regular file; tools open regular files only")
    return fd


def _open_refusal(target: Path, shown: str, exc: OSError) -> str:
    try:
        mode = target.lstat().st_mode
    except OSError:
        return f"File not found: {shown}" if isinstance(exc, FileNotFoundError) else f"cannot open '{shown}': {exc.strerror}"
    if stat.S_ISDIR(mode):
        return f"'{shown}' is a directory; give a file path"
    if not stat.S_ISREG(mode):
        return f"'{shown}' is {kind_of(mode)}, not a regular file; tools open regular files only"
    return f"cannot open '{shown}': {exc.strerror}"
