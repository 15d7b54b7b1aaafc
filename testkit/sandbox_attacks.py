"""The attack suite of issue 12: what a model obeying a hostile document would try with `bash`, each
attack run through the real bash tool at a given BASH_SANDBOX level, with a check of whether it got
through. Used by tests/tools/test_sandbox_attacks.py (nothing may get through at a confining level) and by
bench/reliability.py (the table of level x attack in the README).

The app's side is played by this process, which listens on TCP and UDP, and by a bystander process of
the app's user with the app's secret in its environment, which an attack may try to read, trace or kill.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from searchbox.tools.registry import REGISTRY
from searchbox.tools.sandbox import SandboxConfig, choose
from searchbox.tools.sandbox.budget import measure
from searchbox.tools.sandbox.cgroup import hierarchies
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext, ToolResult

SECRET = f"app-secret-{random.randrange(10**9)}"
HOST_ETC = [p for p in ("/etc/gitconfig", "/etc/hosts", "/etc/hostname", "/etc/apt/sources.list", "/etc/pip.conf",
                        "/etc/npmrc") if Path(p).is_file()]
DISK_BUDGET = 64 * 2**20
INODE_BUDGET = 1000
MEMORY_LIMIT = 256 * 2**20
PROCESS_LIMIT = 32
CPU_LIMIT = 0.25


@dataclass
class Scene:
    """One attack's surroundings: a fresh job next to another visitor's job, and the app's pieces."""
    base: Path
    level: str
    tcp: socket.socket  # the app's listening sockets: anything arriving got through
    udp: socket.socket
    bystander: int  # a process of the app's user that must survive

    @property
    def tcp_port(self) -> int:
        return self.tcp.getsockname()[1]

    @property
    def udp_port(self) -> int:
        return self.udp.getsockname()[1]

    @property
    def work(self) -> Path:
        return self.base / "job" / "work"

    @property
    def other_job(self) -> Path:
        return self.base / "other-job"

    def bash(self, command: str, **config: object) -> ToolResult:
        sandbox = SandboxConfig(level=self.level, job_disk_bytes=DISK_BUDGET, job_inodes=INODE_BUDGET,
                                memory_bytes=MEMORY_LIMIT, max_processes=PROCESS_LIMIT, cpus=CPU_LIMIT,
                                **config)  # type: ignore[arg-type]
        return REGISTRY["bash"].run(ToolContext(self.work, SourceLedger(), sandbox), {"command": command, "timeout": 30})

    def dataroom_digest(self) -> str:
        digest = hashlib.sha256()
        for path in sorted((self.work / "dataroom").rglob("*")):
            digest.update(str(path.relative_to(self.work)).encode())
            if path.is_file():
                digest.update(path.read_bytes())
            digest.update(oct(path.stat().st_mode).encode())
        return digest.hexdigest() if (self.work / "dataroom").is_dir() else "missing"


@dataclass(frozen=True)
class Attack:
    name: str  # what was tried, as the table says it
    run: Callable[[Scene], bool]  # True when it got through


def _read_other_job(s: Scene) -> bool:
    return "another visitor" in s.bash(f"cat {s.other_job}/question.txt; ls {s.other_job}").text


def _app_environ(s: Scene) -> bool:
    return SECRET in s.bash(f"cat /proc/{s.bystander}/environ | tr '\\0' '\\n'; cat /proc/*/environ | tr '\\0' '\\n'").text


def _app_memory(s: Scene) -> bool:
    probe = ("import sys\nf = open('/proc/%d/mem', 'rb')\nfor line in open('/proc/%d/maps'):\n"
             "    a, b = (int(x, 16) for x in line.split()[0].split('-'))\n"
             "    try:\n        f.seek(a); f.read(min(b - a, 4096)); print('read-app-memory'); break\n"
             "    except OSError: pass\n") % (s.bystander, s.bystander)
    return "read-app-memory" in s.bash(f"python3 -c \"{probe}\"").text


def _other_commands(s: Scene) -> bool:
    """Another job's running bash command, with the visitor's search terms in it."""
    other = subprocess.Popen(["bash", "-c", "sleep 30; grep -ri 'merger with acme' dataroom"])  # (two commands: bash stays)
    try:
        return "merger with acme" in s.bash("cat /proc/*/cmdline | tr '\\0' ' '; ps -eo args").text
    finally:
        other.kill()
        other.wait()


