"""BASH_SANDBOX=off, which only an operator sets: bash sees the host's files as the app does. What the
host still allows is kept: a network namespace (and a pid namespace, so nothing outlives the call),
and as root a private read-only bind mount of the dataroom (root ignores file modes)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from searchbox.records.job_folder import DATAROOM_NAME

# Bind the dataroom onto itself read-only in a private mount namespace, then run the command.
_READONLY_PRELUDE = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


def argv(work: Path, command: list[str]) -> list[str]:
    wrapped = [*netns_wrapper(), *command]
    dataroom = work / DATAROOM_NAME
    if dataroom.is_dir() and readonly_mount():
        wrapped = [*readonly_mount(), "sh", "-c", _READONLY_PRELUDE, "sh", str(dataroom), *wrapped]
    return wrapped


def pid_namespace() -> bool:
    """Whether the command runs in a pid namespace here: killing its process group then ends every
    process it started, with no need to ask the launcher first."""
    return bool({"--pid", "--unshare-pid"} & set(netns_wrapper()))


def airgap() -> str:
    return "netns" if netns_wrapper() else "none"


@functools.cache
def netns_wrapper() -> tuple[str, ...]:
    for candidate in _candidates():
        try:
            probe = subprocess.run([*candidate, "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return candidate
    return ()


@functools.cache
def readonly_mount() -> tuple[str, ...]:
    """`unshare --mount` when this host lets us make a private read-only bind mount, else ()."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:  # without root, file modes already protect the dataroom
        return ()
    wrapper = (unshare, "--mount", "--propagation", "private")
    with tempfile.TemporaryDirectory() as probe:
        script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && ! touch "$1/x" 2>/dev/null'
        try:
            done = subprocess.run([*wrapper, "sh", "-c", script, "sh", probe], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return ()
    return wrapper if done.returncode == 0 else ()


def _candidates() -> list[tuple[str, ...]]:
    """Strongest first. A pid namespace as well, where allowed: when its first process dies the kernel
    kills every process in it, even one that escaped the group with setsid."""
    candidates: list[tuple[str, ...]] = []
    unshare = shutil.which("unshare")
    if unshare:
        if os.geteuid() == 0:  # --map-root-user for a container that withholds CAP_SYS_ADMIN from root
            users: list[tuple[str, ...]] = [(), ("--map-root-user",)]
        else:
            # An unmapped user namespace: the command keeps no capabilities, so file permissions (the
            # read-only dataroom) still hold. --map-root-user would let it write there.
            users = [("--user",)]
        for user in users:
            candidates.append((unshare, "--net", "--pid", "--fork", "--kill-child", *user))
            candidates.append((unshare, "--net", *user))
    bwrap = shutil.which("bwrap")
    if bwrap:
        candidates.append((bwrap, "--dev-bind", "/", "/", "--unshare-net", "--unshare-pid", "--die-with-parent", "--"))
    return candidates
