"""Writing run records safely: JSON replaced atomically, JSONL appended a whole line at a time."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    """A crash leaves the old file or the new one, never half of one. The temporary file has a name
    of its own: two writers of one file (threads or processes) must not move each other's."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(name, 0o644)  # as a plain write would leave it; mkstemp makes it private
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, default=str))


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    """One write of one whole line. After a torn last line (a process killed mid-write) the row starts
    on a line of its own: appended to the torn one, both would be lost to every reader."""
    data = (json.dumps(row, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    with path.open("ab+") as handle:
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                data = b"\n" + data
        handle.write(data)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete line; a torn line (a kill mid-write) is skipped."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def read_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return default
