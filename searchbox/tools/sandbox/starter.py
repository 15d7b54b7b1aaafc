"""The command line that starts the launcher (launcher.py) in front of a command."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

from searchbox.tools.sandbox import launcher


def launcher_argv(settings: dict, argv: list[str]) -> list[str]:
    """`argv` started by the launcher with `settings`. Its source goes on the command line (-c), not as a
    path: inside the namespace level's root the app's source tree is not visible; -I -S: no site, no
    user paths, no PYTHON* variables, so nothing in work/ can be imported in its place."""
    return [sys.executable, "-I", "-S", "-c", _source(), json.dumps(settings), "--", *argv]


@functools.cache
def _source() -> str:
    return Path(launcher.__file__).read_text(encoding="utf-8")
