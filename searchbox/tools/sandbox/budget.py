"""A job's disk and inode budget: what work/ holds beyond its dataroom, measured before and after every
bash command. A budget polled while a command runs cannot hold (`fallocate` takes a gigabyte in a
millisecond), so after the command whatever it wrote past the budget is removed, largest first, and
the command's output says which files went."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from searchbox.tools.sandbox.plumbing import DATAROOM



@dataclass(frozen=True)
class Usage:
    bytes: int  # allocated on disk (a sparse file counts what it holds, a preallocated one its size)
    inodes: int  # files, folders and links


@dataclass
class Entry:
    path: str  # relative to work/
    bytes: int
    is_dir: bool
    ctime_ns: int


def measure(work: Path) -> tuple[Usage, list[Entry]]:
    """What work/ holds outside dataroom/. Only the dataroom is left out by name, and it is the real one:
    the runner puts a renamed dataroom back before the budget is enforced. Everything else counts,
    whatever its name (the namespace level's mount point is an empty folder on the host; skipped by
    name, bash could move it aside and fill a new folder of that name past the budget)."""
    entries: list[Entry] = []
    skip = {DATAROOM}
    todo = [""]
    while todo:
        rel = todo.pop()
        try:
            with os.scandir(work / rel if rel else work) as listing:
                children = list(listing)
        except OSError:  # vanished, or a folder its owner made unreadable: counted as it is
            continue
        for child in children:
            path = f"{rel}/{child.name}" if rel else child.name
            if path in skip:
                continue
            try:
                info = child.stat(follow_symlinks=False)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            entries.append(Entry(path, info.st_blocks * 512, is_dir, info.st_ctime_ns))
            if is_dir:
                todo.append(path)
    return Usage(sum(e.bytes for e in entries), len(entries)), entries


class JobBudget:
    def __init__(self, work: Path, disk_bytes: int, inodes: int) -> None:
        self.work = work
        self.disk_bytes = disk_bytes
        self.inodes = inodes
        self.before, entries = measure(work)
        self.seen = {e.path: e.ctime_ns for e in entries}  # what stood before the command, as it stood

    @property
    def bytes_left(self) -> int:
        return max(self.disk_bytes - self.before.bytes, 0)

    def enforce(self) -> tuple[Usage, list[str]]:
        """After the command: remove what it wrote past the budget. Returns the usage now and the
        paths removed. Only entries the command changed go; older files are the job's own."""
        usage, entries = measure(self.work)
        removed: list[str] = []
        if usage.bytes <= self.disk_bytes and usage.inodes <= self.inodes:
            return usage, removed
        fresh = [e for e in entries if self.seen.get(e.path) != e.ctime_ns]  # made or changed by the command
        # Bytes: the largest files first. Inodes: then the deepest, newest entries (a folder after its contents).
        files = sorted((e for e in fresh if not e.is_dir), key=lambda e: -e.bytes)
        total, count = usage.bytes, usage.inodes
        for entry in files:
            if total <= self.disk_bytes:
                break
            if self._remove(entry):
                removed.append(entry.path)
                total, count = total - entry.bytes, count - 1
        gone = set(removed)
        rest = sorted((e for e in fresh if e.path not in gone), key=lambda e: (-e.path.count("/"), -e.ctime_ns))
        for entry in rest:
            if count <= self.inodes:
                break
            if self._remove(entry):
                removed.append(entry.path)
                total, count = total - entry.bytes, count - 1
        return Usage(total, count), removed

    def _remove(self, entry: Entry) -> bool:
        """Remove one entry without following links (rmdir only empties a folder that is empty by now)."""
        parent, _, name = entry.path.rpartition("/")
        try:
            fd = os.open(self.work / parent if parent else self.work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            if entry.is_dir:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
