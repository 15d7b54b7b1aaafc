"""Where the Pi coding agent is installed (pi/node_modules, from the pinned pi/package.json and its lock
file) and whether HARNESS=pi can run here: Node on PATH, new enough, and the pinned Pi installed. The
run, the app's harness choice and `doctor` all ask `pi_problem()`."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path

PI_DIR = Path(__file__).resolve().parents[3] / "pi"  # beside searchbox/ in the checkout
PACKAGE = "@mariozechner/pi-coding-agent"
INSTALL_COMMAND = "npm ci --prefix pi"
EXTENSION = PI_DIR / "extensions" / "searchbox-tools.ts"
MIN_NODE = (20, 6)  # Pi's own engines field


def pinned_version() -> str | None:
    """The Pi version pi/package.json pins: the one source of that fact."""
    try:
        return str(json.loads((PI_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"][PACKAGE])
    except (OSError, ValueError, KeyError):
        return None


def installed_version() -> str | None:
    try:
        manifest = PI_DIR / "node_modules" / PACKAGE / "package.json"
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def pi_entry() -> Path:
    """Pi's command-line entry point, run with `node` (no reliance on the .bin link or its shebang)."""
    return PI_DIR / "node_modules" / PACKAGE / "dist" / "cli.js"


def node_binary() -> str | None:
    return shutil.which("node")


@functools.cache
def _node_version(node: str) -> tuple[int, ...] | None:
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10, check=False)
        return tuple(int(part) for part in done.stdout.strip().lstrip("v").split(".")[:2])
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def pi_problem() -> str | None:
    """Why HARNESS=pi cannot run here, with the command that fixes it; None when it can."""
    node = node_binary()
    if node is None:
        return f"HARNESS=pi needs Node.js {MIN_NODE[0]}.{MIN_NODE[1]}+ on PATH, then `{INSTALL_COMMAND}`"
    version = _node_version(node)
    if version is None or version < MIN_NODE:
        shown = ".".join(map(str, version)) if version else "unknown"
        return f"HARNESS=pi needs Node.js {MIN_NODE[0]}.{MIN_NODE[1]}+ (this one is {shown})"
    pinned, installed = pinned_version(), installed_version()
    if installed is None or not pi_entry().is_file():
        return f"HARNESS=pi needs the Pi coding agent {pinned}: run `{INSTALL_COMMAND}` in the checkout"
    if installed != pinned:
        return f"Pi {installed} is installed but pi/package.json pins {pinned}: run `{INSTALL_COMMAND}`"
    if not EXTENSION.is_file():
        return f"the extension {EXTENSION} is missing"
    return None


def pi_status() -> dict[str, str | bool | None]:
    """What `doctor` reports of HARNESS=pi: whether it can run, and with which Pi and Node."""
    problem = pi_problem()
    node = node_binary()
    version = _node_version(node) if node else None
    return {"ready": problem is None, "problem": problem, "pinned": pinned_version(), "installed": installed_version(),
            "node": ".".join(map(str, version)) if version else None}
