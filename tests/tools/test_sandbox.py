"""The bash sandbox with real processes: timeouts kill the whole group, output is capped and spilled,
secrets stay out, the network is cut where the host allows it, and resource limits bite."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchbox.tools.builtin.bash_programs import programs_in
from searchbox.tools.registry import REGISTRY
from searchbox.tools.sandbox import SandboxConfig, airgap_level, run_sandboxed
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext

CAP = 100 * 1024


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    return work


def run(command: str, work: Path, timeout: float = 10, **kwargs: object):
    return run_sandboxed(command, work, timeout, output_cap_bytes=CAP, **kwargs)


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                status = (entry / "status").read_text()
            except OSError:
                continue
            if marker in cmdline and "State:\tZ" not in status:
                found.append(int(entry.name))
    return found


def test_output_and_exit_code(work: Path) -> None:
    result = run("echo out; echo err >&2; exit 7", work)
    assert (result.exit_code, result.timed_out, result.truncated_bytes) == (7, False, 0)
    assert result.output.splitlines() == ["out", "err"] and result.total_lines == 2
    assert result.airgap == airgap_level() in ("netns", "none")


def test_long_output_keeps_the_tail_and_spills_everything(work: Path) -> None:
    result = run("yes 'some text' | head -n 500000", work, spill=True)  # 5 MB
    spill = work / ".searchbox" / "bash-1.log"
    assert result.spill_file == ".searchbox/bash-1.log"
    assert result.exit_code == 0 and result.total_lines == 500_000
    assert len(result.output.encode()) <= CAP and result.output.endswith("some text\n")
    assert result.truncated_bytes == 500_000 * 10 - CAP
    assert spill.stat().st_size == 500_000 * 10


def test_bash_tool_keeps_the_tail_and_names_the_spill_file(work: Path) -> None:
    ctx = ToolContext(work, SourceLedger())
    out = REGISTRY["bash"].run(ctx, {"command": "seq 1 5000"})
    lines = out.text.splitlines()
    assert not out.is_error and lines[0] == "3001" and lines[-3] == "5000"
    assert lines[-1] == "[Showing lines 3001-5000 of 5000. Full output: .searchbox/bash-1.log]"
    assert (work / ".searchbox" / "bash-1.log").read_text() == "".join(f"{n}\n" for n in range(1, 5001))
    assert out.details["spill_file"] == ".searchbox/bash-1.log" and out.details["programs"] == ["seq"]
    short = REGISTRY["bash"].run(ctx, {"command": "cd dataroom && pwd | grep -c work; false"})
    assert short.is_error and short.text == "1\n\nCommand exited with code 1"
    assert short.details["programs"] == ["cd", "pwd", "grep", "false"] and short.details["exit_code"] == 1
    assert sorted(p.name for p in (work / ".searchbox").glob("*.log")) == ["bash-1.log"]  # no spill when short
    assert REGISTRY["bash"].run(ctx, {"command": "true"}).text == "(no output)"


def test_timeout_kills_the_whole_group(work: Path) -> None:
    marker = str(random.randrange(10**8, 10**9))
    started = time.monotonic()
    result = run(f"echo started; sleep {marker}1 & sleep {marker}2", work, timeout=1)
    assert result.timed_out and result.exit_code is None and result.output == "started\n"
    assert time.monotonic() - started < 3
    time.sleep(0.2)
    assert processes_with(marker) == []


def test_background_children_do_not_outlive_the_command(work: Path) -> None:
    marker = str(random.randrange(10**8, 10**9))
    result = run(f"(sleep {marker} &) ; echo done", work)
    assert result.exit_code == 0 and result.output == "done\n" and not result.timed_out
    time.sleep(0.2)
    assert processes_with(marker) == []


def test_bash_tool_reports_a_timeout(work: Path) -> None:
    out = REGISTRY["bash"].run(ToolContext(work, SourceLedger()), {"command": "sleep 30", "timeout": 1})
    assert out.is_error and out.text == "Command timed out after 1 seconds" and out.details["timed_out"]


def test_environment_holds_no_secrets(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"JINA_API_KEY": "jina-secret-1", "HF_TOKEN": "hf-secret-2", "OPENAI_API_KEY": "sk-secret-3",
               "MY_SERVICE_SECRET": "secret-4"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    result = run("env; command -v rg python", work)
    env = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
    assert set(env) <= {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "PWD", "SHLVL", "_", "OLDPWD"}
    assert not any(value in result.output for value in secrets.values())
    assert env["HOME"] == str(work.resolve()) and env["TMPDIR"] == str(work.resolve() / ".searchbox" / "tmp")
    assert env["PATH"].startswith(os.path.dirname(sys.executable) + ":")
    assert f"{os.path.dirname(sys.executable)}/python" in result.output.splitlines()


def test_no_network(work: Path) -> None:
    if airgap_level() == "none":
        pytest.skip("this host allows no network namespace (unshare and bwrap refused): airgap is best effort")
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        reach = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
        control = subprocess.run([sys.executable, "-c", reach], capture_output=True)
        assert control.returncode == 0  # outside the sandbox the server is reachable
        server.accept()[0].close()
        assert run(f"python3 -c \"{reach}\"", work).exit_code != 0
        assert run(f"exec 3<>/dev/tcp/127.0.0.1/{port}", work).exit_code != 0
        server.settimeout(0.1)
        with pytest.raises(TimeoutError):
            server.accept()  # nothing from inside got through


def test_file_size_limit_stops_a_huge_write(work: Path) -> None:
    limit = 1024 * 1024
    result = run("yes | head -c 3000000; head -c 5000000 /dev/zero > big.bin; echo status=$?", work,
                 spill=True, config=SandboxConfig(file_size_bytes=limit))
    spill = work / ".searchbox" / "bash-1.log"
    assert (work / "big.bin").stat().st_size == limit
    assert "status=153" in result.output  # 128 + SIGXFSZ
    assert spill.stat().st_size == limit  # the spill file obeys the same limit


@pytest.mark.parametrize(
    ("command", "programs"),
    [
        ("cat a.md | grep -i foo | head -5", ["cat", "grep", "head"]),
        ('for f in *.md; do wc -l "$f"; done', ["wc"]),
        ("python3 -c 'print(1)'", ["python3"]),
        ("A=1 B=2 /usr/bin/grep x f", ["grep"]),
        ("sudo -u bob env X=1 timeout 5 nohup python x.py", ["python"]),
        ("find . -name '*.md' | xargs -I {} grep -l foo {}", ["find", "xargs", "grep"]),
        ("find . -type f -exec grep -l x {} \\;", ["find", "grep"]),
        ('echo "$(date) `whoami`" && ls $(pwd)', ["echo", "ls", "date", "whoami", "pwd"]),
        ("tr '|' ',' < a > b 2>&1", ["tr"]),
        ("cat <<'EOF' > out.py\nimport os\nEOF\npython3 out.py", ["cat", "python3"]),
        ("echo $((1+2)); (( i++ )); (cd x && ls) || true", ["echo", "cd", "ls", "true"]),
        ("diff <(sort a) <(sort b)", ["diff", "sort"]),
        ("if [[ -f x ]]; then cat x; else echo no; fi", ["cat", "echo"]),
        ("case $x in a|b) echo 1;; *) ls;; esac", ["echo", "ls"]),
        ("ls # | grep x\nwc -l f", ["ls", "wc"]),
        ("grep x a | grep y", ["grep"]),
        ("echo 'unbalanced | grep", ["echo"]),
        ("", []),
    ],
)
def test_programs_in(command: str, programs: list[str]) -> None:
    assert programs_in(command) == programs


def test_bash_cannot_write_into_the_dataroom_even_as_root(tmp_path: Path) -> None:
    from searchbox.tools.sandbox import dataroom_mount_readonly

    if not dataroom_mount_readonly():
        pytest.skip("this host allows no private read-only mount for root")
    (tmp_path / "dataroom").mkdir()
    (tmp_path / "dataroom" / "a.txt").write_text("original")
    result = run_sandboxed("touch dataroom/new; echo changed > dataroom/a.txt; rm -f dataroom/a.txt; echo ok > mine.txt",
                           tmp_path, 10, output_cap_bytes=10_000)
    assert "Read-only file system" in result.output
    assert sorted(p.name for p in (tmp_path / "dataroom").iterdir()) == ["a.txt"]
    assert (tmp_path / "dataroom" / "a.txt").read_text() == "original"
    assert (tmp_path / "mine.txt").read_text() == "ok\n"  # the rest of work/ stays writable


def confined() -> None:
    from searchbox.tools.sandbox import filesystem_level

    if filesystem_level() != "confined":
        pytest.skip("this host allows no mount namespace: bash sees the host's files (recorded as bash_filesystem=host)")


def test_confined_bash_sees_only_work_and_the_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    confined()
    monkeypatch.setenv("JINA_API_KEY", "jina-secret-in-the-app")
    (tmp_path / "other-job.txt").write_text("another job's notes")
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    result = run(f"cat {tmp_path}/other-job.txt; ls {tmp_path}; cat /proc/*/environ; cat /etc/shadow; "
                 f"echo; echo passwd-lines=$(grep -c . /etc/passwd); ls /root {Path.home()}; echo x > /etc/hacked; echo y > /hacked; "
                 "mount -o remount,rw dataroom; touch dataroom/new; echo ok > mine.txt; python3 -c 'print(6*7)'", work)
    assert "another job's notes" not in result.output and "other-job.txt: No such file" in result.output
    assert "jina-secret-in-the-app" not in result.output  # the app's environment is out of sight
    assert "Read-only file system" in result.output
    assert not (work / "dataroom" / "new").exists() and (work / "mine.txt").read_text() == "ok\n"
    assert "42" in result.output.splitlines()  # the app's Python still works inside
    assert "passwd-lines=2" in result.output.splitlines()  # /etc/passwd is a two-line stand-in
    assert not Path("/etc/hacked").exists() and not Path("/hacked").exists()


def test_a_fork_bomb_hits_the_process_limit_and_is_cleaned_up(work: Path) -> None:
    from searchbox.tools.sandbox import filesystem_level

    if os.geteuid() == 0 and filesystem_level() != "confined":
        pytest.skip("root ignores RLIMIT_NPROC and this host allows no switch to an unprivileged user")
    marker = f"bomb{random.randrange(10**9)}"
    result = run(f"b() {{ b | b & }}; b; sleep 3; echo {marker}-alive", work, timeout=8,
                 config=SandboxConfig(extra_processes=64))
    assert "Resource temporarily unavailable" in result.output or "retry" in result.output
    time.sleep(0.5)
    assert processes_with("b | b") == [] and processes_with(marker) == []


def test_a_command_that_fills_the_disk_is_stopped(work: Path) -> None:
    budget = 40 * 2**20
    result = run("for i in $(seq 1000); do head -c 8000000 /dev/zero > f$i.bin; done; echo finished", work, timeout=60,
                 config=SandboxConfig(disk_bytes=budget, file_size_bytes=10 * 2**20))
    written = sum(p.stat().st_size for p in work.glob("f*.bin"))
    assert result.disk_exceeded and result.exit_code is None and "finished" not in result.output
    assert budget < written < 1000 * 8_000_000 // 4  # stopped long before the loop's 8 GB


_AS_NOBODY = """
import json, subprocess, sys
from pathlib import Path
from searchbox.tools.sandbox import choose, run_sandboxed
work = Path(sys.argv[1])
userns = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "--net", "--pid", "--fork", "true"]).returncode == 0
result = run_sandboxed(f"cat {work.parent}/outside.txt; touch dataroom/new; echo ok > mine.txt", work, 20,
                       output_cap_bytes=10_000)
