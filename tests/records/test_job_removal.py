"""Removing a job folder never follows a link that bash left in it (issue #32, item 2).

The app on a Space is not root: an unlink in a folder bash made read-only fails, and the old error
handler chmod-ed the failing path, which follows a link to a host file. Root's permission override
hides the bug, so the removal runs in a child without CAP_DAC_OVERRIDE (setpriv), or as it is when
the tests are not root.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import deep_chain

ROOT = Path(__file__).resolve().parents[2]


def unprivileged_prefix() -> list[str]:
    """A command prefix that runs a child without root's permission override, or skip."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv") or ("/usr/bin/setpriv" if Path("/usr/bin/setpriv").exists() else None)
    if setpriv is None:
        pytest.skip("root without setpriv: cannot drop CAP_DAC_OVERRIDE to act like the app on a Space")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    probe = subprocess.run([*prefix, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr.decode(errors='replace')}")
    return prefix


def remove_unprivileged(folder: Path) -> subprocess.CompletedProcess[str]:
    code = ("import sys; from pathlib import Path; "
            "from searchbox.records.removal import remove_job_folder; remove_job_folder(Path(sys.argv[1]))")
    return subprocess.run([*unprivileged_prefix(), sys.executable, "-c", code, str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_removal_never_chmods_a_link_target_bash_left(tmp_path: Path) -> None:
    host_file = tmp_path / "host.txt"
    host_file.write_text("host\n")
    host_file.chmod(0o644)
    job = tmp_path / "job"
    trap = job / "work" / "d"
    trap.mkdir(parents=True)
    (trap / "x").symlink_to(host_file)                   # ln -s HOST_FILE d/x
    (trap / "plain.txt").write_text("scratch\n")
    trap.chmod(0o555)                                    # chmod 555 d

    remove_unprivileged(job)

    assert stat.S_IMODE(host_file.stat().st_mode) == 0o644, "a host file's mode changed through a link"
    assert host_file.read_text() == "host\n"
    assert not job.exists()


def test_folders_bash_locked_are_removed_too(tmp_path: Path) -> None:
    job = tmp_path / "job"
    locked = job / "work" / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "f").write_text("f\n")
    (locked / "inner").chmod(0o400)                      # readable, not searchable
    locked.chmod(0)                                      # no permission at all

    result = remove_unprivileged(job)

    assert result.returncode == 0, result.stderr
    assert not job.exists()


def test_a_link_in_place_of_the_job_folder_is_removed_not_its_target(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("keep\n")
    job = tmp_path / "job"
    job.symlink_to(target)

    result = remove_unprivileged(job)

    assert result.returncode == 0, result.stderr
    assert not job.is_symlink() and not job.exists()
    assert (target / "keep.txt").read_text() == "keep\n"


def remove_with_few_handles(folder: Path, max_fds: int = 64) -> subprocess.CompletedProcess[str]:
    """remove_job_folder in a child without root's permission override, allowed `max_fds` open files."""
    code = ("import resource, sys; from pathlib import Path; "
            f"resource.setrlimit(resource.RLIMIT_NOFILE, ({max_fds}, {max_fds})); "
            "from searchbox.records.removal import remove_job_folder; remove_job_folder(Path(sys.argv[1]))")
    return subprocess.run([*unprivileged_prefix(), sys.executable, "-c", code, str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_chain_2000_folders_deep_is_removed_with_64_handles(tmp_path: Path) -> None:
    """Issue #43: a 1,990-deep chain (three explorer `write` calls, or one bash `mkdir -p`) made the recursive
    removal die of RecursionError, and would have needed an open handle per level."""
    job = tmp_path / "job"
    deep_chain(job / "work", 2000)

    result = remove_with_few_handles(job)

    assert result.returncode == 0, result.stderr[-2000:]
    assert not job.exists()


def test_deep_in_a_chain_links_are_never_followed_and_locks_are_undone(tmp_path: Path) -> None:
    """Folders hoisted up from deep in a chain keep the rules of issue #32: a link bash left down there, in a
    folder it made read-only, is removed and its target's mode left alone; folders locked with chmod 0 go."""
    host_file = tmp_path / "host.txt"
    host_file.write_text("host\n")
    host_file.chmod(0o644)
    job = tmp_path / "job"
    deep_chain(job / "work", 300)
    bottom = job / "work"
    fd = os.open(bottom, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(300):  # down the chain by handles: its path outgrows nothing here, but stay honest
        if level in (40, 41, 250):
            os.symlink(host_file, "x", dir_fd=fd)
            os.fchmod(fd, 0o555)  # chmod 555: the link cannot be unlinked until the folder's own handle is
        fd, above = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
        if level in (100, 200):
            os.fchmod(above, 0)  # chmod 0 on a folder in the middle of the chain
        os.close(above)
    os.close(fd)

    result = remove_with_few_handles(job)

    assert result.returncode == 0, result.stderr[-2000:]
    assert stat.S_IMODE(host_file.stat().st_mode) == 0o644, "a host file's mode changed through a link"
    assert host_file.read_text() == "host\n"
    assert not job.exists()
