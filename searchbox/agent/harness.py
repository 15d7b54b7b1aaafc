"""Which harness ran a run (design §2.3): its name (HARNESS), its version (searchbox's, or Pi's), the git commit of the checkout
it ran from, the assists that were on and the tool-call parser. `run_meta.json` records it under
`harness`, each sweep row carries it, and `report` keeps runs of different harnesses apart."""

from __future__ import annotations

import functools
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from searchbox.agent.pi.config import relayed
from searchbox.agent.pi.install import installed_version, pinned_version
from searchbox.llm.dialects.parsing import PARSER_VERSION
from searchbox.settings import Settings

NAME = "native"
_ROOT = Path(__file__).resolve().parents[2]  # the checkout (or site-packages) holding the package


def harness_record(settings: Settings) -> dict[str, Any]:
    if settings.harness == "pi":
        # Pi runs no assist. Its calls are parsed by searchbox where searchbox serves Pi the model (the built-in
        # runtime, or LLAMA_URL relayed in plain requests), by Pi itself (the endpoint's native tool calls) else.
        ours = relayed(settings)
        return {"name": "pi", "version": installed_version(), "pinned": pinned_version(),
                "searchbox_version": package_version(), "commit": git_commit(), "assists": [],
                "tool_call_parsing": settings.tool_call_parsing if ours else "endpoint",
                "parser_version": PARSER_VERSION if ours else None}
    return {"name": NAME, "version": package_version(), "commit": git_commit(), "assists": list(settings.assists),
            "tool_call_parsing": settings.tool_call_parsing, "parser_version": PARSER_VERSION}


@functools.cache
def package_version() -> str | None:
    """The version of the code that runs: its checkout's pyproject.toml, else the installed package's."""
    pyproject = _ROOT / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == "searchbox":
            return str(project.get("version"))
    except (OSError, tomllib.TOMLDecodeError):
        pass
    try:
        return metadata.version("searchbox")
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def git_commit() -> str | None:
    """The commit checked out where the package runs from; None outside a git checkout or without git."""
    if not (_ROOT / ".git").exists():  # a worktree's .git is a file
        return None
    try:
        done = subprocess.run(["git", "-C", str(_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None
