"""One bash command in the sandbox: the level's wrapper and the launcher around `bash -c`, a timeout
after which everything it started is killed, capped output, an environment stripped of secrets,
resource limits, and the job's disk budget enforced afterwards. A cut of the run's token (a pause, a
stop, a time limit of the run) ends the command the same way, within a poll."""

from __future__ import annotations

import os
import re
import resource
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from searchbox.cancel import CancelToken
from searchbox.tools.sandbox import landlock, namespaces, unconfined
from searchbox.tools.sandbox.budget import JobBudget, too_deep_note
from searchbox.tools.sandbox.capture import Capture
from searchbox.tools.sandbox.cgroup import CallGroup
from searchbox.tools.sandbox.launcher import seccomp_supported
from searchbox.tools.sandbox.levels import Level, choose
from searchbox.tools.sandbox.plumbing import (
    SCRATCH,
    TMP,
    DataroomGuard,
    Scratch,
    open_scratch,
    remove_scratch_file,
)
from searchbox.tools.sandbox.starter import launcher_argv

SYSTEM_PATH = namespaces.SYSTEM_PATH
POLL_SECONDS = 0.05
STOP_GRACE_S = 1.0  # how long the launcher gets to kill what it started before its group is killed


@dataclass(frozen=True)
class SandboxConfig:
    level: str = "auto"  # BASH_SANDBOX
    default_timeout: float = 120.0  # seconds, when the model gives none
    max_timeout: float = 600.0
    cpu_seconds: int = 600  # per process; the wall-clock timeout is the main limit
    address_space_bytes: int = 4 * 2**30  # per process
    memory_bytes: int = 2 * 2**30  # the whole command, where a cgroup holds it
    max_processes: int = 256  # the whole command, where a cgroup holds it
    cpus: float = 1.0  # CPU time per wall second for the whole command, where a cgroup holds it
    extra_processes: int = 256  # RLIMIT_NPROC: on top of what the user already runs (it counts them all)
    file_size_bytes: int = 2**30  # also caps the spill file
    disk_bytes: int = 2 * 2**30  # of the disk's free space that one command may use up before it is killed
    job_disk_bytes: int = 4 * 2**30  # what work/ may hold beyond its dataroom, after every command
    job_inodes: int = 20_000  # files and folders work/ may hold beyond its dataroom


@dataclass(frozen=True)
class SandboxResult:
    exit_code: int | None  # None when stopped; 128+N when killed by signal N, as bash reports it
    output: str  # stdout and stderr interleaved; only the last `output_cap_bytes` when longer
    timed_out: bool
    disk_exceeded: bool  # killed while writing more than `disk_bytes` (exit_code is None then too)
    truncated_bytes: int  # bytes dropped from the start of `output` (all of them are in the spill file)
    airgap: str  # netns, landlock or none
    total_lines: int  # lines of the whole output, kept or not
    level: str  # namespaces, landlock or off (see levels.py)
    removed: list[str] = field(default_factory=list)  # what the command wrote past the job's budget, removed
    notes: list[str] = field(default_factory=list)  # for the model: plumbing or dataroom put back, a full budget
    peak_memory_bytes: int | None = None  # of the whole command, where a cgroup measured it
    spill_file: str | None = None  # relative to work/, with `spill`
    cut: str | None = None  # why the run's token ended the command early (a key of cancel.CUT_ENDINGS)


class SandboxUnavailable(RuntimeError):
    """No confining level: bash must not run (see levels.py)."""


