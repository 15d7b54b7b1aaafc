"""The settings pyproject.toml writes down, held by the suite: the import layers (import-linter) and
the lint rules (ruff). A wrong-way import or an unused name fails CI here, with the tool's report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_imports_follow_the_layers() -> None:
    # --no-cache: the import graph is built fresh and nothing is written into the tree.
    result = _run("-c", "import sys; from importlinter.cli import lint_imports_command; "
                        "sys.exit(lint_imports_command(['--no-cache']))")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout


def test_ruff_finds_nothing() -> None:
    result = _run("-m", "ruff", "check", "--no-cache", "searchbox", "tests", "bench", "assets", "app.py")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
