"""Load on the real app: many gradio_client visitors submit runs at once against a fast scripted
endpoint, while a probe times the page and the jobs table. Shared by bench/load.py (the full 50 runs
from 10 clients) and tests/ui/test_load.py (a smaller real run), so both measure the same thing.

Every run gets the same two-step script, answered by what the request holds: step 1 calls `grep`,
step 2 (once a tool result is in the context) writes an answer. A tag in each question ties the
endpoint's requests and the job folders back to the submission.
"""

from __future__ import annotations

import re
import statistics
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradio_client import Client

from testkit.app_server import running_app
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.records.files import read_json, read_jsonl

QUESTION = "Who audited the FY2025 financial statements? (load run {tag})"
_TAG = re.compile(r"\(load run (c\d+-r\d+)\)")
ANSWER = "The FY2025 statements were audited by the firm named in the audit report [s1]."
PROBE_EVERY_S = 0.5
RSS_MARKS = (10, 50, 100, 200)  # finished-run counts at which the app's memory is read (plus the last run)


def scripted_agent(body: dict[str, Any]) -> Reply:
    """Step 1 searches, step 2 answers: the same small script for every run, whatever order they come in."""
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return Reply(text=ANSWER, chunk_chars=40)
    return Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": "audit", "ignoreCase": True}}])


def tag_of(text: str) -> str | None:
    match = _TAG.search(text)
    return match.group(1) if match else None


def search_args(tag: str, owner: str) -> tuple:
    # question, upload, budget, force, high tools, low tools, llm, endpoint, model id, retrieval preset,
    # embed backend, rerank backend, Jina key, owner. One turn, not forced: a run ends after its answer.
    # The key is a dummy: it exercises the per-run secrets the app must drop once the run is over.
    return (QUESTION.format(tag=tag), None, 1, False, [], [], "an OpenAI-compatible endpoint", "", "", "packaged",
            "local", "local", f"jina_dummy_{tag}", owner)


def tree_rss_kb(pid: int) -> int:
    """Resident memory (VmRSS) of a process and all its descendants, in kB."""
    total = 0
    try:
        total = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                     if line.startswith("VmRSS:"))
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                total += tree_rss_kb(int(child))
    except (OSError, StopIteration):
        pass  # a child that just exited
    return total


