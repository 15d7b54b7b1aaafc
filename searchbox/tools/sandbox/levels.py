"""Which confinement bash gets (BASH_SANDBOX), fail-closed.

- `namespaces`: a root filesystem of its own in fresh mount, pid and network namespaces (namespaces.py);
- `landlock`: Landlock and seccomp, no namespaces or privileges needed (landlock.py);
- `off`: unconfined, the host's files in view (unconfined.py): only when an operator asks for it, that
  is with SEARCHBOX_OPERATOR=1 as well (`for_settings`); otherwise `off` is refused and bash gets what
  `auto` finds, the record saying so.

`auto` takes the first of namespaces and landlock that works here. When the level asked for is not
available the result is `none`: bash is not offered to the model for that run, and the record says why.
Each level is probed once per process.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from searchbox.settings import Settings
from searchbox.tools.sandbox import landlock, namespaces, unconfined
from searchbox.tools.sandbox.cgroup import hierarchies

CHOICES = ("auto", "namespaces", "landlock", "off")
REFUSED_OFF = ("BASH_SANDBOX=off refused: unconfined bash is for an operator only (SEARCHBOX_OPERATOR=1), never "
               "for a public app's visitors")


@dataclass(frozen=True)
class Level:
    requested: str  # the BASH_SANDBOX value
    name: str  # namespaces, landlock, off, or none (bash disabled)
    reason: str  # why this level and not a stronger one; for none, why bash is off

    @property
    def allows_bash(self) -> bool:
        return self.name != "none"

    @property
    def airgap(self) -> str:
        """netns: a network namespace of its own; landlock: TCP denied by Landlock and every socket by
        seccomp; none: the host's network."""
        return {"namespaces": "netns", "landlock": "landlock", "off": unconfined.airgap()}.get(self.name, "none")

    @property
    def filesystem(self) -> str:
        """confined: bash reaches only work/ and the system's programs; host: what the app reaches."""
        return "confined" if self.name in ("namespaces", "landlock") else "host"

    def record(self) -> dict[str, Any]:
        """What a run records about its bash sandbox."""
        record: dict[str, Any] = {"requested": self.requested, "level": self.name, "airgap": self.airgap,
                                  "filesystem": self.filesystem, "reason": self.reason}
        if self.name == "landlock":
            record["landlock_abi"] = landlock.launcher.landlock_abi()
        if self.name in ("namespaces", "landlock"):
            record["seccomp"] = landlock.launcher.seccomp_supported()
        if self.allows_bash:
            record["limits"] = hierarchies().describe()
        return record


@functools.cache
def choose(requested: str = "auto") -> Level:
    if requested not in CHOICES:
        raise ValueError(f"BASH_SANDBOX must be one of {', '.join(CHOICES)}, got {requested!r}")
    if requested == "off":
        return Level(requested, "off", "BASH_SANDBOX=off: an operator chose unconfined bash")
    refused: list[str] = []
    if requested in ("auto", "namespaces"):
        if namespaces.available():
            return Level(requested, "namespaces", "")
        missing = namespaces.missing_helpers()
        if missing:
            refused.append(f"namespaces: no {', '.join(missing)} in {namespaces.SYSTEM_PATH}")
        else:
            refused.append("namespaces: this host refuses the mount, pid or network namespace bash needs"
                           + ("" if os.geteuid() == 0 else " (no unprivileged user namespaces)"))
    if requested in ("auto", "landlock"):
        why = landlock.unavailable_reason()
        if not why:
            return Level(requested, "landlock", "; ".join(refused))
        refused.append(f"landlock: {why}")
    return Level(requested, "none", "no confining level for bash on this host (" + "; ".join(refused)
                 + "): bash is disabled; BASH_SANDBOX=off runs it unconfined, for an operator only")


def requested_level(settings: Settings) -> str:
    """The BASH_SANDBOX value bash really runs with: `off` only for an operator, else `auto`."""
    if settings.bash_sandbox == "off" and not settings.searchbox_operator:
        return "auto"
    return settings.bash_sandbox


def for_settings(settings: Settings) -> Level:
    """The level a run with these settings gets; a refused `off` is recorded as asked for, with why it
    was refused and what bash got instead."""
    level = choose(requested_level(settings))
    if requested_level(settings) == settings.bash_sandbox:
        return level
    instead = f"bash runs at {level.name}" if level.allows_bash else "bash is disabled"
    return Level("off", level.name, "; ".join(filter(None, [f"{REFUSED_OFF}: {instead}", level.reason])))
