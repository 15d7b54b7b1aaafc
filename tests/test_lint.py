"""The settings pyproject.toml writes down, held by the suite: the import layers (import-linter) and
the lint rules (ruff). A wrong-way import or an unused name fails CI here, with the tool's report."""

from __future__ import annotations

import ast
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
    assert "4 kept, 0 broken" in result.stdout


def test_ruff_finds_nothing() -> None:
    result = _run("-m", "ruff", "check", "--no-cache", "searchbox", "tests", "testkit", "bench", "assets", "app.py")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_benches_and_the_testkit_use_nothing_of_the_tests() -> None:
    """What the tests and benches share lives in testkit/; a bench that reached into tests/ would break
    whenever a test file moved, and a test's printed output is no interface."""
    test_modules = {path.stem for path in (ROOT / "tests").rglob("*.py")}
    for path in [*(ROOT / "bench").glob("*.py"), *(ROOT / "testkit").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and not node.level}
        assert not imported & test_modules, f"{path.relative_to(ROOT)} imports {sorted(imported & test_modules)} from tests/"
        paths = [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value == "tests"]
        assert not paths, f"{path.relative_to(ROOT)} names the tests folder"
