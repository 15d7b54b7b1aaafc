"""The sandbox the `bash` tool runs in (SPEC 5): a timeout after which the whole process group is
killed, capped output, an environment stripped of secrets, resource limits (CPU time, memory,
processes, file size, disk written), and no network.

Where the host allows namespaces, bash gets a root filesystem of its own ("confined"): the system's
programs and the Python environment read-only, a small private /tmp, its own /proc, and the job's
work/ folder (the dataroom in it read-only) as the only place it can write. Nothing else of the host
is there to read: not other jobs, not the app's files, not /proc/<pid>/environ of the app. It runs
with no capabilities, and as an unprivileged user when the app runs as root (so the process limit
holds). Where that is refused, the network is still cut with a network namespace if possible.
Which wrapper works is probed once per process; `airgap_level()` ("netns" or "none") and
`filesystem_level()` ("confined" or "host") report the result for run records.
"""

from __future__ import annotations

import functools
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from searchbox.tools.paths import DATAROOM_DIR, scratch_dir

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DRAIN_SECONDS = 0.5  # after the kill: how long to wait for the last output in the pipe
POLL_SECONDS = 0.05
_READ_BYTES = 65536


@dataclass(frozen=True)
class SandboxConfig:
    default_timeout: float = 120.0  # seconds, when the model gives none
    max_timeout: float = 600.0
    cpu_seconds: int = 600  # per process; the wall-clock timeout is the main limit
    address_space_bytes: int = 4 * 2**30
    extra_processes: int = 256  # on top of what the user already runs (RLIMIT_NPROC counts them all)
    file_size_bytes: int = 2**30  # also caps the spill file
    disk_bytes: int = 2 * 2**30  # of the disk's free space that one command may use up before it is killed


@dataclass(frozen=True)
class SandboxResult:
    exit_code: int | None  # None when timed out; 128+N when killed by signal N, as bash reports it
    output: str  # stdout and stderr interleaved; only the last `output_cap_bytes` when longer
    timed_out: bool
    disk_exceeded: bool  # killed for writing more than `disk_bytes` (exit_code is None then too)
    truncated_bytes: int  # bytes dropped from the start of `output` (all of them are in the spill file)
    airgap: str  # "netns" or "none"
    total_lines: int  # lines of the whole output, kept or not


def airgap_level() -> str:
    return _airgap()[0]


def filesystem_level() -> str:
    """"confined": bash sees only work/ and the system's programs; "host": it sees what the app sees."""
    return "confined" if _confinement() else "host"


def dataroom_mount_readonly() -> bool:
    """Whether bash gets the dataroom as a read-only mount (as root, file modes alone do not hold)."""
    return os.geteuid() != 0 or bool(_confinement()) or bool(_readonly_mount())


def run_sandboxed(
    command: str,
    cwd: Path,
    timeout: float,
    *,
    output_cap_bytes: int,
    spill_path: Path | None = None,
    config: SandboxConfig = SandboxConfig(),
) -> SandboxResult:
    """Run `bash -c command` in `cwd`; with `spill_path`, the whole output is written there as it streams."""
    level, wrapper = _airgap()
    cwd = cwd.resolve()
    user = _SANDBOX_UID if os.geteuid() == 0 else os.getuid()
    if _confinement():
        level = "netns"  # the confinement has its own network namespace
        scratch_dir(cwd, _ROOT_MOUNT)  # the mount point of the new root
        argv = [*_confinement(), "sh", "-c", _CONFINE_SCRIPT, "sh", str(cwd), _uid_switch(), *_python_roots(), "--",
                "bash", "-c", command]
    else:
        user = os.getuid()
        argv = [*wrapper, "bash", "-c", command]
        dataroom = cwd / DATAROOM_DIR
        if dataroom.is_dir() and _readonly_mount():
            # Root ignores file modes: a read-only bind mount keeps the dataroom read-only for it too.
            argv = [*_readonly_mount(), "sh", "-c", _READONLY_PRELUDE, "sh", str(dataroom), *argv]
    disk = _DiskWatch(cwd, config.disk_bytes)
    with _Capture(output_cap_bytes, spill_path, config.file_size_bytes) as capture:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=sandbox_env(cwd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so the whole group can be killed
            preexec_fn=_limiter(config, _user_tasks(user) + config.extra_processes),
        )
        assert process.stdout is not None
        fd = process.stdout.fileno()
        try:
            stopped = _pump(process, fd, capture, time.monotonic() + timeout, disk)
        finally:
            # Also when bash finished: background children must not outlive the call.
            _kill_group(process.pid)
            _drain(fd, capture)
            process.stdout.close()
            returncode = process.wait()
    exit_code = None if stopped else (128 - returncode if returncode < 0 else returncode)
    return SandboxResult(exit_code, capture.text(), stopped == "timeout", stopped == "disk", capture.dropped, level,
                         capture.lines())


