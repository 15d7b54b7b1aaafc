"""The confinement levels with real processes, each attack tried the way a model would (a bash command
with hostile intent), at every level this host offers; fail-closed when a level is missing; and the
bash-side limits: the job's disk and inode budget, whole-command memory and process limits,
background processes, the minimal /etc, and plumbing files a command swapped for links."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchbox.tools.paths import MAX_DEPTH
from searchbox.tools.registry import REGISTRY
from searchbox.tools.sandbox import SandboxConfig, choose, run_sandboxed
from searchbox.tools.sandbox.budget import measure
from searchbox.tools.sandbox.cgroup import hierarchies
from searchbox.tools.sandbox.starter import launcher_argv
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext

ROOT = Path(__file__).resolve().parents[2]
CONFINING = ["namespaces", "landlock"]


def level_or_skip(name: str) -> None:
    level = choose(name)
    if level.name != name:
        pytest.skip(f"this host has no {name} level: {level.reason}")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    (work / "dataroom" / "a.md").write_text("original")
    (work / "dataroom" / "a.md").chmod(0o444)
    (work / "dataroom").chmod(0o555)
    return work


def run(command: str, work: Path, level: str, timeout: float = 20, **config: object):
    return run_sandboxed(command, work, timeout, output_cap_bytes=200_000, config=SandboxConfig(level=level, **config))


def alive(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (entry / "status").read_text()
            except OSError:
                continue
            if marker in cmdline and "State:\tZ" not in state:
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("level", CONFINING)
def test_host_files_secrets_and_the_dataroom_stay_out_of_reach(level: str, work: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    level_or_skip(level)
    monkeypatch.setenv("JINA_API_KEY", "jina-secret-of-the-app")
    outside = work.parent / "other-job.txt"
    outside.write_text("another visitor's question")
    result = run(f"cat {outside}; cat /proc/{os.getpid()}/environ; cat /proc/{os.getpid()}/cmdline | head -c 0; "
                 f"echo x > {work.parent}/planted; echo x > dataroom/a.md; chmod u+w dataroom/a.md; "
                 "ln dataroom/a.md mine-link; mv dataroom dr2; rm -f dataroom/a.md; touch dataroom/new; "
                 "setfacl -m u:nobody:rw dataroom/a.md; echo ok > mine.txt", work, level)
    assert "another visitor's question" not in result.output and "jina-secret-of-the-app" not in result.output
    assert not (work.parent / "planted").exists()
    assert sorted(p.name for p in (work / "dataroom").iterdir()) == ["a.md"]
    assert (work / "dataroom" / "a.md").read_text() == "original" and (work / "dataroom" / "a.md").stat().st_mode & 0o222 == 0
    assert (work / "mine.txt").read_text() == "ok\n"  # work/ itself stays writable


@pytest.mark.parametrize("level", CONFINING)
def test_a_dataroom_renamed_away_and_forged_is_put_back(level: str, work: Path) -> None:
    level_or_skip(level)
    ctx = ToolContext(work, SourceLedger(), SandboxConfig(level=level))
    out = REGISTRY["bash"].run(ctx, {"command": "mv dataroom d2 && mkdir dataroom && echo forged > dataroom/a.md; "
                                               "mkdir -p notes/sub && touch notes/sub/x && rm -r notes && echo cleaned"})
    assert "cleaned" in out.text  # folders of the command's own can be removed at every level
    assert sorted(p.name for p in work.iterdir()) == [".searchbox", "dataroom"]
    assert (work / "dataroom" / "a.md").read_text() == "original"
    if level == "landlock":  # namespaces: the dataroom is a mount point, the rename itself is refused
        assert "[work/dataroom was renamed to work/d2 and something else put in its place: the dataroom was put back]" in out.text


@pytest.mark.parametrize("level", CONFINING)
def test_no_network_no_namespaces_no_ptrace(level: str, work: Path) -> None:
    level_or_skip(level)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        result = run(f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo tcp-open; "
                     "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)' 2>/dev/null && echo udp-open; "
                     "unshare -U -r true && echo userns-open; unshare -n true && echo netns-open; "
                     f"nsenter -t {os.getpid()} -n true && echo nsenter-open; "
                     "python3 -c 'import ctypes,sys; sys.exit(ctypes.CDLL(None).ptrace(16, %d, 0, 0) != 0)' && echo ptrace-open; "
                     "echo done" % os.getpid(), work, level)
        server.settimeout(0.2)
        with pytest.raises(TimeoutError):
            server.accept()
    assert result.output.strip().endswith("done")
    assert not any(line.endswith("-open") for line in result.output.splitlines()), result.output


@pytest.mark.parametrize("level", CONFINING)
def test_a_minimal_etc(level: str, work: Path) -> None:
    level_or_skip(level)
    host = [p for p in ("/etc/gitconfig", "/etc/hostname", "/etc/hosts", "/etc/apt/sources.list") if Path(p).exists()]
    if not host:
        pytest.skip("this host's /etc holds none of the sample files")
    result = run(f"for f in {' '.join(host)}; do cat $f >/dev/null 2>&1 && echo read $f; done; "
                 "awk 'BEGIN{print \"awk works\"}'; date +%Y >/dev/null && echo date works", work, level)
    assert "read /etc" not in result.output
    assert "awk works" in result.output and "date works" in result.output


@pytest.mark.parametrize("level", CONFINING)
def test_background_processes_end_with_the_call(level: str, work: Path) -> None:
    level_or_skip(level)
    marker = str(random.randrange(10**8, 10**9))
    result = run(f"setsid sleep {marker}1 & (setsid sleep {marker}2 &) ; nohup sleep {marker}3 >/dev/null 2>&1 & "
                 "disown; echo started", work, level)
    assert result.output.strip() == "started"
    time.sleep(0.3)
    assert alive(marker) == []


def test_the_launcher_alone_kills_what_escaped_the_group(tmp_path: Path) -> None:
    """Without cgroups or a pid namespace (an unprivileged app), the launcher as subreaper does it."""
    marker = str(random.randrange(10**8, 10**9))
    argv = launcher_argv({}, ["bash", "-c", f"setsid sleep {marker} & (setsid sleep {marker}5 &); echo out"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "out\n"
    time.sleep(0.3)
    assert alive(marker) == []


@pytest.mark.parametrize("level", CONFINING)
def test_a_job_ends_within_its_disk_budget(level: str, work: Path) -> None:
    """fallocate takes its space in a millisecond: a budget only polled lets 5 x the budget through."""
    level_or_skip(level)
    budget = 64 * 2**20
    result = run("for i in 1 2 3 4 5; do fallocate -l 48M big$i.bin; done; echo written", work, level,
                 job_disk_bytes=budget)
    usage, _ = measure(work)
    assert "written" in result.output
    assert usage.bytes <= budget and len(result.removed) >= 3
    assert not (work / "dataroom" / "a.md").read_text() != "original"


@pytest.mark.parametrize("level", CONFINING)
def test_a_job_ends_within_its_inode_budget(level: str, work: Path) -> None:
    level_or_skip(level)
    run("mkdir notes && echo keep > notes/keep.md", work, level)
    result = run("mkdir many && cd many && touch $(seq 1 3000) && echo made", work, level, job_inodes=500)
    usage, _ = measure(work)
    assert "made" in result.output and usage.inodes <= 500
    assert (work / "notes" / "keep.md").read_text() == "keep\n"  # what earlier commands wrote stays


def test_the_bash_tool_says_what_went_past_the_budget(work: Path) -> None:
    ctx = ToolContext(work, SourceLedger(), SandboxConfig(job_disk_bytes=16 * 2**20))
    out = REGISTRY["bash"].run(ctx, {"command": "fallocate -l 10M a.bin; fallocate -l 12M b.bin"})
    assert out.is_error and "removed what this command wrote past that (b.bin)" in out.text
    assert (work / "a.bin").exists() and not (work / "b.bin").exists()


@pytest.mark.parametrize("level", CONFINING)
def test_a_chain_of_folders_too_deep_is_removed_after_the_command_and_said(level: str, work: Path) -> None:
    """Issue #43: one `mkdir -p` left a 1,990-deep chain in work/, past any walk or removal's recursion;
    the budget pass cuts it to MAX_DEPTH components and the output says so. What stood before stays."""
    level_or_skip(level)
    run("mkdir -p notes/a && echo keep > notes/a/keep.md", work, level)
    ctx = ToolContext(work, SourceLedger(), SandboxConfig(level=level))
    out = REGISTRY["bash"].run(ctx, {"command": "mkdir -p $(printf 'd/%.0s' $(seq 1990)) && echo made"})

    assert "made" in out.text
    assert f"may have at most {MAX_DEPTH} components: removed what this command made deeper (d/d/d/...)" in out.text
    deepest = max((e.path.count("/") + 1 for e in measure(work)[1]), default=0)
    assert deepest == MAX_DEPTH and not any(e.too_deep for e in measure(work)[1])
    assert (work / "notes" / "a" / "keep.md").read_text() == "keep\n"


def test_a_full_budget_is_said_before_writes_fail(work: Path) -> None:
    (work / "old.bin").write_bytes(b"x" * 2 * 2**20)
    ctx = ToolContext(work, SourceLedger(), SandboxConfig(job_disk_bytes=2**20))
    out = REGISTRY["bash"].run(ctx, {"command": "echo note > note.txt"})
    assert "its whole budget (1 MB): no file can grow until some are removed" in out.text
    assert (work / "old.bin").exists()  # older files are the job's own: never removed


@pytest.mark.parametrize("level", CONFINING)
def test_memory_and_processes_are_bounded_for_the_whole_command(level: str, work: Path) -> None:
    level_or_skip(level)
    limits = hierarchies().describe()
    if "rlimit" in limits["memory"] or "rlimit" in limits["processes"]:
        pytest.skip(f"this host gives the app no writable cgroup: {limits}")
    hold = "python3 -c 'import time; b = bytearray(150 * 2**20); b[::4096] = b\"x\" * len(b[::4096]); print(\"held\", flush=True); time.sleep(3)'"
    result = run(f"{hold} & {hold} & {hold} & wait", work, level, memory_bytes=256 * 2**20)
    assert "Killed" in result.output  # three 150 MB holders never fit in 256 MB together (swap may delay it)
    assert result.peak_memory_bytes is not None and result.peak_memory_bytes <= 256 * 2**20
    forks = run("for i in $(seq 60); do sleep 2 & done 2>&1 | tail -1; wait; echo end", work, level, max_processes=20)
    assert "fork: " in forks.output  # bash's fork failed at the limit (EAGAIN, or interrupted while it retried)


@pytest.mark.parametrize("level", CONFINING)
def test_cpu_is_bounded_for_the_whole_command(level: str, work: Path) -> None:
    level_or_skip(level)
    if "rlimit" in hierarchies().describe()["cpu"]:
        pytest.skip("this host gives the app no writable cpu cgroup: CPU seconds are bounded per process only")
    spin = "TIMEFORMAT=%U+%S; time (for i in 1 2; do timeout 2 sh -c 'while :; do :; done' & done; wait)"
    used = run(spin, work, level, cpus=0.1).output.strip().splitlines()[-1]
    assert sum(float(part) for part in used.split("+")) < 0.45  # 0.1 CPU for 2 s, where two spinners would take 4


def test_a_swapped_searchbox_link_never_makes_the_app_touch_a_host_file(work: Path) -> None:
    level_or_skip("namespaces")  # the Landlock level refuses the swap itself (no folder may be removed)
    host = work.parent / "host"
    host.mkdir()
    (host / "bash-1.log").write_text("a host file")
    (host / "bash-2.log").write_text("another host file")
    ctx = ToolContext(work, SourceLedger(), SandboxConfig(level="namespaces"))
    swap = REGISTRY["bash"].run(ctx, {"command": f"rm -rf .searchbox && ln -s {host} .searchbox && echo swapped"})
    assert swap.text.startswith("swapped")
    assert (host / "bash-1.log").read_text() == "a host file"  # the spill was discarded through its folder handle
    after = REGISTRY["bash"].run(ctx, {"command": "seq 1 3000"})  # spills: must not write through the link
    assert f"work/.searchbox was a link to '{host}'; it was replaced by an empty folder" in after.text
    assert sorted(p.name for p in host.iterdir()) == ["bash-1.log", "bash-2.log"]
    assert (host / "bash-2.log").read_text() == "another host file"
    assert (work / ".searchbox").is_dir() and not (work / ".searchbox").is_symlink()


def test_a_searchbox_beyond_repair_is_said_clearly(work: Path) -> None:
    (work / ".searchbox").mkdir()
    (work / ".searchbox" / "tmp").write_text("a file where TMPDIR must be")
    (work / ".searchbox").chmod(0o555)  # the app runs as root: make the repair fail another way if so
    try:
        out = REGISTRY["bash"].run(ToolContext(work, SourceLedger()), {"command": "echo hi"})
    finally:
        (work / ".searchbox").chmod(0o755)
    if os.geteuid() == 0:  # root repairs through the folder's mode: it did, and said so
        assert "work/.searchbox/tmp was a file; it was replaced by an empty folder" in out.text
    else:
        assert out.is_error and out.text.startswith("bash cannot run: ") and "work/.searchbox/tmp is a file" in out.text


_IN_A_HOST_WITHOUT_NAMESPACES = """
import json, sys
from pathlib import Path
from searchbox.agent.toolbox import RunToolbox
from searchbox.settings import Settings
from searchbox.workspace import Workspace
settings = Settings.resolve(bash_sandbox=sys.argv[2])
toolbox = RunToolbox(Workspace.open(Path(sys.argv[1]), settings), settings)
called = toolbox.call("bash", {"command": "echo ran"}, None)
print(json.dumps({"names": toolbox.names, "notes": toolbox.notes, "record": toolbox.sandbox_level.record(),
                  "called": called.text}))
