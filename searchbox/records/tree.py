"""Walking a folder that a visitor, a document or bash shaped: without recursion, never through a link, and
never below a fixed depth (issue #43).

Python 3.11's os.walk, os.fwalk, Path.rglob and shutil.rmtree recurse once per folder level: a zip entry
or a `mkdir -p` a thousand folders deep made them die of RecursionError in a visitor's upload, the
explorer's load or a run's bundle. `walk` keeps its pending folders in a list instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

# How many components a path in work/ or in a dataroom may have (one source of truth for the tools, the
# unpacker and every walk). Source trees, site-packages and npm's flat node_modules stay well under 20
# levels; a chain thousands deep (`write d/d/.../f`, one `mkdir -p` in bash, a crafted zip) only serves to
# break whatever walks or removes it later. The unpacker refuses deeper members; write and edit refuse
# deeper paths; after each bash command the job's budget removes deeper folders.
MAX_DEPTH = 32


def walk(root: Path, max_depth: int = MAX_DEPTH) -> Iterator[tuple[Path, list[str], list[str]]]:
    """Like os.walk(root) top-down: (folder, its real folders' names, its other names), the caller may prune
    the first list in place. A link is never followed: it is listed with the other names, as are files,
    FIFOs and the like. No name yielded has more than max_depth components below root: a folder max_depth
    levels down is named in its parent's list but never entered. A folder that cannot be read (gone, or
    its permissions) is passed over, as os.walk does."""
    pending = [(Path(root), 0)]  # (folder, its level below root)
    while pending:
        folder, level = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        dirs, others = [], []
        for entry in entries:
            (dirs if _is_real_folder(entry) else others).append(entry.name)
        yield folder, dirs, others
        if level + 1 < max_depth:
            pending.extend((folder / name, level + 1) for name in reversed(dirs))  # first name walked first


def _is_real_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:  # gone meanwhile
        return False