def app_pid(port: int) -> int:
    """The `python app.py --port N` this process started (running_app does not hand out its Popen)."""
    for task in Path("/proc/self/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"app.py" in cmdline and str(port).encode() in cmdline:
                return int(child)
    raise RuntimeError(f"no app.py child on port {port}")


@dataclass
class Timings:
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def worst(self) -> float:
        return max(self.seconds, default=float("nan"))

    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")


@dataclass
class JobCheck:
    """What the job folder says about one run."""
    tag: str | None
    state: str
    turns: int
    steps: int  # assistant messages in the session: 2 when no step ran twice
    stops_done: int  # `stop` events that ended the run as done: 1 when it finished once
    resumes: int  # run_start events after the first: times it resumed after a preemption
    why: str  # stop reason and error, to tell what went wrong at a glance


@dataclass
class LoadResult:
    runs: int
    clients: int
    accepted: int = 0
    finished: Counter[str] = field(default_factory=Counter)  # final status word per submission
    errors: list[str] = field(default_factory=list)
    requests: Counter[str] = field(default_factory=Counter)  # endpoint requests per tag
    jobs: list[JobCheck] = field(default_factory=list)
    page: Timings = field(default_factory=Timings)
    table: Timings = field(default_factory=Timings)
    opened: Timings = field(default_factory=Timings)  # /open_job: a run's dashboard, built in worker threads
    rss_kb: dict[int, int] = field(default_factory=dict)  # finished runs -> app RSS
    wall_s: float = 0.0

    @property
    def tags(self) -> list[str]:
        return [f"c{c:02d}-r{r}" for c in range(self.clients) for r in range(self.runs_of(c))]

    def runs_of(self, client: int) -> int:
        """Runs split as evenly as possible; the first clients take the remainder."""
        return self.runs // self.clients + (client < self.runs % self.clients)

    def tally(self) -> str:
        """The figures of the reliability tally `load` (testkit/tally.py)."""
        marks = ", ".join(f"after {n}: {kb / 1024:.0f} MB" for n, kb in sorted(self.rss_kb.items()))
        return (f"{self.runs} submissions, {self.clients} clients, {self.finished['done']} finished, "
                f"worst page {self.page.worst():.2f} s, worst jobs table {self.table.worst():.2f} s, RSS {marks}")

    def table_rows(self) -> list[tuple[str, str]]:
        steps = Counter(j.steps for j in self.jobs)
        per_run = sorted(self.requests.values()) or [0]
        return [
            ("submissions / clients", f"{self.runs} / {self.clients}"),
            ("accepted", str(self.accepted)),
            ("finished done", f"{self.finished['done']} ({dict(self.finished)})"),
            ("job folders / done / ran once", f"{len(self.jobs)} / {sum(j.state == 'done' for j in self.jobs)} / "
                                              f"{sum(j.stops_done == 1 and j.steps == 2 for j in self.jobs)}"),
            ("steps per run (count)", str(dict(steps))),
            ("resumes after preemption (all runs)", str(sum(j.resumes for j in self.jobs))),
            ("endpoint requests per run min/median/max", f"{per_run[0]} / {statistics.median(per_run):g} / {per_run[-1]}"),
            ("page GET / median / worst", f"{len(self.page.seconds)} probes, {self.page.median() * 1000:.0f} ms, "
                                          f"{self.page.worst() * 1000:.0f} ms, {len(self.page.errors)} errors"),
            ("/jobs call median / worst", f"{len(self.table.seconds)} probes, {self.table.median() * 1000:.0f} ms, "
                                          f"{self.table.worst() * 1000:.0f} ms, {len(self.table.errors)} errors"),
            ("/open_job call median / worst", f"{len(self.opened.seconds)} probes, {self.opened.median() * 1000:.0f} ms, "
                                              f"{self.opened.worst() * 1000:.0f} ms, {len(self.opened.errors)} errors"),
            *((f"app RSS after {n} runs", f"{kb / 1024:.1f} MB") for n, kb in sorted(self.rss_kb.items())),
            ("wall time", f"{self.wall_s:.1f} s"),
            ("errors", str(len(self.errors))),
            *(("not done", f"{n} x {why}") for why, n in Counter(j.why for j in self.jobs if j.state != "done").items()),
        ]


def check_jobs(jobs_dir: Path) -> list[JobCheck]:
    checks = []
    for folder in sorted(p for p in jobs_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        record = read_json(folder / "job.json", {}) or {}
        meta = read_json(folder / "run_meta.json", {}) or {}
        events = read_jsonl(folder / "events.jsonl")
        steps = sum(1 for row in read_jsonl(folder / "session.jsonl")
                    if row.get("type") == "message" and row["message"].get("role") == "assistant")
        checks.append(JobCheck(
            tag=tag_of(record.get("question", "")), state=record.get("state", "?"), turns=meta.get("turns", 0),
            steps=steps, stops_done=sum(1 for e in events if e["type"] == "stop" and e.get("done")),
            resumes=max(0, sum(1 for e in events if e["type"] == "run_start") - 1),
            why=f"{record.get('stop_reason')}: {record.get('error') or ''}"[:300]))
    return checks


def run_load(runs: int = 50, clients: int = 10, home: Path | None = None) -> LoadResult:
    """Start the app and the endpoint, put the load on, and gather what happened."""
    result = LoadResult(runs, clients)
    with tempfile.TemporaryDirectory(prefix="searchbox-load-") as tmp, ScriptedEndpoint(default=scripted_agent) as endpoint:
        home = home or Path(tmp)
        # Its visitors all come from this machine's address: the per-address limit would count them as one.
        with running_app(home, LLAMA_URL=endpoint.url, MODEL_ID="scripted", SEARCHBOX_MAX_QUEUED_PER_ADDRESS="0",
                         SEARCHBOX_MAX_QUEUED_TOTAL=str(runs)) as url:
            pid = app_pid(int(url.rstrip("/").rsplit(":", 1)[1]))
            _put_load(url, pid, result)
        for request in endpoint.requests:
            messages = request.body.get("messages", [])
            first_user = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
            result.requests[tag_of(first_user) or "?"] += 1
        result.jobs = check_jobs(home / "jobs")
    return result


def _put_load(url: str, pid: int, result: LoadResult) -> None:
    lock = threading.Lock()
    done_count = [0]
    marks = {*(m for m in RSS_MARKS if m < result.runs), result.runs}
    stop_probe = threading.Event()
    # Every client is connected before any submits: the submissions land together.
    ready = threading.Barrier(result.clients + 1)

    def visitor(n: int) -> None:
        owner = f"load-owner-{n:02d}"
        try:
            client = Client(url, verbose=False)
        except Exception as exc:
            with lock:
                result.errors.append(f"client {n} could not connect: {exc!r}")
            ready.wait()
            return
        ready.wait()
        submitted = []
        for r in range(result.runs_of(n)):
            try:
                submitted.append(client.submit(*search_args(f"c{n:02d}-r{r}", owner), api_name="/search"))
                with lock:
                    result.accepted += 1
            except Exception as exc:
                with lock:
                    result.errors.append(f"c{n:02d}-r{r} refused: {exc!r}")
        for r, job in enumerate(submitted):
            try:
                status = str(job.result(timeout=900)[0])
            except Exception as exc:
                status = "error"
                with lock:
                    result.errors.append(f"c{n:02d}-r{r} raised: {exc!r}")
            word = next((w for w in ("done", "failed", "cancelled", "paused", "held") if f"**{w}**" in status), "other")
            with lock:
                result.finished[word] += 1
                done_count[0] += 1
                if done_count[0] in marks:
                    result.rss_kb[done_count[0]] = tree_rss_kb(pid)

    def probe() -> None:
        client = Client(url, verbose=False)
        while not stop_probe.is_set():
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(url, timeout=60) as response:
                    response.read()
                result.page.seconds.append(time.perf_counter() - started)
            except Exception as exc:
                result.page.errors.append(repr(exc))
            started = time.perf_counter()
            choices: list = []
            try:
                choices = client.predict("load-owner-00", api_name="/jobs")[1]["choices"]
                result.table.seconds.append(time.perf_counter() - started)
            except Exception as exc:
                result.table.errors.append(repr(exc))
            if choices:  # the newest of the owner's runs, whatever state it is in
                started = time.perf_counter()
                try:
                    client.predict(choices[0][1], "load-owner-00", api_name="/open_job")
                    result.opened.seconds.append(time.perf_counter() - started)
                except Exception as exc:
                    result.opened.errors.append(repr(exc))
            stop_probe.wait(PROBE_EVERY_S)

    threads = [threading.Thread(target=visitor, args=(n,), name=f"load-client-{n}") for n in range(result.clients)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    prober = threading.Thread(target=probe, name="load-probe")
    prober.start()
    for thread in threads:
        thread.join()
    result.wall_s = time.perf_counter() - started
    stop_probe.set()
    prober.join()