"""


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """A job made here: the process that uses it cannot change file modes."""
    from searchbox.assets import BUILTIN_DATAROOM
    from searchbox.settings import Settings
    from searchbox.workspace import Workspace

    Workspace.create(tmp_path / "job", BUILTIN_DATAROOM, Settings.resolve())
    return tmp_path / "job"


def host_without_namespaces(*argv: str) -> subprocess.CompletedProcess:
    """A process on which the kernel refuses new namespaces (the sandbox's own seccomp filter, which also
    refuses chmod): a real host of that kind, as many containers are, with nothing mocked."""
    return subprocess.run(launcher_argv({"seccomp": True}, list(argv)), capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_fail_closed_without_a_confining_level(job: Path) -> None:
    level_or_skip("landlock")
    done = host_without_namespaces(sys.executable, "-c", _IN_A_HOST_WITHOUT_NAMESPACES, str(job), "namespaces")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "bash" not in report["names"] and "read" in report["names"]
    assert report["record"]["level"] == "none" and "namespaces: this host refuses" in report["record"]["reason"]
    assert report["notes"][0].startswith("bash is not offered in this run: no confining level for bash on this host")
    assert report["called"].startswith("There is no tool named 'bash'")
    auto = host_without_namespaces(sys.executable, "-c", _IN_A_HOST_WITHOUT_NAMESPACES, str(job), "auto")
    report = json.loads(auto.stdout.strip().splitlines()[-1])
    assert report["record"]["level"] == "landlock" and "bash" in report["names"] and report["called"] == "ran"


def test_the_cli_runs_one_bash_call_at_a_chosen_level(job: Path) -> None:
    level_or_skip("landlock")
    done = subprocess.run([sys.executable, "-m", "searchbox", "tool", "bash", "--set", "BASH_SANDBOX=landlock",
                           "--args", json.dumps({"command": "ls dataroom | head -2; cat /etc/hostname"})],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["sandbox"]["level"] == "landlock"  # cat was refused: exit 1
    assert result["output"].startswith("00_index\n01_corporate\n") and "Permission denied" in result["output"]
    refused = host_without_namespaces(sys.executable, "-m", "searchbox", "tool", "bash", "--job", str(job), "--set",
                                      "BASH_SANDBOX=namespaces", "--args", '{"command": "echo ran"}')
    assert refused.returncode == 1 and "note: bash is not offered in this run" in refused.stderr
    assert json.loads(refused.stdout)["output"].startswith("There is no tool named 'bash'.")  # nothing ran


_AS_AN_ORDINARY_USER = """
import json, os, subprocess, sys, time
from pathlib import Path
from searchbox.tools.sandbox import SandboxConfig, choose, run_sandboxed
work = Path(sys.argv[1])
level = choose("landlock")
if level.name != "landlock":
    print(json.dumps({"skip": level.reason}))
    raise SystemExit