print(json.dumps({"userns": userns, "level": choose("auto").name, "output": result.output}))
"""


def test_an_app_running_unprivileged_gets_the_same_confinement() -> None:
    """The app as an ordinary user (as on a Hugging Face Space): a user namespace stands in for root."""
    import json
    import shutil
    import tempfile

    python = "/usr/bin/python3"
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not Path(python).exists():
        pytest.skip("needs root (to become another user), setpriv and a system python3")
    version = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 11))"], capture_output=True, text=True)
    if version.stdout.strip() != "True":
        pytest.skip("the system python3 is older than 3.11")
    base = Path(tempfile.mkdtemp(prefix="searchbox-nobody-"))
    try:
        base.chmod(0o777)
        (base / "outside.txt").write_text("a host secret")
        work = base / "work"
        (work / "dataroom").mkdir(parents=True)
        (work / "dataroom" / "a.md").write_text("original")
        subprocess.run(["chown", "-R", "65534:65534", str(work)], check=True)
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", _AS_NOBODY,
                               str(work)], capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": os.environ["PATH"]})
        assert done.returncode == 0, done.stderr[-2000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        if not report["userns"]:
            pytest.skip("this host gives unprivileged users no user namespace: bash_filesystem=host")
        assert report["level"] == "namespaces"  # not a fallback to Landlock
        assert "a host secret" not in report["output"] and "Read-only file system" in report["output"]
        assert (work / "mine.txt").read_text() == "ok\n" and sorted(p.name for p in (work / "dataroom").iterdir()) == ["a.md"]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_level_does_not_depend_on_the_apps_path() -> None:
    """Issue #32 item 6: an app started without /usr/sbin on PATH found no pivot_root and silently ran
    bash at landlock; the helpers are looked up by absolute path, so it gets the same level."""
    from searchbox.tools.sandbox.levels import choose

    root = Path(__file__).resolve().parents[2]
    probe = "from searchbox.tools.sandbox.levels import choose; print(choose('auto').name)"

    def level_with_path(path: str) -> str:
        done = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PATH": path})
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    if choose("auto").name != "namespaces":
        pytest.skip(f"the namespace level is not available here: {choose('auto').reason}")
    assert level_with_path("/usr/bin:/bin") == "namespaces"
    assert level_with_path("/nonexistent") == "namespaces"
