"""The app-side attack suite of issue 20: what confined bash can leave in work/ for the unconfined app to
trip over. The sandbox holds (testkit/sandbox_attacks.py); these attacks go through it legitimately (a
link, a sparse file, a renamed folder are all things bash may make in work/) and then wait for the
app's own code to follow, copy, write or load what they left.

Each attack is a whole run of the real loop (agent/run.run_job) with the real bash tool at a given
BASH_SANDBOX level, driven by a scripted model (testkit/fake_model.py) that obeys a hostile document:
it runs the attack's bash commands, then replies with a final answer. Afterwards every surface the app
shows or hands out is gathered as a visitor would get it — the answer panel, the sources, the
ANSWER.md download, the run bundle, the turn snapshots, run_meta.json, the CLI's summary, the score —
and the attack got through when the app's secret or a host file's content is on any of them, a host
file was written or had its mode changed, or the app stalled or loaded far more than an answer's
worth. An attack may also have the job deleted afterwards, as a visitor's Delete or the pruner does.

Used by tests/ui/test_app_attacks.py (nothing may get through at any level this host has).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from testkit.fake_model import FakeChatModel, Said
from searchbox.agent.run import run_job
from searchbox.jobs.bundle import downloads
from searchbox.jobs.job import create_job
from searchbox.records.job_folder import JobFolder
from searchbox.records.removal import remove_job_folder
from searchbox.settings import Settings
from searchbox.tools.sandbox import choose

# The child process that plays the app gets the parent's secret, so both look for the same one.
SECRET = os.environ.get("APP_ATTACK_SECRET") or f"app-secret-{random.randrange(10**9)}"
HOST_TEXT = f"host-file-{random.randrange(10**9)}"
HOST_MODE = 0o644
JOB_DISK_MB = 16
SURFACE_SECONDS = 90  # gathering every surface of a small run takes well under a second; a FIFO would hang it
CHILD_SECONDS = 400  # a loaded 2-core machine takes ~30 s; a stall never ends
CHILD_MEMORY_BYTES = 6 << 30  # the app's address space: an endless read of /dev/zero ends here
ROOT = Path(__file__).resolve().parents[1]
QUESTION = "What was total revenue in fiscal 2025?"
DATAROOM = {"finance/revenue_2025.md": "# Revenue 2025\n\nTotal revenue for fiscal 2025 was 48.2 million euros."}


@dataclass
class Scene:
    base: Path
    level: str

    @property
    def job(self) -> Path:
        return self.base / "job"

    @property
    def work(self) -> Path:
        return self.job / "work"

    @property
    def host(self) -> Path:
        """A folder of the host outside every job, holding a file only the app should read."""
        return self.base / "host"

    @property
    def host_file(self) -> Path:
        return self.host / "secret.txt"

    @property
    def planted(self) -> Path:
        """A host path that must never come to exist (the target of a dangling link)."""
        return self.host / "planted.pth"

    def run(self, commands: list[str], final: str = "Revenue was 48.2 million euros.") -> str:
        """One run: each command a bash call of its own step, then the final reply."""
        steps = [Said(calls=[("bash", {"command": command})]) for command in commands]
        model = FakeChatModel([*steps, Said(final)])
        settings = Settings.resolve(env={}, searchbox_tools="", retrieval_preset="packaged", bash_sandbox=self.level,
                                    searchbox_cache_dir=str(self.base / "cache"), job_disk_mb=JOB_DISK_MB,
                                    force_tool_steps=0, forced_tool="",
                                    searchbox_operator=self.level == "off")  # unconfined bash is for an operator only
        return run_job(self.job, settings, model)


@dataclass(frozen=True)
class Attack:
    name: str
    commands: Callable[[Scene], list[str]]
    got_through: Callable[[Scene, dict[str, bytes]], bool] = lambda s, surfaces: _leaked(surfaces)
    final: str = "Revenue was 48.2 million euros."
    # What the visitor or the app does with the job afterwards (once its surfaces are gathered).
    then: Callable[[Scene], None] | None = None


def surfaces(job: Path) -> dict[str, bytes]:
    """Everything of the run a visitor or an operator is shown or handed, by name."""
    from searchbox.cli.run import summarize_run  # the CLI's own summary lines
    from searchbox.grading.score import score_run
    from searchbox.ui.panels import read_answer

    folder = JobFolder(job)
    found: dict[str, bytes] = {}
    answer, sources = read_answer(job)
    found["answer panel"] = answer.encode()
    found["sources panel"] = sources.encode()
    answer_file, bundle = downloads(job)
    if answer_file:
        found["ANSWER.md download"] = Path(answer_file).read_bytes()
    with zipfile.ZipFile(bundle) as archive:
        for member in archive.namelist():
            found[f"bundle:{member}"] = archive.read(member)
    for snapshot in sorted(folder.snapshots.glob("*")) if folder.snapshots.is_dir() else []:
        found[f"snapshot:{snapshot.name}"] = snapshot.read_bytes()
    found["run_meta.json"] = folder.run_meta.read_bytes() if folder.run_meta.is_file() else b""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        summarize_run(job)
    found["CLI summary"] = out.getvalue().encode()
    question = {"id": "q", "type": "literal", "question": QUESTION, "must_facts": ["48.2 million"], "gold_files": []}
    found["score"] = repr(score_run(job, question)).encode()
    return found


def _leaked(found: dict[str, bytes]) -> bool:
    return any(SECRET.encode() in data or HOST_TEXT.encode() in data for data in found.values())


def _planted_or_leaked(s: Scene, found: dict[str, bytes]) -> bool:
    return s.planted.exists() or s.planted.is_symlink() or _leaked(found)


def _answer_bounded(s: Scene, found: dict[str, bytes]) -> bool:
    """An endless or huge ANSWER.md must not be loaded whole into any surface."""
    return any(len(data) > 4 << 20 for data in found.values()) or _leaked(found)


def _host_mode_changed(s: Scene, found: dict[str, bytes]) -> bool:
    return stat.S_IMODE(os.stat(s.host_file).st_mode) != HOST_MODE or _leaked(found)


def _delete_as_a_space_app(s: Scene) -> None:
    """Delete the job (the Jobs tab's Delete, the pruner) as an app that is not root, as on a Space, where
    the app, its files and bash are one user: as root, the job and the host folder are given to the user
    bash ran as (nobody at the namespaces level) and the removal runs as that user, or, where bash ran as
    root, in a child without CAP_DAC_OVERRIDE (setpriv), whose override hides the bug."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
        owner = os.lstat(s.work)
        if owner.st_uid == 0:
            prefix = [setpriv, "--bounding-set=-dac_override"]
        else:
            os.lchown(s.base, owner.st_uid, owner.st_gid)  # the jobs' folder, the job is removed from it
            for top in (s.job, s.host):
                os.lchown(top, owner.st_uid, owner.st_gid)
                for folder, dirs, files in os.walk(top):
                    for name in dirs + files:
                        os.lchown(Path(folder) / name, owner.st_uid, owner.st_gid)
            prefix = [setpriv, f"--reuid={owner.st_uid}", f"--regid={owner.st_gid}", "--clear-groups"]
    code = ("import sys; from pathlib import Path; "
            "from searchbox.records.removal import remove_job_folder; remove_job_folder(Path(sys.argv[1]))")
    done = subprocess.run([*prefix, sys.executable, "-c", code, str(s.job)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    if done.returncode != 0 or s.job.exists():
        print(f"the job was not deleted (exit {done.returncode}): {done.stderr[-2000:]}")


def _job_kept(s: Scene, found: dict[str, bytes]) -> bool:
    """The Delete failed: the job folder, or part of it, is still there."""
    return s.job.exists() or _leaked(found)


def _budget_kept(s: Scene, found: dict[str, bytes]) -> bool:
    """Counted here, not by the budget's own code: what work/ holds beyond its dataroom, every name."""
    held = 0
    for folder, dirs, files in os.walk(s.work):
        if Path(folder) == s.work:
            dirs[:] = [d for d in dirs if d != "dataroom"]
        held += sum(os.lstat(Path(folder) / name).st_blocks * 512 for name in files)
    return held > JOB_DISK_MB << 20


ATTACKS = [
    Attack("ANSWER.md -> /proc/self/environ (the app's secrets in the answer panel, download, bundle, snapshots)",
           lambda s: ["ln -sf /proc/self/environ ANSWER.md"]),
    Attack("ANSWER.md -> a host file (any file the app can read)", lambda s: [f"ln -sf {s.host_file} ANSWER.md"]),
    Attack("ANSWER.md -> a host file, then an answer written into work/ later", lambda s: [
        f"ln -sf {s.host_file} ANSWER.md"], final="Revenue was 48.2 million euros. [s1]"),
    Attack("dangling ANSWER.md -> a host path, and a final reply with no file (the backstop writes through it)",
           lambda s: [f"ln -sf {s.planted} ANSWER.md"], got_through=_planted_or_leaked),
    Attack("ANSWER.md -> /dev/zero (an endless read: the app's memory)", lambda s: ["ln -sf /dev/zero ANSWER.md"],
           got_through=_answer_bounded),
    Attack("ANSWER.md -> /dev/tty (a read that waits for a terminal)", lambda s: ["ln -sf /dev/tty ANSWER.md"],
           got_through=_answer_bounded),
    Attack("ANSWER.md as a FIFO (stalls every reader)", lambda s: ["mkfifo ANSWER.md || python3 -c \"import os; "
                                                                    "os.mkfifo('ANSWER.md')\""]),
    Attack("ANSWER.md as a sparse file of 64 GB (passes the disk budget, not a reader)",
           lambda s: ["truncate -s 64G ANSWER.md"], got_through=_answer_bounded),
    Attack("ANSWER.md as a hard link to a host file", lambda s: [f"ln -f {s.host_file} ANSWER.md"]),
    Attack("ANSWER.md as a folder", lambda s: ["mkdir ANSWER.md && echo x > ANSWER.md/a"]),
    Attack("a folder of work/ as a link to a host folder (the bundle walks work/)",
           lambda s: [f"ln -s {s.host} notes && ln -s {s.host_file} notes.md"]),
    Attack("a sparse file of 64 GB in work/ (the bundle reads it)", lambda s: ["truncate -s 64G big.txt"],
           got_through=_answer_bounded),
    Attack("the answer's snapshot through a link swapped in after a first answer", lambda s: [
        "echo 'Revenue was 48.2 million euros.' > ANSWER.md", "ln -sf /proc/self/environ ANSWER.md"]),
    Attack(f"move work/.searchbox/root aside and fill a new one past a {JOB_DISK_MB} MiB budget", lambda s: [
        # files under the per-file cap (what is left of the budget), together three times the budget
        "mv .searchbox/root .searchbox/aside; mkdir -p .searchbox/root && for i in 1 2 3 4 5 6; do "
        f"head -c {JOB_DISK_MB // 2}M /dev/urandom > .searchbox/root/f$i.bin; done; du -sh .searchbox"],
        got_through=_budget_kept),
    Attack("a link to a host file in a folder made read-only, then the job deleted by an app that is not root",
           lambda s: [f"mkdir d && ln -s {s.host_file} d/x && chmod 555 d"], got_through=_host_mode_changed,
           then=_delete_as_a_space_app),
    Attack("a chain of folders 1,990 deep in work/, then the job deleted (issue #43: removal recursed and failed)",
           lambda s: ["mkdir -p $(printf 'd/%.0s' $(seq 1990)) && echo made"], got_through=_job_kept,
           then=_delete_as_a_space_app),
]


def run_attack(attack: Attack, level: str) -> bool:
    """True when the attack got through at this level: a leak, a host write, a stall or a crash.

    The run and the gathering happen in a child process that starts with the app's token in its
    environment, as a Space's app does (the kernel shows /proc/self/environ as the process started, so a
    token set later would never be seen), with its address space capped as a host's memory is: an endless
    read kills the child instead of the machine."""
    base = Path(tempfile.mkdtemp(prefix="searchbox-app-attack-"))
    try:
        env = {**os.environ, "HF_TOKEN": SECRET, "APP_ATTACK_SECRET": SECRET, "PYTHONPATH": str(ROOT)}
        code = f"import sys; from testkit import app_attacks; sys.exit(app_attacks.attack_in_child({ATTACKS.index(attack)}, {level!r}, {str(base)!r}))"
        try:
            done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                                  timeout=CHILD_SECONDS, preexec_fn=_cap_memory)
        except subprocess.TimeoutExpired:
            print(f"{attack.name}: the app stalled")
            return True
        if done.returncode not in (0, 3):
            print(f"{attack.name}: the app's side failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        return done.returncode != 0
    finally:
        _remove(base)


def attack_in_child(index: int, level: str, base: str) -> int:
    """In the child: 0 blocked, 3 got through (anything else: the app's side crashed)."""
    attack = ATTACKS[index]
    scene = Scene(Path(base), level)
    scene.host.mkdir()
    scene.host_file.write_text(f"{HOST_TEXT}\n")
    scene.host_file.chmod(HOST_MODE)
    source = scene.base / "room"
    for rel, text in DATAROOM.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text)
    create_job(scene.job, QUESTION, source, Settings.resolve(env={}))
    scene.run(attack.commands(scene), attack.final)
    found = _gather_within(scene.job, SURFACE_SECONDS)
    if attack.then is not None:
        attack.then(scene)
    return 3 if found is None or attack.got_through(scene, found) else 0


def run_suite(level: str) -> dict[str, bool | None]:
    """Each attack's outcome at `level`: True got through, False blocked; None for every attack when the
    level is not available here."""
    if choose(level).name != level:
        return {attack.name: None for attack in ATTACKS}
    return {attack.name: run_attack(attack, level) for attack in ATTACKS}


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))


def _gather_within(job: Path, seconds: float) -> dict[str, bytes] | None:
    """The surfaces, or None when gathering them stalled (a reader blocked on a FIFO or an endless file)."""
    result: dict[str, dict[str, bytes]] = {}
    errors: list[BaseException] = []

    def gather() -> None:
        try:
            result["found"] = surfaces(job)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=gather, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return None
    if errors:
        raise errors[0]
    return result["found"]


def _remove(base: Path) -> None:
    """The namespace level leaves files owned by nobody, some read-only, and an attack may leave a chain
    thousands deep (which rglob and rmtree recurse into): the app's own removal takes them all."""
    with contextlib.suppress(OSError):
        remove_job_folder(base)
