"""The pieces of a tool result's gist: one line that says what the call found (hits and their files,
lines read, matches, an exit code). Each tool builds its gist from what it knows as it answers (a
preview is cut and the text is the model's, so neither is read back); the gist travels on the run's
tool_end event, and the terminal and the app show it alike."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

_CHARS = 120
_FILES_SHOWN = 3


def counted(count: int, noun: str, paths: list[str]) -> str:
    """"3 hits in 2 files: x.md, y.pdf": a count, and the files it fell in (in first-seen order)."""
    files = list(dict.fromkeys(paths))
    return f"{count} {noun}" + (f" in {_files(files)}" if files else "")


def scalars(data: dict[str, Any]) -> str:
    """A JSON result's first few plain values, "path=v.jsonl, count=2", or else its keys."""
    plain = [f"{k}={v}" for k, v in data.items() if isinstance(v, (str, int, float, bool))][:4]
    return clip(", ".join(plain) if plain else ", ".join(data))


def first_line(text: str) -> str:
    return clip(next((line.strip() for line in text.splitlines() if line.strip()), "(no output)"))


def clip(text: str) -> str:
    return text if len(text) <= _CHARS else text[: _CHARS - 1] + "…"


def _files(paths: list[str]) -> str:
    names = [PurePosixPath(p).name for p in paths[:_FILES_SHOWN]]
    more = f" +{len(paths) - _FILES_SHOWN} more" if len(paths) > _FILES_SHOWN else ""
    return f"{len(paths)} file{'s' if len(paths) != 1 else ''}: {', '.join(names)}{more}"
