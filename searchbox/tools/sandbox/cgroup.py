"""Memory, process and CPU limits for a whole bash command, and a kill that misses nothing, through
cgroups made for each call under the app's own: cgroup v2 where the host gives one with the
controllers enabled, else the cgroup v1 memory, pids and cpu hierarchies, each where it is writable.
What this host allows is found once and recorded; without any, the per-process rlimits are what is
left (address space, RLIMIT_NPROC, CPU seconds)."""

from __future__ import annotations

import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_COUNTER = itertools.count(1)
CONTROLLERS = ("memory", "pids", "cpu")
_PERIOD_US = 100_000
_FALLBACK = {"memory": "rlimit (address space per process)", "pids": "rlimit (RLIMIT_NPROC, per user)",
             "cpu": "rlimit (CPU seconds per process)"}


@dataclass(frozen=True)
class Hierarchies:
    v2: Path | None  # the app's own cgroup v2 folder, if writable
    v2_controllers: frozenset[str]  # those of CONTROLLERS enabled for its children
    v1: dict[str, Path]  # controller -> the app's writable cgroup v1 folder, for those not in v2

    def describe(self) -> dict[str, str]:
        """How memory, processes, CPU and the final kill are bounded, as the run record says it."""
        def where(controller: str) -> str:
            if controller in self.v2_controllers:
                return "cgroup v2 (whole command)"
            return "cgroup v1 (whole command)" if controller in self.v1 else _FALLBACK[controller]
        kill = "cgroup.kill" if self.v2 else "cgroup v1 procs" if self.v1 else "subreaper"
        return {"memory": where("memory"), "processes": where("pids"), "cpu": where("cpu"), "kill": kill}


@functools.cache
def hierarchies() -> Hierarchies:
    mounts = _mounts()
    own = _own_paths()
    v2 = _writable(mounts.get("cgroup2"), own.get(""))
    controllers: set[str] = set()
    if v2 is not None:
        offered = set((v2 / "cgroup.controllers").read_text().split()) & set(CONTROLLERS)
        for name in offered:  # enabling them fails while the app's cgroup holds processes (not the root)
            try:
                (v2 / "cgroup.subtree_control").write_text(f"+{name}")
            except OSError:
                pass
        controllers = set((v2 / "cgroup.subtree_control").read_text().split()) & offered
    v1 = {name: folder for name in CONTROLLERS if name not in controllers
          if (folder := _writable(mounts.get(name), own.get(name))) is not None}
    return Hierarchies(v2, frozenset(controllers), v1)


class CallGroup:
    """The cgroups of one bash call: joined by the child before exec, killed and removed after."""

    def __init__(self, memory_bytes: int, processes: int, cpus: float) -> None:
        where = hierarchies()
        name = f"searchbox-{os.getpid()}-{next(_COUNTER)}"
        quota = str(int(cpus * _PERIOD_US))
        self.dirs: list[Path] = []
        if where.v2 is not None:
            self._make(where.v2 / name, {"memory.max": str(memory_bytes), "memory.swap.max": "0",
                                         "pids.max": str(processes), "cpu.max": f"{quota} {_PERIOD_US}"})
        limits = {"memory": {"memory.limit_in_bytes": str(memory_bytes), "memory.memsw.limit_in_bytes": str(memory_bytes)},
                  "pids": {"pids.max": str(processes)},
                  "cpu": {"cpu.cfs_period_us": str(_PERIOD_US), "cpu.cfs_quota_us": quota}}
        for controller, folder in where.v1.items():
            self._make(folder / name, limits[controller])
        self.procs = [str(d / "cgroup.procs") for d in self.dirs]

    def _make(self, folder: Path, limits: dict[str, str]) -> None:
        try:
            folder.mkdir()
        except OSError:
            return  # the host refused it this time: the rlimits still hold
        self.dirs.append(folder)
        for key, value in limits.items():
            if (folder / key).exists():
                try:
                    (folder / key).write_text(value)
                except OSError:  # memsw without swap accounting, swap.max without swap
                    pass

    def join(self) -> None:
        """In the child between fork and exec: plain writes only."""
        for procs in self.procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def peak_memory(self) -> int | None:
        for folder, key in itertools.product(self.dirs, ("memory.peak", "memory.max_usage_in_bytes")):
            try:
                return int((folder / key).read_text())
            except (OSError, ValueError):
                continue
        return None

    def kill_and_remove(self) -> None:
        deadline = time.monotonic() + 2
        for folder in self.dirs:
            if (folder / "cgroup.kill").exists():
                (folder / "cgroup.kill").write_text("1")
        while self.dirs and time.monotonic() < deadline:
            for folder in list(self.dirs):
                for pid in _pids(folder):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    folder.rmdir()
                    self.dirs.remove(folder)
                except OSError:  # not empty yet: the kernel is still tearing processes down
                    pass
            if self.dirs:
                time.sleep(0.01)


def _pids(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _mounts() -> dict[str, tuple[Path, str]]:
    """cgroup2 and the v1 controllers: (mount point, the cgroup path mounted there)."""
    found: dict[str, tuple[Path, str]] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if tail and tail[0] == "cgroup2":
            found.setdefault("cgroup2", (Path(fields[4]), fields[3]))
        elif tail and tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option in CONTROLLERS:
                    found.setdefault(option, (Path(fields[4]), fields[3]))
    return found


def _own_paths() -> dict[str, str]:
    """The app's cgroup per controller ("" for cgroup v2)."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _writable(mount: tuple[Path, str] | None, path: str | None) -> Path | None:
    if mount is None or path is None:
        return None
    point, root = mount
    relative = os.path.relpath(path, root)
    if relative.startswith(".."):
        return None  # the app's cgroup is not under this mount (a container's view)
    folder = (point / relative).resolve()
    probe = folder / f"searchbox-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError:
        return None
    return folder
