"""The process between the app and `bash`: it confines what it starts, then outlives it long enough
to kill everything it left behind.

Run as `python -I -S -c <this file's text> SPEC_JSON -- ARGV...`: standard library only, so it also
runs inside the namespace level's root, where the app's source tree is not visible, and so the app
process itself is never restricted (Landlock and seccomp apply to the calling process and its
descendants, for good). SPEC holds:

- `drop_root`: as uid 0, give up every capability first (then file modes bind it like anyone else);
- `landlock`: [[path, [right, ...]], ...] the only paths it may touch, with what rights; TCP bind and
  connect are denied from ABI 4, and signals and abstract UNIX sockets are scoped from ABI 6;
- `seccomp`: deny the syscalls that would undo or get around the rest (see DENIED);
- `keep_modes`: also deny changing file modes and ACLs (MODE_CHANGES), where nothing else keeps an
  owner from making the read-only dataroom writable.

It becomes a child subreaper: a daemon that double-forks or calls setsid is reparented here, so when
the command ends, or the app sends SIGTERM, every descendant is found and killed. Landlock's signal
scope keeps the confined command from killing this process first.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import signal
import struct
import sys
import time

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
SECCOMP_MODE_FILTER = 2
# noroot, no_setuid_fixup and keep_caps, each with its lock: uid 0 regains no capability on exec.
_SECUREBITS = 0b101111

# --- Landlock (include/uapi/linux/landlock.h) ------------------------------------------------------

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_RIGHTS = {
    "execute": 1 << 0, "write_file": 1 << 1, "read_file": 1 << 2, "read_dir": 1 << 3, "remove_dir": 1 << 4,
    "remove_file": 1 << 5, "make_char": 1 << 6, "make_dir": 1 << 7, "make_reg": 1 << 8, "make_sock": 1 << 9,
    "make_fifo": 1 << 10, "make_block": 1 << 11, "make_sym": 1 << 12, "refer": 1 << 13, "truncate": 1 << 14,
    "ioctl_dev": 1 << 15,
}
_FILE_RIGHTS = FS_RIGHTS["execute"] | FS_RIGHTS["write_file"] | FS_RIGHTS["read_file"] | FS_RIGHTS["truncate"] \
    | FS_RIGHTS["ioctl_dev"]  # the only rights a rule on a file (not a folder) may carry
_NET_TCP = 0b11  # bind and connect
_SCOPES = 0b11  # abstract UNIX sockets and signals


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    version = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(int(version), 0)


def _handled_fs(abi: int) -> int:
    top = {1: 12, 2: 13, 3: 14, 4: 14}.get(abi, 15)  # the highest right bit each ABI knows
    return (1 << (top + 1)) - 1


def apply_landlock(rules: list[tuple[str, list[str]]]) -> int:
    """Restrict this process to `rules`; every right the kernel knows and no rule grants is denied,
    REFER included (no hard link or rename across folders). Returns the ABI used."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError(errno.ENOSYS, "Landlock is not available")
    handled = _handled_fs(abi)
    attr = struct.pack("<QQQ", handled, _NET_TCP if abi >= 4 else 0, _SCOPES if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _check(_libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, size, 0), "landlock_create_ruleset")
    try:
        for path, names in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # a system folder this host does not have
            try:
                rights = sum(FS_RIGHTS[n] for n in names) & handled
                if not os.path.isdir(f"/proc/self/fd/{fd}"):
                    rights &= _FILE_RIGHTS
                rule = struct.pack("<Qi", rights, fd)
                _check(_libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, rule, 0),
                       f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


# --- seccomp ---------------------------------------------------------------------------------------

AUDIT_ARCH_X86_64 = 0xC000003E
# x86_64 numbers. Denied with EPERM: new namespaces and mounts (which would undo the confinement),
# reaching into other processes, kernel attack surface a search tool never needs, device and FIFO nodes
# (a FIFO stalls whoever reads it), and sockets of every family (Landlock does not cover UDP or UNIX paths).
DENIED = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312,
    "process_madvise": 440, "move_pages": 279, "migrate_pages": 256,
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428,
    "mount_setattr": 442, "open_by_handle_at": 304, "name_to_handle_at": 303,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "iopl": 172, "ioperm": 173, "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179,
    "quotactl_fd": 443, "vhangup": 153, "syslog": 103, "settimeofday": 164, "clock_settime": 227,
    "clock_adjtime": 305, "adjtimex": 159, "uselib": 134, "lookup_dcookie": 212,
    "mknod": 133, "mknodat": 259, "socket": 41,
}
MODE_CHANGES = {
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452,
    "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
    "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466,
}
_CLONE, _CLONE3, _IOCTL = 56, 435, 16
# CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_CLONE_NAMESPACES = 0x80 | 0x20000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C  # push input into a terminal
_RET_ALLOW, _RET_KILL = 0x7FFF0000, 0x80000000
_RET_EPERM, _RET_ENOSYS = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06


