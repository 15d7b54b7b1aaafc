"""A job's disk and inode budget: what work/ holds beyond its dataroom, measured before and after every
bash command. A budget polled while a command runs cannot hold (`fallocate` takes a gigabyte in a
millisecond), so after the command whatever it wrote past the budget is removed, largest first, and
the command's output says which files went."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from searchbox import inert
from searchbox.records.removal import remove_entry_at
from searchbox.tools.paths import MAX_DEPTH
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
    too_deep: bool = False  # more than MAX_DEPTH components: never entered, removed whole after a command


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def measure(work: Path) -> tuple[Usage, list[Entry]]:
    """What work/ holds outside dataroom/. Only the dataroom is left out by name, and it is the real one:
    the runner puts a renamed dataroom back before the budget is enforced. Everything else counts,
    whatever its name (the namespace level's mount point is an empty folder on the host; skipped by
    name, bash could move it aside and fill a new folder of that name past the budget).

    Walked through folder handles (O_NOFOLLOW), so no path grows past PATH_MAX and hides what lies below,
    and never below MAX_DEPTH: an entry deeper than that is listed as too_deep, not entered. At most
    MAX_DEPTH + 1 folders are open at once."""
    entries: list[Entry] = []
    try:
        root = os.open(work, _DIR_FLAGS)
    except OSError:
        return Usage(0, 0), entries
    stack = [(root, "", _scan(root, "", entries))]
    try:
        while stack:
            fd, rel, subfolders = stack[-1]
            if not subfolders:
                os.close(stack.pop()[0])
                continue
            name = subfolders.pop()
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:  # vanished, or a folder its owner made unreadable: counted as it is
                continue
            path = f"{rel}/{name}" if rel else name
            stack.append((child, path, _scan(child, path, entries)))
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return Usage(sum(e.bytes for e in entries), len(entries)), entries


def _scan(fd: int, rel: str, entries: list[Entry]) -> list[str]:
    """Add the entries of the folder open as fd (at `rel` in work/) to `entries`; the subfolders to enter."""
    try:
        with os.scandir(fd) as listing:
            children = list(listing)
    except OSError:
        return []
    subfolders = []
    for child in children:
        path = f"{rel}/{child.name}" if rel else child.name
        if path == DATAROOM:
            continue
        try:
            info = child.stat(follow_symlinks=False)
        except OSError:
            continue
        is_dir = stat.S_ISDIR(info.st_mode)
        too_deep = path.count("/") >= MAX_DEPTH
        entries.append(Entry(path, info.st_blocks * 512, is_dir, info.st_ctime_ns, too_deep))
        if is_dir and not too_deep:
            subfolders.append(child.name)
    return subfolders


class JobBudget:
    def __init__(self, work: Path, disk_bytes: int, inodes: int) -> None:
        self.work = work
        self.disk_bytes = disk_bytes
        self.inodes = inodes
        self.before, entries = measure(work)
        self.seen = {e.path: e.ctime_ns for e in entries}  # what stood before the command, as it stood
        self.too_deep: list[str] = []  # what enforce removed for lying deeper than MAX_DEPTH

    @property
    def bytes_left(self) -> int:
        return max(self.disk_bytes - self.before.bytes, 0)

    def enforce(self) -> tuple[Usage, list[str]]:
        """After the command: remove what lies deeper than MAX_DEPTH (in `too_deep`), then what it wrote past
        the budget. Returns the usage now and the paths removed for the budget. Only entries the command
        changed go for the budget; older files are the job's own."""
        usage, entries = measure(self.work)
        deep = [e for e in entries if e.too_deep]
        if deep:
            self.too_deep = [e.path for e in deep if self._remove(e)]
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
        """Remove one entry without following links: each folder of its path is opened with O_NOFOLLOW from
        the one above. A too_deep folder goes with all it holds (without recursion); any other only once
        empty (rmdir), as a folder of the job's own files must not go with them."""
        *folders, name = entry.path.split("/")
        try:
            fd = os.open(self.work, _DIR_FLAGS)
        except OSError:
            return False
        try:
            for folder in folders:
                fd, above = os.open(folder, _DIR_FLAGS, dir_fd=fd), fd
                os.close(above)
            if entry.too_deep:
                remove_entry_at(fd, name)
            elif entry.is_dir:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)


def too_deep_note(paths: list[str]) -> str:
    """What a command's output says of the folders enforce removed for their depth (each path shortened:
    it has more than MAX_DEPTH components)."""
    shown = inert.terminal(", ".join("/".join(p.split("/")[:3]) + "/..." for p in paths[:3]))  # names bash chose
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return (f"a path in the working folder may have at most {MAX_DEPTH} components: removed what this command made "
            f"deeper ({shown}{more})")