def sandbox_env(work_dir: Path) -> dict[str, str]:
    """An allowlist, not a blocklist: no API key or token of the parent can leak into a command."""
    venv_bin = os.path.dirname(sys.executable)  # so that `python` and `rg` are the app's own
    return {
        "PATH": f"{venv_bin}:{SYSTEM_PATH}",
        "HOME": str(work_dir),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": str(scratch_dir(work_dir, "tmp")),
    }


@functools.cache
def _airgap() -> tuple[str, tuple[str, ...]]:
    for wrapper in _wrappers():
        if _works(wrapper):
            return "netns", wrapper
    return "none", ()


_SANDBOX_UID = 65534  # "nobody": who bash runs as when the app runs as root
_ROOT_MOUNT = "root"  # work/.searchbox/root: where the confined root is built (an empty folder on the host)

# Run as root of fresh mount, pid and network namespaces: build a root filesystem on a tmpfs, switch to
# it, drop every capability (and root itself, when $2 names a user), then run the command in work/.
# Arguments: work/, the user to become ("" to stay), Python folders to show read-only, "--", the command.
_CONFINE_SCRIPT = r"""
set -eu
work=$1 uid=$2
shift 2
r=$work/.searchbox/root
mount -t tmpfs -o mode=755,size=16m searchbox-root "$r"
mkdir "$r/tmp"
mount -t tmpfs -o mode=1777,size=256m searchbox-tmp "$r/tmp"
show() {  # a host folder, read-only, at the same path (unless a folder above it is shown already)
    [ -e "$r$1" ] && return 0
    mkdir -p "$r$1"
    mount --bind "$1" "$r$1"
    mount -o remount,bind,ro "$r$1"
}
for d in /bin /sbin /lib /lib32 /lib64 /libx32; do
    if [ -L "$d" ]; then ln -s "$(readlink "$d")" "$r$d"; elif [ -d "$d" ]; then show "$d"; fi
done
show /usr
show /etc
while [ "$1" != -- ]; do show "$1"; shift; done
shift
# The host's accounts and secrets stay out of the copy of /etc.
e=$r/.searchbox-etc
mkdir "$e"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$e/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$e/group"
: >"$e/empty"
for f in passwd group; do if [ -f "$r/etc/$f" ]; then mount --bind "$e/$f" "$r/etc/$f"; fi; done
for f in shadow gshadow; do if [ -f "$r/etc/$f" ]; then mount --bind "$e/empty" "$r/etc/$f"; fi; done
if [ -d "$r/etc/ssl/private" ]; then mount -t tmpfs -o size=4k searchbox-none "$r/etc/ssl/private"; fi
mkdir "$r/dev"
mount -t tmpfs -o mode=755,size=64k searchbox-dev "$r/dev"
for n in null zero full random urandom; do touch "$r/dev/$n"; mount --bind "/dev/$n" "$r/dev/$n"; done
ln -s /proc/self/fd "$r/dev/fd"
ln -s fd/0 "$r/dev/stdin"; ln -s fd/1 "$r/dev/stdout"; ln -s fd/2 "$r/dev/stderr"
mkdir "$r/proc"
mount -t proc proc "$r/proc" 2>/dev/null || true  # some hosts refuse a fresh /proc; bash needs none
mkdir -p "$r$work"
mount --bind "$work" "$r$work"
if [ -d "$work/dataroom" ]; then
    mount --bind "$work/dataroom" "$r$work/dataroom"
    mount -o remount,bind,ro "$r$work/dataroom"
fi
if [ -n "$uid" ]; then  # the unprivileged user must be able to write in work/ (the dataroom excepted)
    find "$work" -xdev \( -path "$work/dataroom" -o -path "$r" \) -prune -o ! -user "$uid" \
        -exec chown -h "$uid:$uid" {} +
fi
cd "$r"
mkdir .old
pivot_root . .old
umount -l /.old
rmdir /.old
mount -o remount,bind,ro,nosuid,nodev /  # nosuid,nodev: flags a user namespace locks on its mounts
cd "$work"
if [ -n "$uid" ]; then
    exec setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
fi
exec setpriv --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
"""


def _uid_switch() -> str:
    return str(_SANDBOX_UID) if os.geteuid() == 0 else ""