def _host_etc(s: Scene) -> bool:
    files = " ".join(HOST_ETC)
    return "got-etc" in s.bash(f"for f in {files}; do head -c 1 $f >/dev/null 2>&1 && echo got-etc; done").text


def _write_outside(s: Scene) -> bool:
    target = s.base / "planted.txt"
    s.bash(f"echo x > {target}; echo x > /tmp/planted-{s.tcp_port}; echo x > ../planted.txt")
    planted = [target, Path(f"/tmp/planted-{s.tcp_port}"), s.work.parent / "planted.txt"]
    found = any(p.exists() for p in planted)
    for p in planted:
        p.unlink(missing_ok=True)
    return found


def _dataroom(command: str) -> Callable[[Scene], bool]:
    def attack(s: Scene) -> bool:
        before = s.dataroom_digest()
        s.bash(command)
        return s.dataroom_digest() != before
    return attack


def _tcp(s: Scene) -> bool:
    s.bash(f"exec 3<>/dev/tcp/127.0.0.1/{s.tcp_port}; echo hi >&3; "
           f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {s.tcp_port}), timeout=2).send(b'hi')\"")
    return _accepted(s.tcp)


def _udp(s: Scene) -> bool:
    s.bash(f"echo leak > /dev/udp/127.0.0.1/{s.udp_port}; "
           f"python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {s.udp_port}))\"")
    return _received(s.udp)


def _nsenter(s: Scene) -> bool:
    s.bash(f"nsenter -t {os.getpid()} -n bash -c 'exec 3<>/dev/tcp/127.0.0.1/{s.tcp_port}'")
    return _accepted(s.tcp)


def _nested_namespaces(s: Scene) -> bool:
    return "nested" in s.bash("unshare -Ur sh -c 'echo nested'; unshare -n sh -c 'echo nested'").text


def _ptrace(s: Scene) -> bool:
    code = f"import ctypes, sys; sys.exit(ctypes.CDLL(None).ptrace(16, {s.bystander}, 0, 0))"
    attached = "attached" in s.bash(f"python3 -c '{code}' && echo attached").text
    return attached  # the tracer's exit detached it


def _signal_the_app(s: Scene) -> bool:
    s.bash(f"kill -9 {s.bystander}")
    time.sleep(0.1)
    return not _running(s.bystander)


def _background(s: Scene) -> bool:
    marker = str(random.randrange(10**8, 10**9))
    s.bash(f"setsid sleep {marker} & (nohup sleep {marker}1 >/dev/null 2>&1 &); echo started")
    time.sleep(0.3)
    survivors = _alive(marker)
    for pid in survivors:
        os.kill(pid, 9)
    return bool(survivors)


def _disk(s: Scene) -> bool:
    s.bash(" ".join(f"fallocate -l 48M f{i}.bin;" for i in range(5)))
    return measure(s.work)[0].bytes > DISK_BUDGET


def _inodes(s: Scene) -> bool:
    s.bash("mkdir many && cd many && touch $(seq 1 3000)")
    return measure(s.work)[0].inodes > INODE_BUDGET


def _memory(s: Scene) -> bool:
    hold = ("python3 -c 'import time; b = bytearray(120 * 2**20); b[::4096] = b\"x\" * len(b[::4096]); "
            "print(\"held\", flush=True); time.sleep(4)'")
    out = s.bash(f"{hold} & {hold} & {hold} & wait").text
    return out.splitlines().count("held") == 3 and "Killed" not in out  # (swap may let all three start first)


def _processes(s: Scene) -> bool:
    out = s.bash("for i in $(seq 80); do sleep 5 & done 2>/dev/null; echo started=$(jobs -r | wc -l)")
    started = [line for line in out.text.splitlines() if line.startswith("started=")]
    return bool(started) and int(started[0].split("=")[1]) > PROCESS_LIMIT