def seccomp_program(keep_modes: bool) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions; jumps are written with labels, then resolved."""
    denied = {**DENIED, **(MODE_CHANGES if keep_modes else {})}
    code: list[tuple[int, object, object, int]] = [
        (_LD_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ, 0, "kill", AUDIT_ARCH_X86_64),
        (_LD_ABS, 0, 0, 0),  # seccomp_data.nr
        (_JGE, "deny", 0, 0x40000000),  # the x32 ABI: other numbers for the same calls
        *((_JEQ, "deny", 0, nr) for nr in sorted(denied.values())),
        (_JEQ, "clone", 0, _CLONE),
        (_JEQ, "nosys", 0, _CLONE3),  # its flags sit in memory a filter cannot read: libc falls back to clone
        (_JEQ, "ioctl", 0, _IOCTL),
        (_RET, 0, 0, _RET_ALLOW),
        "clone", (_LD_ABS, 0, 0, 16), (_JSET, "deny", 0, _CLONE_NAMESPACES), (_RET, 0, 0, _RET_ALLOW),
        "ioctl", (_LD_ABS, 0, 0, 24), (_JEQ, "deny", 0, _TIOCSTI), (_JEQ, "deny", 0, _TIOCLINUX),
        (_RET, 0, 0, _RET_ALLOW),
        "deny", (_RET, 0, 0, _RET_EPERM),
        "nosys", (_RET, 0, 0, _RET_ENOSYS),
        "kill", (_RET, 0, 0, _RET_KILL),
    ]
    labels: dict[str, int] = {}
    body: list[tuple[int, object, object, int]] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(body)
        else:
            body.append(item)

    def offset(target: object, at: int) -> int:
        return labels[target] - at - 1 if isinstance(target, str) else int(target)  # type: ignore[arg-type]

    return [(op, offset(jt, i), offset(jf, i), k) for i, (op, jt, jf, k) in enumerate(body)]


def seccomp_supported() -> bool:
    return platform.machine() == "x86_64"  # the syscall numbers above


def apply_seccomp(keep_modes: bool) -> None:
    if not seccomp_supported():
        raise OSError(errno.ENOSYS, f"the seccomp filter knows x86_64 syscall numbers only, not {platform.machine()}")
    program = seccomp_program(keep_modes)
    filters = b"".join(struct.pack("<HBBI", op, jt, jf, k) for op, jt, jf, k in program)
    buffer = ctypes.create_string_buffer(filters)
    fprog = struct.pack("<HxxxxxxQ", len(program), ctypes.addressof(buffer))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.cast(ctypes.c_char_p(fprog), ctypes.c_void_p).value,
                       0, 0), "seccomp")


# --- capabilities ----------------------------------------------------------------------------------


def drop_root_capabilities() -> None:
    """uid 0 keeps its uid but loses every capability, now and across exec."""
    _check(_libc.prctl(PR_SET_SECUREBITS, _SECUREBITS, 0, 0, 0), "securebits")
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past the last capability this kernel has
    header = struct.pack("<Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    _check(_libc.capset(header, bytes(24)), "capset")


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


# --- the subreaper ---------------------------------------------------------------------------------


def _descendants() -> list[int]:
    found: list[int] = []
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def kill_descendants(limit_s: float = 2.0) -> None:
    """SIGKILL every descendant, again while new ones appear (a fork loop), and reap them."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        found = _descendants()
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:  # reap what has died, without waiting for what has not
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        if not found:
            return
        time.sleep(0.01)


def _confine(spec: dict) -> None:
    if spec.get("drop_root") and os.geteuid() == 0:
        drop_root_capabilities()
    if spec.get("landlock") is not None:
        apply_landlock([(path, rights) for path, rights in spec["landlock"]])
    if spec.get("seccomp"):
        apply_seccomp(bool(spec.get("keep_modes")))


def main(argv: list[str]) -> int:
    split = argv.index("--")
    spec, command = json.loads(argv[split - 1]), argv[split + 1:]
    _check(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "subreaper")

    def stop(signum: int, frame: object) -> None:
        if os.getpid() != 1:
            kill_descendants()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    child = os.fork()
    if child == 0:
        # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec: `yes | head`
        # would complain of a broken pipe and a file past its size limit would not be killed.
        for number in (signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(number, signal.SIG_DFL)
        try:
            _confine(spec)
            os.execvp(command[0], command)
        except OSError as exc:  # fail closed: nothing runs unconfined
            os.write(2, f"sandbox: cannot confine the command: {exc}\n".encode())
        os._exit(126)
    while True:
        pid, status = os.waitpid(-1, 0)  # orphans are reaped here too, until the command itself ends
        if pid == child:
            break
    if os.getpid() != 1:  # as the first process of a pid namespace, its exit takes every process in it
        kill_descendants()
    return os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