def run_sandboxed(
    command: str,
    cwd: Path,
    timeout: float,
    *,
    output_cap_bytes: int,
    spill: bool = False,
    config: SandboxConfig = SandboxConfig(),
    cancel: CancelToken | None = None,
) -> SandboxResult:
    """Run `bash -c command` in `cwd`; with `spill`, the whole output is also written to a new file
    work/.searchbox/bash-N.log (`spill_file`). A cut of `cancel` stops it (`cut` says why). Raises
    SandboxUnavailable, or PlumbingError when .searchbox is beyond repair."""
    level = choose(config.level)
    if not level.allows_bash:
        raise SandboxUnavailable(level.reason)
    cwd = cwd.resolve()
    with open_scratch(cwd) as scratch, open_scratch(cwd, TMP) as tmp:
        notes = scratch.repairs + tmp.repairs
        spill_name, spill_fd = _new_spill(scratch) if spill else (None, None)
    budget = JobBudget(cwd, config.job_disk_bytes, config.job_inodes)
    if budget.bytes_left == 0:  # every write would die of SIGXFSZ with no word why
        notes.append(f"work/ already holds {budget.before.bytes / 2**20:,.0f} MB beyond its dataroom, its whole "
                       f"budget ({config.job_disk_bytes / 2**20:,.0f} MB): no file can grow until some are removed")
    dataroom = DataroomGuard(cwd)
    argv = _argv(level, cwd, ["bash", "-c", command])
    group = CallGroup(config.memory_bytes, config.max_processes, config.cpus)
    disk = _DiskWatch(cwd, config.disk_bytes)
    capture = Capture(output_cap_bytes, spill_fd, config.file_size_bytes)
    user = os.getuid() if level.name != "namespaces" or os.geteuid() != 0 else namespaces.SANDBOX_UID
    try:
        process = subprocess.Popen(
            argv, cwd=cwd, env=sandbox_env(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so the whole group can be killed
            preexec_fn=_preexec(config, _user_tasks(user) + config.extra_processes, budget.bytes_left, group),
        )
        assert process.stdout is not None
        fd = process.stdout.fileno()
        try:
            stopped = _pump(process, fd, capture, time.monotonic() + timeout, disk, cancel)
        finally:
            _stop(process, level)
            peak = group.peak_memory()
            group.kill_and_remove()  # before the drain: nothing left to hold the pipe open
            capture.drain(fd)
            process.stdout.close()
            returncode = process.wait()
    finally:
        capture.close()
        group.kill_and_remove()  # also when the start failed
    restored = dataroom.restore()
    _, removed = budget.enforce()
    if budget.too_deep:
        notes.append(too_deep_note(budget.too_deep))
    exit_code = None if stopped else (128 - returncode if returncode < 0 else returncode)
    return SandboxResult(exit_code, capture.text(), stopped == "timeout", stopped == "disk", capture.dropped,
                         level.airgap, capture.lines(), level.name, removed, [*notes, *filter(None, [restored])], peak,
                         f"{SCRATCH}/{spill_name}" if spill_name else None,
                         stopped.removeprefix("cut:") if stopped and stopped.startswith("cut:") else None)


def discard_spill(work: Path, spill_file: str) -> None:
    """Remove a spill file the output did not need (through the folder handle: never a host file)."""
    remove_scratch_file(work.resolve(), spill_file.rpartition("/")[2])


def _new_spill(scratch: Scratch) -> tuple[str, int]:
    """The next free bash-N.log, created here (O_EXCL: a name the command planted is never reused)."""
    taken = [int(m.group(1)) for name in scratch.names() if (m := re.fullmatch(r"bash-(\d+)\.log", name))]
    number = max(taken, default=0) + 1
    while True:
        try:
            return f"bash-{number}.log", scratch.create(f"bash-{number}.log")
        except FileExistsError:
            number += 1


def sandbox_env(work_dir: Path) -> dict[str, str]:
    """An allowlist, not a blocklist: no API key or token of the parent can leak into a command."""
    venv_bin = os.path.dirname(sys.executable)  # so that `python` and `rg` are the app's own
    return {
        "PATH": f"{venv_bin}:{SYSTEM_PATH}",
        "HOME": str(work_dir),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": str(work_dir / SCRATCH / TMP),
    }


def _argv(level: Level, work: Path, command: list[str]) -> list[str]:
    if level.name == "namespaces":
        # The filter only adds to this level (its namespaces already hold): on another architecture it goes without.
        return namespaces.argv(work, launcher_argv({"seccomp": seccomp_supported()}, command))
    if level.name == "landlock":
        return launcher_argv(landlock.spec(work), command)
    return unconfined.argv(work, launcher_argv({}, command))


def _stop(process: subprocess.Popen, level: Level) -> None:
    """End the command and everything it started. The launcher, asked first, kills what left the process
    group (setsid, double forks); a pid namespace does that by itself, at once (`unshare --fork` ignores
    SIGTERM, so asking would only wait out the grace)."""
    in_pid_namespace = level.name == "namespaces" or (level.name == "off" and unconfined.pid_namespace())
    if process.poll() is None and not in_pid_namespace:
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is already gone
        pass


def _preexec(config: SandboxConfig, processes: int, bytes_left: int, group: CallGroup) -> Callable[[], None]:
    limits = (
        (resource.RLIMIT_CPU, config.cpu_seconds),
        (resource.RLIMIT_AS, config.address_space_bytes),
        (resource.RLIMIT_NPROC, processes),  # not enforced for root; set anyway
        # No single file past what is left of the job's budget (the check after the command does the rest).
        (resource.RLIMIT_FSIZE, min(config.file_size_bytes, bytes_left)),
        (resource.RLIMIT_CORE, 0),
    )

    def apply() -> None:  # runs in the child between fork and exec: only syscalls, no locks
        for kind, value in limits:
            hard = resource.getrlimit(kind)[1]
            capped = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (capped, capped))
        group.join()

    return apply


def _user_tasks(uid: int) -> int:
    """Processes and threads `uid` runs now: RLIMIT_NPROC counts them all, so a fixed limit
    would refuse every fork on a busy desktop."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:  # the process ended meanwhile
                continue
    return count


def _pump(process: subprocess.Popen, fd: int, capture: Capture, deadline: float, disk: _DiskWatch,
          cancel: CancelToken | None) -> str | None:
    """Stream output until bash exits; "timeout", "disk" or "cut:<reason>" when it must be stopped first."""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        output_open = True
        while process.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if disk.exceeded():
                return "disk"
            if cancel is not None and (reason := cancel.cut) is not None:
                return f"cut:{reason}"
            if not output_open:  # bash may still be running with its stdout closed
                time.sleep(min(left, POLL_SECONDS))
            elif selector.select(min(left, POLL_SECONDS)) and not capture.read(fd):
                output_open = False
    return None


class _DiskWatch:
    """Free space on the disk that holds work/, checked every few polls: stops a runaway writer early
    (the job's budget is enforced after the command in any case)."""

    EVERY_S = 0.25

    def __init__(self, folder: Path, budget_bytes: int) -> None:
        self.folder = folder
        self.budget = budget_bytes
        self.start = self._free()
        self.next_check = time.monotonic() + self.EVERY_S

    def _free(self) -> int:
        stat = os.statvfs(self.folder)
        return stat.f_bavail * stat.f_frsize

    def exceeded(self) -> bool:
        if time.monotonic() < self.next_check:
            return False
        self.next_check = time.monotonic() + self.EVERY_S
        return self.start - self._free() > self.budget