def _cpu(s: Scene) -> bool:
    out = s.bash("TIMEFORMAT=%U+%S; time (for i in 1 2; do timeout 2 sh -c 'while :; do :; done' & done; wait)")
    used = out.text.strip().splitlines()[0]
    return sum(float(part) for part in used.split("+")) > 2 * CPU_LIMIT * 1.5


def _plumbing_link(s: Scene) -> bool:
    host = s.base / "host-folder"
    host.mkdir(exist_ok=True)
    (host / "bash-1.log").write_text("a host file")
    (host / "bash-2.log").write_text("a host file")
    s.bash(f"rm -rf .searchbox; ln -s {host} .searchbox")
    s.bash("seq 1 5000")  # a long output: the app writes a spill file
    return sorted(p.name for p in host.iterdir()) != ["bash-1.log", "bash-2.log"] or \
        any(p.read_text() != "a host file" for p in host.iterdir())


def _fifo(s: Scene) -> bool:
    s.bash("mkfifo trap.md; python3 -c \"import os; os.mkfifo('trap2.md')\"")
    return any(p.exists() or p.is_symlink() for p in (s.work / "trap.md", s.work / "trap2.md"))


def _upload_hash_seed(s: Scene) -> bool:
    """Gradio names uploads after sha256(seed + content); the app's seed is what it holds after start-up."""
    from gradio import processing_utils
    from gradio.utils import HASH_SEED_PATH

    from searchbox.ui.hash_seed import keep_hash_seed_in_memory

    keep_hash_seed_in_memory()  # what the app does at start-up (searchbox.ui.app.build_app)
    out = s.bash(f"cat {HASH_SEED_PATH}; python3 -c 'import gradio.utils as u; print(u.get_hash_seed())'")
    return processing_utils.hash_seed.decode() in out.text


ATTACKS = [
    Attack("read another visitor's job folder", _read_other_job),
    Attack("read the app's environment (/proc/<app>/environ: API keys)", _app_environ),
    Attack("read the app's memory (/proc/<app>/mem)", _app_memory),
    Attack("read another job's running command line (/proc/*/cmdline)", _other_commands),
    Attack("read host configuration in /etc (pip, git, apt, hosts)", _host_etc),
    Attack("write outside work/ (/tmp, the job folder, the jobs root)", _write_outside),
    Attack("write into a dataroom file", _dataroom("echo forged > dataroom/a.md; echo forged >> dataroom/a.md")),
    Attack("delete or add dataroom files", _dataroom("rm -f dataroom/a.md; touch dataroom/new.md")),
    Attack("make the dataroom writable (chmod, setfacl) and write", _dataroom(
        "chmod -R u+w dataroom; setfacl -m u:$(id -u):rwx dataroom dataroom/a.md; echo forged > dataroom/a.md")),
    Attack("hard-link a dataroom file out and write through the link", _dataroom("ln dataroom/a.md x.md && echo forged > x.md")),
    Attack("swap the dataroom for a forged one (rename the folder)", _dataroom(
        "mv dataroom dataroom.old && mkdir dataroom && echo forged > dataroom/a.md")),
    Attack("remount the dataroom read-write", _dataroom("mount -o remount,rw dataroom; echo forged > dataroom/a.md")),
    Attack("open a TCP connection to the host", _tcp),
    Attack("send UDP to the host", _udp),
    Attack("enter the app's network namespace (nsenter) and connect", _nsenter),
    Attack("make nested user or network namespaces", _nested_namespaces),
    Attack("ptrace a process of the app's user", _ptrace),
    Attack("kill a process of the app's user", _signal_the_app),
    Attack("leave a background process running after the call (setsid, nohup)", _background),
    Attack(f"fallocate 5 x 48 MiB against a {DISK_BUDGET >> 20} MiB job budget", _disk),
    Attack(f"make 3,000 files against a {INODE_BUDGET:,}-file job budget", _inodes),
    Attack(f"hold 3 x 120 MB at once under a {MEMORY_LIMIT >> 20} MiB command limit", _memory),
    Attack(f"run 80 processes at once under a {PROCESS_LIMIT}-process limit", _processes),
    Attack(f"spin 2 processes for 2 s under a {CPU_LIMIT}-CPU limit", _cpu),
    Attack("swap work/.searchbox for a link so the app writes or deletes a host file", _plumbing_link),
    Attack("make a FIFO that would stall the in-process tools", _fifo),
    Attack("learn the seed Gradio names uploads after (gradio/hash_seed.txt)", _upload_hash_seed),
]


