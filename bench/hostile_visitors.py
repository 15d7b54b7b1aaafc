"""Hostile visitors against the real app (python app.py, public: no SEARCHBOX_OPERATOR), issue #43 parts 2
and 3: what the largest bodies and slowest uploads anonymous clients can send cost the app's memory, its
disk, and another visitor's run.

`--clients` attackers, each at an address of its own (the app believes X-Forwarded-For from its trusted
proxy 127.0.0.1, SEARCHBOX_TRUSTED_PROXIES, so every attacker is a visitor at another address), for
`--seconds` send in turn, over raw sockets and plain HTTP:

- a call body: POST /gradio_api/queue/join declaring `--body-mb` MB of JSON, sent until the app answers;
- a trickled upload: 100 MB declared, 64 KB sent, then a byte every 2 s until the app answers (45 s at most);
- an aborted upload: 20 MB declared, 10 MB sent, then the connection closed;
- a many-file upload: 60 files of 100 KB in one multipart request;
- Gradio's routes the app never uses: a 20 MB process_recording post, and deep_link for its own session.

Meanwhile another visitor runs the same scripted run (testkit.scripted_endpoint: cheap and deterministic)
on a small dataroom of its own, through gradio_client (which uploads it), one after another; the same run on the
idle app, in the same invocation, is the baseline. Sampled every 0.5 s: the app process's resident memory
(/proc/<pid>/status VmRSS, and VmHWM, its peak) and the disk used under its upload folder and jobs folder.
Only public interfaces: it runs the same against any version of the app.

    python bench/hostile_visitors.py [--seconds 60] [--clients 10] [--body-mb 300] [--idle-runs 3]
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import statistics
import sys
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from gradio_client import Client, handle_file  # noqa: E402

from testkit.app_server import app_process, throwaway_home  # noqa: E402
from testkit.load_harness import search_args  # noqa: E402
from testkit.scripted_endpoint import Reply, ScriptedEndpoint  # noqa: E402

MB = 1024 * 1024
VICTIM = "192.0.2.200"
PART_HEAD = b'--x\r\nContent-Disposition: form-data; name="files"; filename="hostile.zip"\r\n\r\n'


@dataclass
class Samples:
    rss_kb: int = 0
    hwm_kb: int = 0
    uploads_bytes: int = 0
    died_after_s: float | None = None
    jobs_bytes: int = 0


@dataclass
class Tally:
    outcomes: dict[str, Counter] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, attack: str, outcome: str) -> None:
        with self.lock:
            self.outcomes.setdefault(attack, Counter())[outcome] += 1


def status_kb(pid: int) -> dict[str, int]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {line.split(":")[0]: int(line.split()[1]) for line in lines if line.startswith(("VmRSS:", "VmHWM:"))}


def disk_bytes(folder: Path) -> int:
    """Bytes allocated to the files under `folder` (what they take of the disk)."""
    total = 0
    for parent, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(parent, name)).st_blocks * 512
            except OSError:
                pass  # deleted while walked
    return total


def sample(pid: int, served: Path, jobs: Path, peak: Samples, stop: threading.Event) -> None:
    started = time.monotonic()
    while not stop.wait(0.5):
        try:
            vm = status_kb(pid)
        except OSError:
            vm = {}
        if "VmRSS" not in vm:  # gone, or a zombie: the app died under the attack
            peak.died_after_s = time.monotonic() - started
            return
        peak.rss_kb, peak.hwm_kb = max(peak.rss_kb, vm["VmRSS"]), max(peak.hwm_kb, vm["VmHWM"])
        peak.uploads_bytes = max(peak.uploads_bytes, disk_bytes(served))
        peak.jobs_bytes = max(peak.jobs_bytes, disk_bytes(jobs))


def room() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("notes/a.md", "The lease ends in 2029.")
    return buffer.getvalue()


class Attacker:
    def __init__(self, url: str, address: str, body_mb: int, tally: Tally, until: float) -> None:
        self.url, self.address, self.body_mb, self.tally, self.until = url, address, body_mb, tally, until
        self.port = urlsplit(url).port or 80
        self.session = ""

    def head(self, path: str, length: int | None, content_type: str) -> bytes:
        lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}", f"X-Forwarded-For: {self.address}",
                 f"Content-Type: {content_type}", *([f"Content-Length: {length}"] if length is not None else []), "", ""]
        return "\r\n".join(lines).encode()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)

    def run(self, offset: int) -> None:
        attacks: list[Callable[[], str]] = [self.call_body, self.trickle, self.aborted, self.many_files,
                                            self.unused_routes]
        n = offset
        while time.monotonic() < self.until:
            attack = attacks[n % len(attacks)]
            try:
                outcome = attack()
            except OSError as exc:
                outcome = type(exc).__name__
            self.tally.add(attack.__name__, outcome)
            n += 1

    def call_body(self) -> str:
        """Send a huge JSON body in 1 MB pieces until the app answers (or all of it is sent)."""
        with self.connect() as connection:
            connection.sendall(self.head("/gradio_api/queue/join", self.body_mb * MB, "application/json"))
            connection.setblocking(False)
            piece, sent = b'{"data": ["' + b"x" * (MB - 11), 0
            while sent < self.body_mb * MB and time.monotonic() < self.until + 30:
                try:
                    return _status(connection.recv(100))
                except BlockingIOError:
                    pass
                try:
                    sent += connection.send(piece[: self.body_mb * MB - sent])
                except BlockingIOError:
                    time.sleep(0.01)
            connection.settimeout(60)
            return _status(connection.recv(100))

    def trickle(self) -> str:
        with self.connect() as connection:
            connection.sendall(self.head("/gradio_api/upload", 100 * MB, "multipart/form-data; boundary=x")
                               + PART_HEAD + b"A" * 65536)
            connection.settimeout(2)
            for _ in range(22):
                try:
                    answer = connection.recv(100)
                    return _status(answer)  # refused or cut off
                except TimeoutError:
                    connection.send(b"A")
            return "held 45 s"

    def aborted(self) -> str:
        with self.connect() as connection:
            connection.sendall(self.head("/gradio_api/upload", 20 * MB, "multipart/form-data; boundary=x")
                               + PART_HEAD + b"A" * (10 * MB))
        return "left after 10 MB"

    def many_files(self) -> str:
        files = [("files", (f"f{n}.zip", os.urandom(100_000))) for n in range(60)]
        sent = httpx.post(f"{self.url}gradio_api/upload", files=files, headers={"X-Forwarded-For": self.address},
                          timeout=60)
        return f"{sent.status_code}" + (f" ({len(sent.json())} files)" if sent.status_code == 200 else "")

    def unused_routes(self) -> str:
        headers = {"X-Forwarded-For": self.address}
        recording = httpx.post(f"{self.url}gradio_api/process_recording", headers=headers, timeout=60,
                               files=[("data", ("rec.wav", os.urandom(20 * MB)))])
        if not self.session:
            client = Client(self.url, verbose=False, headers=headers)
            client.predict("attacker", api_name="/jobs")
            self.session = client.session_hash
        deep_link = httpx.get(f"{self.url}gradio_api/deep_link", params={"session_hash": self.session},
                              headers=headers, timeout=30)
        return f"recording {recording.status_code}, deep_link {deep_link.status_code}"


def _status(answer: bytes) -> str:
    return answer.split(b"\r\n", 1)[0].decode(errors="replace").removeprefix("HTTP/1.1 ") or "closed, no answer"


def timed_run(url: str, dataroom: Path, tag: str, outcomes: Counter) -> float | None:
    """One scripted run of the visitor on its own small dataroom (uploaded by gradio_client), in seconds;
    None when it failed (its upload refused, say), counted in `outcomes` either way."""
    args = list(search_args(tag, "victim-owner"))
    args[1] = handle_file(str(dataroom))
    started = time.monotonic()
    client = None
    try:
        client = Client(url, verbose=False, headers={"X-Forwarded-For": VICTIM})
        client.predict(*args, api_name="/search")
    except Exception as exc:  # what the visitor sees: the refusal's status, the run's error, or no app
        response = getattr(exc, "response", None)
        outcomes[f"failed ({response.status_code if response is not None else type(exc).__name__})"] += 1
        time.sleep(max(0.0, 1 - (time.monotonic() - started)))  # an app that is down refuses at once
        return None
    finally:
        if client is not None:
            client.close()
    outcomes["ran"] += 1
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--body-mb", type=int, default=300, help="the size a call body declares, and sends")
    parser.add_argument("--idle-runs", type=int, default=3)
    args = parser.parse_args()
    answer = Reply(text="The auditor was Example & Co [s1].")
    with ScriptedEndpoint(default=answer) as endpoint, throwaway_home("hostile-bench") as home, \
            app_process(home, GRADIO_TEMP_DIR=str(home / "gradio"), LLAMA_URL=endpoint.url, MODEL_ID="scripted",
                        SEARCHBOX_TRUSTED_PROXIES="127.0.0.1") as (url, proc):
        served, jobs = home / "gradio", home / "jobs"
        dataroom = home / "victim.zip"
        dataroom.write_bytes(room())
        idle_outcomes, victim = Counter(), Counter()
        timed_run(url, dataroom, "warm-up", idle_outcomes)  # the first run loads what later ones reuse
        idle = [timed_run(url, dataroom, f"idle {n}", idle_outcomes) for n in range(args.idle_runs)]
        idle_vm = status_kb(proc.pid)
        peak, tally = Samples(), Tally()
        stop = threading.Event()
        sampler = threading.Thread(target=sample, args=(proc.pid, served, jobs, peak, stop), daemon=True)
        sampler.start()
        until = time.monotonic() + args.seconds
        attackers = [threading.Thread(target=Attacker(url, f"198.18.0.{n + 1}", args.body_mb, tally, until).run,
                                      args=(n,), daemon=True) for n in range(args.clients)]
        for attacker in attackers:
            attacker.start()
        attacked = []
        while time.monotonic() < until:
            attacked.append(timed_run(url, dataroom, f"attacked {len(attacked)}", victim))
        for attacker in attackers:
            attacker.join(timeout=90)
        time.sleep(5)  # what is still on disk once the attackers are gone
        stop.set()
        sampler.join()
        left_on_disk = disk_bytes(served)
        report(args, idle, attacked, idle_vm, peak, left_on_disk, tally, victim, proc.poll())


def report(args: argparse.Namespace, idle: list[float | None], attacked: list[float | None], idle_vm: dict[str, int],
           peak: Samples, left_on_disk: int, tally: Tally, victim: Counter, exit_code: int | None) -> None:
    idle_s = statistics.median(t for t in idle if t is not None)
    ran = [t for t in attacked if t is not None]
    attacked_s = statistics.median(ran) if ran else float("nan")
    rows = [
        ("attackers", f"{args.clients} addresses for {args.seconds:g} s (call bodies of {args.body_mb} MB)"),
        ("the app", "served throughout" if peak.died_after_s is None else
                    f"died {peak.died_after_s:.0f} s into the attack (exit code {exit_code})"),
        ("app RSS idle / peak while attacked", f"{idle_vm['VmRSS'] / 1024:.0f} MB / {peak.rss_kb / 1024:.0f} MB "
                                               f"(VmHWM {peak.hwm_kb / 1024:.0f} MB)"),
        ("disk under the upload folder, peak / 5 s after", f"{peak.uploads_bytes / MB:.1f} MB / "
                                                           f"{left_on_disk / MB:.1f} MB"),
        ("disk under the jobs folder, peak", f"{peak.jobs_bytes / MB:.1f} MB"),
        (f"another visitor's run with its upload, idle (median of {len(idle)})", f"{idle_s:.2f} s"),
        (f"the same run while attacked (median of {len(ran)})", f"{attacked_s:.2f} s"),
        ("attacked / idle", f"{attacked_s / idle_s:.2f}"),
        ("that visitor's runs while attacked", ", ".join(f"{n} x {s}" for s, n in victim.most_common())),
    ]
    rows += [(f"attack: {attack}", ", ".join(f"{n} x {outcome}" for outcome, n in counts.most_common()))
             for attack, counts in sorted(tally.outcomes.items())]
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
