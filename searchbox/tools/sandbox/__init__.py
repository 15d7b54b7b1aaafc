"""The sandbox the `bash` tool runs in (design §5), at the confinement level BASH_SANDBOX picks (levels.py):
namespaces, Landlock + seccomp, or (for an operator only, SEARCHBOX_OPERATOR=1) off. Whatever the level: a timeout after which
everything the command started is killed, capped output, an environment stripped of secrets, memory,
process and CPU limits for the whole command where a cgroup allows (else per process), and the job's
disk and inode budget enforced after every command."""

from __future__ import annotations

import os

from searchbox.tools.sandbox import unconfined
from searchbox.tools.sandbox.levels import Level, choose, for_settings, requested_level
from searchbox.tools.sandbox.plumbing import PlumbingError
from searchbox.tools.sandbox.runner import (
    SandboxConfig,
    SandboxResult,
    SandboxUnavailable,
    discard_spill,
    run_sandboxed,
)

__all__ = ["Level", "PlumbingError", "SandboxConfig", "SandboxResult", "SandboxUnavailable", "airgap_level", "choose",
           "dataroom_mount_readonly", "discard_spill", "filesystem_level", "for_settings", "requested_level",
           "run_sandboxed"]


def airgap_level(requested: str = "auto") -> str:
    return choose(requested).airgap


def filesystem_level(requested: str = "auto") -> str:
    return choose(requested).filesystem


def dataroom_mount_readonly(requested: str = "auto") -> bool:
    """Whether bash cannot write in the dataroom, root or not (root ignores file modes unless it has
    dropped its capabilities, as both confining levels do)."""
    level = choose(requested)
    if level.name == "off":
        return bool(unconfined.readonly_mount()) or os.geteuid() != 0
    return True  # the confining levels take root's powers away; with none, bash does not run