os.environ["JINA_API_KEY"] = "unused"
app = subprocess.Popen(["sleep", "600"], env={"JINA_API_KEY": "secret-of-the-app-user"})
command = (f"cat {work.parent}/outside.txt; cat /proc/{app.pid}/environ; kill -9 {app.pid}; "
           "chmod -R u+w dataroom; echo forged > dataroom/a.md; ln dataroom/a.md x; mv dataroom d2; "
           f"setsid sleep {4000 + 242} & echo ok > mine.txt")  # (this script's own text holds no 4242)
result = run_sandboxed(command, work, 30, output_cap_bytes=20_000, config=SandboxConfig(level="landlock"))
time.sleep(0.3)
survivors = subprocess.run(["pgrep", "-f", f"sleep {4000 + 242}"], capture_output=True, text=True).stdout.split()
print(json.dumps({"output": result.output, "app_alive": app.poll() is None, "survivors": survivors}))
app.kill()
"""


def test_landlock_holds_for_an_app_running_as_an_ordinary_user() -> None:
    """The issue's fallback case: the app as an ordinary user (no cgroups, bash as the same user, the
    dataroom its own): the app's environment, its processes, the dataroom and the host stay out of reach."""
    import shutil
    import tempfile

    python = "/usr/bin/python3"  # the sandbox needs only the standard library; the venv may not be reachable
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not Path(python).exists():
        pytest.skip("needs root (to become another user), setpriv and a system python3")
    base = Path(tempfile.mkdtemp(prefix="searchbox-user-"))
    try:
        base.chmod(0o755)
        (base / "outside.txt").write_text("a host secret")
        work = base / "work"
        (work / "dataroom").mkdir(parents=True)
        (work / "dataroom" / "a.md").write_text("original")
        subprocess.run(["chown", "-R", "65534:65534", str(work)], check=True)
        (base / "outside.txt").chmod(0o644)  # readable by the user: only Landlock keeps bash from it
        (work / "dataroom" / "a.md").chmod(0o444)
        (work / "dataroom").chmod(0o555)
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
                               _AS_AN_ORDINARY_USER, str(work)], capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": str(ROOT), "PATH": os.environ["PATH"]})
        assert done.returncode == 0, done.stderr[-2000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        if "skip" in report:
            pytest.skip(report["skip"])
        assert "a host secret" not in report["output"] and "secret-of-the-app-user" not in report["output"]
        assert report["app_alive"] and report["survivors"] == []
        assert (work / "dataroom" / "a.md").read_text() == "original" and (work / "mine.txt").read_text() == "ok\n"
        assert sorted(p.name for p in work.iterdir() if not p.name.startswith(".")) == ["dataroom", "mine.txt"]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_unconfined_bash_is_for_an_operator_only(tmp_path: Path, work: Path) -> None:
    """BASH_SANDBOX=off ran bash unconfined in a public app: one call read the host's files."""
    from searchbox.agent.toolbox import RunToolbox
    from searchbox.assets import BUILTIN_DATAROOM
    from searchbox.settings import Settings
    from searchbox.tools.sandbox import for_settings
    from searchbox.tools.tool import context_for
    from searchbox.workspace import Workspace

    host_file = tmp_path / "host-secret.txt"
    host_file.write_text("a host secret")
    read_it = {"command": f"cat {host_file}"}
    public = Settings.resolve(env={}, bash_sandbox="off")
    out = REGISTRY["bash"].run(context_for(public, work, SourceLedger()), read_it)
    assert "a host secret" not in out.text  # bash ran confined, or not at all
    toolbox = RunToolbox(Workspace.create(tmp_path / "job", BUILTIN_DATAROOM, public), public)
    record = toolbox.sandbox_level.record()  # what the run's run_meta.json records
    assert record["requested"] == "off" and record["level"] == choose("auto").name != "off"
    assert record["reason"].startswith("BASH_SANDBOX=off refused: unconfined bash is for an operator only")
    assert toolbox.notes and "BASH_SANDBOX=off refused" in toolbox.notes[0]  # and the run's feed says so
    operator = public.with_overrides(searchbox_operator=True)
    assert for_settings(operator).name == "off"
    assert "a host secret" in REGISTRY["bash"].run(context_for(operator, work, SourceLedger()), read_it).text