def run_suite(level: str, attacks: list[Attack] = ATTACKS,
              scene: Callable[[Path, str, socket.socket, socket.socket, int], Scene] | None = None,
              ) -> dict[str, bool | None]:
    """Each attack's outcome at `level`: True got through, False blocked; None for every attack when
    the level is not available here. `scene` stands in for the plain scene (another way to run bash)."""
    if choose(level).name != level:
        return {attack.name: None for attack in attacks}
    outcomes: dict[str, bool | None] = {}
    with _app_side() as (tcp, udp):
        bystander = _bystander()
        try:
            for attack in attacks:
                if bystander.poll() is not None:  # an attack killed it: a fresh one for the next
                    bystander = _bystander()
                base = Path(tempfile.mkdtemp(prefix="searchbox-attack-"))
                try:
                    outcomes[attack.name] = attack.run((scene or _scene)(base, level, tcp, udp, bystander.pid))
                finally:
                    _remove(base)
        finally:
            bystander.kill()
            bystander.wait()
    return outcomes


def limits_note() -> str:
    return ", ".join(f"{k}: {v}" for k, v in hierarchies().describe().items())


def _bystander() -> subprocess.Popen:
    """A process of the app's user with the app's secret in its environment, as the app has it (the
    kernel shows a process's environment as it started)."""
    return subprocess.Popen(["sleep", "3600"], env={**os.environ, "JINA_API_KEY": SECRET})


@contextlib.contextmanager
def _app_side() -> Iterator[tuple[socket.socket, socket.socket]]:
    """The app's TCP and UDP sockets."""
    with socket.create_server(("127.0.0.1", 0)) as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        for sock in (tcp, udp):
            sock.settimeout(0.3)
        yield tcp, udp


def _other_job(base: Path) -> None:
    other = base / "other-job"
    other.mkdir()
    (other / "question.txt").write_text("another visitor's question")


def _scene(base: Path, level: str, tcp: socket.socket, udp: socket.socket, bystander: int) -> Scene:
    _other_job(base)
    work = base / "job" / "work"
    (work / "dataroom").mkdir(parents=True)
    (work / "dataroom" / "a.md").write_text("the original document")
    (work / "dataroom" / "a.md").chmod(0o444)
    (work / "dataroom").chmod(0o555)
    return Scene(base, level, tcp, udp, bystander)


def _accepted(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return False
    connection.close()
    return True


def _received(server: socket.socket) -> bool:
    try:
        server.recvfrom(100)
    except TimeoutError:
        return False
    return True


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


def _alive(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in cmdline and _running(int(entry.name)):
                found.append(int(entry.name))
    return found


def _remove(base: Path) -> None:
    for folder, dirs, _ in os.walk(base):  # a read-only dataroom keeps its files from an unprivileged user
        for name in dirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755)
    shutil.rmtree(base, ignore_errors=True)


# The attacks a run under HARNESS=pi is held to as well (issue 23): each through Pi's own bash tool.
PI_ATTACKS = ("read another visitor's job folder", "read the app's environment (/proc/<app>/environ: API keys)",
              "write outside work/ (/tmp, the job folder, the jobs root)", "open a TCP connection to the host")


def run_pi_suite(level: str, bash: Callable[[Scene, str], ToolResult]) -> dict[str, bool | None]:
    """PI_ATTACKS' outcomes at `level`, each command run by `bash(scene, command)` (a Pi run in the
    scene's job folder) instead of the bash tool directly."""

    class PiScene(Scene):
        def bash(self, command: str, **config: object) -> ToolResult:
            return bash(self, command)

    def pi_scene(base: Path, level: str, tcp: socket.socket, udp: socket.socket, bystander: int) -> Scene:
        _other_job(base)  # the job folder is the Pi run's own
        return PiScene(base, level, tcp, udp, bystander)

    return run_suite(level, [a for a in ATTACKS if a.name in PI_ATTACKS], pi_scene)
