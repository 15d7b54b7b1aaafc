"""Removing a folder that bash, a visitor or a document built: never through a link, with no recursion and a
bounded number of open folders, whatever its depth (issues #32 and #43).

Bash may leave links and read-only folders in work/ (`ln -s HOST_FILE d/x && chmod 555 d`): a chmod by path
would follow the link and change a host file's mode. So every entry is lstat'ed through its parent's directory
handle, only real folders are entered (O_NOFOLLOW), and a permission is only ever changed on a folder handle
we opened ourselves. A chain of folders thousands deep (one bash call, or the old `write` tool) made a
recursive removal die of RecursionError, and would need one open handle per level: here a folder found
MAX_OPEN_FOLDERS levels down is renamed up into the folder being removed (hoisted) and emptied from there.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_OPEN_FOLDERS = 16  # folder handles one removal holds at once; deeper folders are hoisted to the top
_HOISTED = ".hoisted-"


def remove_job_folder(path: Path) -> None:
    """Remove a folder (or a link or file standing at `path`, never its target), even when it holds a
    read-only dataroom or a chain of any depth. Raises OSError when some entry cannot be removed."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)  # a link or file where the folder was: remove it, never its target
        return
    parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        remove_entry_at(parent_fd, path.name)
    finally:
        os.close(parent_fd)


def remove_entry_at(parent_fd: int, name: str) -> None:
    """Remove the entry `name` of the folder open as parent_fd: a file or link is unlinked, a real folder
    emptied and removed. Raises OSError when some entry cannot be removed."""
    info = _lstat_at(parent_fd, name)
    if info is None:
        return
    if not stat.S_ISDIR(info.st_mode):
        _unlink_at(parent_fd, name, is_dir=False)
        return
    top = _open_dir_nofollow(parent_fd, name)
    try:
        _empty(top)
    finally:
        os.close(top)
    _unlink_at(parent_fd, name, is_dir=True)


@dataclass
class _Folder:
    fd: int
    name: str  # in the folder above it
    pending: list[str] = field(default_factory=list)  # its entries not yet removed


def _empty(top_fd: int) -> None:
    """Remove everything in the folder open as top_fd, depth first, holding at most MAX_OPEN_FOLDERS handles."""
    top = _Folder(top_fd, "", _names(top_fd))
    taken = set(top.pending)  # hoisted folders get names no entry of top had
    hoisted = 0
    stack = [top]
    try:
        while stack:
            here = stack[-1]
            if not here.pending:
                if here is top:
                    return
                stack.pop()
                os.close(here.fd)
                _unlink_at(stack[-1].fd, here.name, is_dir=True)
                continue
            name = here.pending.pop()
            info = _lstat_at(here.fd, name)
            if info is None:
                continue
            if not stat.S_ISDIR(info.st_mode):
                _unlink_at(here.fd, name, is_dir=False)
            elif len(stack) < MAX_OPEN_FOLDERS:
                stack.append(_open_folder(here.fd, name))
            else:
                hoisted += 1
                while f"{_HOISTED}{hoisted}" in taken:
                    hoisted += 1
                _hoist(here.fd, name, top_fd, f"{_HOISTED}{hoisted}")
                top.pending.append(f"{_HOISTED}{hoisted}")
    finally:
        for folder in stack[1:]:
            os.close(folder.fd)


def _open_folder(parent_fd: int, name: str) -> _Folder:
    fd = _open_dir_nofollow(parent_fd, name)
    try:
        return _Folder(fd, name, _names(fd))
    except BaseException:
        os.close(fd)
        raise


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return [entry.name for entry in entries]


def _lstat_at(parent_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=parent_fd)
    except FileNotFoundError:
        return None
    except PermissionError:  # a parent readable but not searchable (chmod 400)
        os.fchmod(parent_fd, stat.S_IRWXU)
        return os.lstat(name, dir_fd=parent_fd)


def _open_dir_nofollow(parent_fd: int, name: str) -> int:
    """Open a real folder under parent_fd, making it readable and searchable first if it is not."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent_fd)
    except PermissionError:
        pass
    # O_PATH needs no permission on the folder; chmod through /proc/self/fd acts on the inode
    # this handle holds (O_NOFOLLOW: a link there is never the one opened), not on a path.
    path_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
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


def _hoist(parent_fd: int, name: str, top_fd: int, new_name: str) -> None:
    """Move the folder `name` of parent_fd into top_fd as new_name (rename moves the entry itself, never
    what a link names). Both folders must be writable, and the moved one too (its `..` changes)."""
    try:
        os.rename(name, new_name, src_dir_fd=parent_fd, dst_dir_fd=top_fd)
        return
    except PermissionError:
        pass
    for fd in (parent_fd, top_fd):
        os.fchmod(fd, stat.S_IRWXU)
    moved = _open_dir_nofollow(parent_fd, name)
    try:
        os.fchmod(moved, stat.S_IRWXU)
    finally:
        os.close(moved)
    os.rename(name, new_name, src_dir_fd=parent_fd, dst_dir_fd=top_fd)
