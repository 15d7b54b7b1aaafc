"""One line that says what a tool call found: hits and their files, lines read, matches, an exit code.

Computed once from the whole result (a preview is cut and would not parse), carried on the run's
tool_end event, and shown by the terminal and the app alike.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Any

from searchbox.tools.tool import ARGUMENT_NOTES

_CHARS = 120
_FILES_SHOWN = 3
_NOTE = re.compile(r"^\[(Showing .*?|\d+ more lines in file.*?)\]$", re.M)
_GREP_ROW = re.compile(r"^(.+?):\d+:", re.M)


def result_gist(name: str, text: str, details: dict[str, Any] | None, is_error: bool) -> str:
    details = details or {}
    if name == "bash" and "exit_code" in details:  # a failing command is an error result too: its code says most
        lines = len(text.splitlines())
        ended = "timed out" if details.get("timed_out") else f"exit {details['exit_code']}"
        return f"{ended}, {lines} line{'s' if lines != 1 else ''} of output"
    if is_error:
        return _first_line(text)
    if name == "grep" and "matches" in details:
        files = list(dict.fromkeys(_GREP_ROW.findall(text)))
        return f"{details['matches']} matches" + (f" in {_files(files)}" if files else "")
    if name == "read":
        note = _NOTE.search(text)
        return note.group(1) if note else f"{len(text.splitlines())} lines (the whole file)"
    parsed = _json(text.split(ARGUMENT_NOTES)[0])  # a catalog tool's JSON, less the notes after it
    if isinstance(parsed, dict) and isinstance(parsed.get("results"), list):
        hits = parsed["results"]
        files = list(dict.fromkeys(str(h.get("path", "")) for h in hits if isinstance(h, dict) and h.get("path")))
        return f"{len(hits)} hits" + (f" in {_files(files)}" if files else "")
    if isinstance(parsed, dict):
        scalars = [f"{k}={v}" for k, v in parsed.items() if isinstance(v, (str, int, float, bool))][:4]
        return _clip(", ".join(scalars)) if scalars else _clip(", ".join(parsed))
    return _first_line(text)


def _files(paths: list[str]) -> str:
    names = [PurePosixPath(p).name for p in paths[:_FILES_SHOWN]]
    more = f" +{len(paths) - _FILES_SHOWN} more" if len(paths) > _FILES_SHOWN else ""
    return f"{len(paths)} file{'s' if len(paths) != 1 else ''}: {', '.join(names)}{more}"


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _first_line(text: str) -> str:
    return _clip(next((line.strip() for line in text.splitlines() if line.strip()), "(no output)"))


def _clip(text: str) -> str:
    return text if len(text) <= _CHARS else text[: _CHARS - 1] + "…"