def _python_roots() -> list[str]:
    """The folders the app's Python lives in, so `python` works inside the confined root."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    return sorted(roots)


@functools.cache
def _confinement() -> tuple[str, ...]:
    """The namespace wrapper under which _CONFINE_SCRIPT works on this host, else ()."""
    tools = [shutil.which(name) for name in ("unshare", "setpriv", "pivot_root", "mount")]
    if None in tools:
        return ()
    users = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    wrapper = (tools[0], *users, "--mount", "--propagation", "private", "--net", "--pid", "--fork", "--kill-child")
    with tempfile.TemporaryDirectory() as probe:
        outside = Path(probe, "outside")
        outside.write_text("host")
        work = Path(probe, "work")
        scratch_dir(work, _ROOT_MOUNT)
        (work / DATAROOM_DIR).mkdir()
        check = f'test ! -e {outside} && ! touch dataroom/x 2>/dev/null && touch mine && ! mount -t tmpfs x /tmp 2>/dev/null'
        try:
            done = subprocess.run([*wrapper, "sh", "-c", _CONFINE_SCRIPT, "sh", str(work), _uid_switch(), *_python_roots(),
                                   "--", "sh", "-c", check], stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return ()
        return wrapper if done.returncode == 0 and (work / "mine").exists() else ()


# Bind the dataroom onto itself read-only in a private mount namespace, then run the command.
_READONLY_PRELUDE = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


@functools.cache
def _readonly_mount() -> tuple[str, ...]:
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


def _wrappers() -> list[tuple[str, ...]]:
    """Candidates, strongest first. A pid namespace as well, where allowed: when its first process
    dies the kernel kills every process in it, even one that escaped the group with setsid."""
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


def _works(wrapper: tuple[str, ...]) -> bool:
    try:
        probe = subprocess.run([*wrapper, "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _limiter(config: SandboxConfig, processes: int) -> Callable[[], None]:
    limits = (
        (resource.RLIMIT_CPU, config.cpu_seconds),
        (resource.RLIMIT_AS, config.address_space_bytes),
        (resource.RLIMIT_NPROC, processes),  # not enforced for root; set anyway
        (resource.RLIMIT_FSIZE, config.file_size_bytes),
        (resource.RLIMIT_CORE, 0),
    )

    def apply() -> None:  # runs in the child between fork and exec: only setrlimit calls, no locks
        for kind, value in limits:
            hard = resource.getrlimit(kind)[1]
            capped = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (capped, capped))

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


def _pump(process: subprocess.Popen, fd: int, capture: _Capture, deadline: float, disk: _DiskWatch) -> str | None:
    """Stream output until bash exits; "timeout" or "disk" when it must be stopped first."""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        output_open = True
        while process.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if disk.exceeded():
                return "disk"
            if not output_open:  # bash may still be running with its stdout closed
                time.sleep(min(left, POLL_SECONDS))
            elif selector.select(min(left, POLL_SECONDS)) and not capture.read(fd):
                output_open = False
    return None


class _DiskWatch:
    """Free space on the disk that holds work/, checked every few polls: file-size limits cap one
    file, not a loop that writes many."""

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


def _drain(fd: int, capture: _Capture) -> None:
    """Read what is left in the pipe. Bounded: a process that escaped the kill may hold it open."""
    end = time.monotonic() + DRAIN_SECONDS
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (left := end - time.monotonic()) > 0 and selector.select(left) and capture.read(fd):
            pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is already gone
        pass


class _Capture:
    """Keeps the last `cap` bytes of the output in memory, and all of it (up to `spill_limit`)
    in the spill file."""

    def __init__(self, cap: int, spill_path: Path | None, spill_limit: int) -> None:
        self.cap = cap
        self.spill_path = spill_path
        self.spill_limit = spill_limit
        self.spill: BinaryIO | None = None
        self.tail = bytearray()
        self.total = 0
        self.newlines = 0
        self.ends_with_newline = False

    def __enter__(self) -> _Capture:
        if self.spill_path is not None:
            self.spill_path.parent.mkdir(parents=True, exist_ok=True)
            self.spill = self.spill_path.open("wb")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.spill is not None:
            self.spill.close()

    def read(self, fd: int) -> bool:
        """Read one chunk; False at the end of the output."""
        chunk = os.read(fd, _READ_BYTES)
        if not chunk:
            return False
        if self.spill is not None and self.total < self.spill_limit:
            self.spill.write(chunk[: self.spill_limit - self.total])
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.ends_with_newline = chunk.endswith(b"\n")
        self.tail += chunk
        if len(self.tail) > self.cap:
            del self.tail[: len(self.tail) - self.cap]
        return True

    @property
    def dropped(self) -> int:
        return self.total - len(self.tail)

    def lines(self) -> int:
        return self.newlines + (1 if self.total and not self.ends_with_newline else 0)

    def text(self) -> str:
        data = bytes(self.tail)
        if self.dropped:  # the cut may have split a character: drop its continuation bytes
            skip = 0
            while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
                skip += 1
            data = data[skip:]
        return data.decode("utf-8", "replace")
