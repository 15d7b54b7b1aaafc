"""The Landlock level: no namespaces and no privileges needed. Landlock leaves bash only work/ (the
dataroom in it read-only) and the system's programs to touch, denies TCP bind and connect, and scopes
signals and abstract UNIX sockets to the command itself; the seccomp filter denies new namespaces,
ptrace, sockets and device or FIFO nodes, and here file-mode and ACL changes too. An app running as
root keeps its uid but drops every capability, so file modes bind it too.

Landlock rights on work/ extend to everything below it, dataroom/ included. File modes keep the
dataroom's files and folders as they are (chmod is denied); what they do not cover is renaming
dataroom/ itself inside work/, which the runner undoes after the command (plumbing.DataroomGuard).
No rename or hard link across folders (REFER) ever carries a dataroom file out."""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from pathlib import Path

from searchbox.tools.sandbox import launcher
from searchbox.tools.sandbox.namespaces import ETC_KEPT, python_roots
from searchbox.tools.sandbox.plumbing import TMP, open_scratch
from searchbox.tools.sandbox.starter import launcher_argv

MIN_ABI = 2  # REFER: without it a hard link could carry a dataroom file out to a writable name
SIGNAL_SCOPE_ABI = 6  # below it a command could signal any process of the app's user (the app too)
_SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
_DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"]
_READ = ["read_file", "read_dir"]
_RUN = ["execute", *_READ]
_WORK = [*_RUN, "write_file", "truncate", "remove_file", "remove_dir", "make_reg", "make_dir", "make_sym"]


def rules(work: Path) -> list[tuple[str, list[str]]]:
    return [
        *((path, _RUN) for path in [*_SYSTEM, *python_roots()]),
        *((f"/etc/{name}", _READ) for name in ETC_KEPT),
        # No /proc: every process's command line is readable there, another job's bash commands included
        # (Landlock keeps only environ, memory and fds of other domains out). /dev/fd/N, and so <(...),
        # still work: reopening an inherited fd through its link is no path lookup Landlock checks.
        *((device, ["read_file", "write_file", "truncate"]) for device in _DEVICES),
        (str(work), _WORK),
    ]


def spec(work: Path) -> dict:
    # keep_modes: Landlock does not cover chmod, and the dataroom's owner (the app's user, or uid 0
    # without capabilities) could otherwise make it writable.
    return {"drop_root": True, "landlock": rules(work), "seccomp": True, "keep_modes": True}


def unavailable_reason() -> str:
    """Why this host cannot give the Landlock level ("" when it can)."""
    abi = launcher.landlock_abi()
    if abi < MIN_ABI:
        return f"Landlock ABI {abi} (need {MIN_ABI}; 0 means Landlock is off in this kernel)" if abi else \
            "this kernel has no Landlock (or it is disabled)"
    if abi < SIGNAL_SCOPE_ABI and os.geteuid() != 0:
        return f"Landlock ABI {abi} cannot keep bash from signalling the app, which runs as the same user (need {SIGNAL_SCOPE_ABI})"
    return _probe()


@functools.cache
def _probe() -> str:
    """Confine a real command and check that it held; the error when it did not."""
    with tempfile.TemporaryDirectory() as probe:
        outside = Path(probe, "outside")
        outside.write_text("host")
        work = Path(probe, "work")
        work.mkdir()
        open_scratch(work, TMP).close()
        check = f"! cat {outside} 2>/dev/null && touch mine && ! unshare -U true 2>/dev/null && echo held"
        try:
            done = subprocess.run(launcher_argv(spec(work), ["sh", "-c", check]), cwd=work, capture_output=True,
                                  text=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the Landlock probe failed: {exc}"
        if done.stdout.strip() != "held" or not (work / "mine").exists():
            return f"the Landlock probe did not hold: {(done.stderr or done.stdout).strip()[-300:]}"
    return ""

