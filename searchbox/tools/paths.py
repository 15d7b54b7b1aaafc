"""Path confinement for tools: everything stays inside the working folder, nothing is written
inside dataroom/ (SPEC 5)."""

from __future__ import annotations

import posixpath
from pathlib import Path

from searchbox.tools.catalog import ToolArgumentError

DATAROOM_DIR = "dataroom"
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
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise ToolArgumentError(f"'{path}' is outside the working folder; use a path inside it")
    return target


def confine_write(work_dir: Path, path: str) -> Path:
    target = confine(work_dir, path)
    dataroom = (work_dir / DATAROOM_DIR).resolve()
    if target == dataroom or dataroom in target.parents:
        raise ToolArgumentError(f"'{path}' is inside dataroom/, which is read-only; write elsewhere in the working folder")
    return target


def scratch_dir(work_dir: Path, *parts: str) -> Path:
    """work/.searchbox/<parts>, created on first use."""
    folder = work_dir.joinpath(SCRATCH_DIR, *parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def relative_to_work(work_dir: Path, target: Path) -> str:
    """A resolved path inside work/ as the agent writes it (posix, relative; "." for work/ itself)."""
    return target.relative_to(work_dir.resolve()).as_posix()
