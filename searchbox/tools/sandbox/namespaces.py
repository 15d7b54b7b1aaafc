"""The namespace level: bash gets a root filesystem of its own, built in fresh mount, pid and network
namespaces: the system's programs and the app's Python read-only, a small private /tmp and /proc, a
minimal /etc, and the job's work/ (its dataroom read-only) as the only host folder it can see. It runs
with no capabilities, as `nobody` when the app runs as root. The launcher then adds the seccomp filter
(no nested namespaces, no ptrace, no sockets)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from searchbox.tools.sandbox.plumbing import ROOT_MOUNT, open_scratch

SANDBOX_UID = 65534  # "nobody": who bash runs as when the app runs as root
# Where the helpers (unshare, setpriv, pivot_root, mount) are looked for, and the probe's PATH: never
# the app's own PATH, since an app started without /usr/sbin on it found no pivot_root and silently ran
# bash at landlock instead of namespaces.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HELPERS = ("unshare", "setpriv", "pivot_root", "mount")

# What bash may see of the host's /etc: the loader's cache and the alternatives' links (awk, editor),
# time zone and file-type data. No accounts, no package-manager or tool configs, no credentials.
ETC_KEPT = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf", "magic",
            "mime.types")

# Run as root of fresh mount, pid and network namespaces: build a root filesystem on a tmpfs, switch to
# it, drop every capability (and root itself, when $2 names a user), then run the command in work/.
# Arguments: work/, the user to become ("" to stay), Python folders to show read-only, "--", the command.
SCRIPT = r"""
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
mkdir "$r/etc"
kept=""  # copied, not bound: one process instead of two mounts each (the new root ends read-only anyway)
for f in """ + " ".join(ETC_KEPT) + r"""; do
    if [ -e "/etc/$f" ] || [ -L "/etc/$f" ]; then kept="$kept /etc/$f"; fi
done
if [ -n "$kept" ]; then cp -RP $kept "$r/etc/"; fi  # -RP: links as links; no owners to keep in a user namespace
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$r/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
while [ "$1" != -- ]; do show "$1"; shift; done
shift
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


def argv(work: Path, command: list[str]) -> list[str]:
    """The namespace wrapper and script around `command` (which runs as the user in work/)."""
    open_scratch(work, ROOT_MOUNT).close()  # the mount point of the new root, a real folder
    return [*wrapper(), "sh", "-c", SCRIPT, "sh", str(work), uid_switch(), *python_roots(), "--", *command]


def uid_switch() -> str:
    return str(SANDBOX_UID) if os.geteuid() == 0 else ""


def python_roots() -> list[str]:
    """The folders the app's Python lives in, so `python` works inside the confined root."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    return sorted(roots)


def available() -> bool:
    return bool(wrapper())


def missing_helpers() -> list[str]:
    """The helpers the namespace level needs that are in none of SYSTEM_PATH's folders."""
    return [name for name in HELPERS if shutil.which(name, path=SYSTEM_PATH) is None]


@functools.cache
def wrapper() -> tuple[str, ...]:
    """The namespace wrapper under which SCRIPT works on this host, else ()."""
    tools = [shutil.which(name, path=SYSTEM_PATH) for name in HELPERS]  # absolute paths, whatever PATH is
    if None in tools:
        return ()
    users = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    candidate = (tools[0], *users, "--mount", "--propagation", "private", "--net", "--pid", "--fork", "--kill-child")
    with tempfile.TemporaryDirectory() as probe:
        outside = Path(probe, "outside")
        outside.write_text("host")
        work = Path(probe, "work")
        (work / "dataroom").mkdir(parents=True)
        open_scratch(work, ROOT_MOUNT).close()
        check = f'test ! -e {outside} && ! touch dataroom/x 2>/dev/null && touch mine && ! mount -t tmpfs x /tmp 2>/dev/null'
        try:
            done = subprocess.run([*candidate, "sh", "-c", SCRIPT, "sh", str(work), uid_switch(), *python_roots(),
                                   "--", "sh", "-c", check], stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
                                  env={**os.environ, "PATH": SYSTEM_PATH})  # the script's helpers, as bash gets them
        except (OSError, subprocess.TimeoutExpired):
            return ()
        return candidate if done.returncode == 0 and (work / "mine").exists() else ()
