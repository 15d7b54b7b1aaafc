"""SIGKILL mid-run (design §3, §5): the real app in a subprocess, driven with gradio_client, talking to a
scripted endpoint whose answers stream slowly, is killed -9 three times at different moments, then
started again on the same jobs folder each time.

Afterwards: every interrupted run resumed from its session and finished, the queued runs ran, the run
that had finished before the first kill is byte for byte what it was, and no JSON or JSONL file in
any job folder is half-written.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gradio_client import Client

from testkit.app_server import app_process
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.prompts import CONTINUE
from searchbox.agent.session import Session
from searchbox.records.files import append_jsonl, read_jsonl
from testkit.tally import report

WAIT_S = 300.0  # generous: a loaded 2-core machine must never fail a test by being slow
ENDPOINT_CHOICE = "an OpenAI-compatible endpoint"
OWNER = "restart-tester"


def question(name: str) -> str:
    return f"[{name}] When does the office lease end?"


def search_args(name: str, budget: int) -> tuple:
    # question, upload, budget, force, high tools, low tools, llm, endpoint, model id, retrieval preset,
    # embed backend, rerank backend, Jina key, owner
    return (question(name), None, budget, True, [], [], ENDPOINT_CHOICE, "", "", "packaged", "local", "local", "", OWNER)


class SlowScript:
    """Each turn lists the dataroom, then streams its answer slowly, so a kill lands mid-run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answering: tuple[str, int] | None = None  # the job and turn of the answer streamed last

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        name = str(messages[1]["content"]).split("]")[0].lstrip("[")
        turn = 1 + sum(1 for m in messages if m["role"] == "user" and m["content"] == CONTINUE)
        if messages[-1]["role"] == "user":
            return Reply(tool_calls=[{"name": "ls", "arguments": {"path": "dataroom"}}], chunk_chars=400)
        with self._lock:
            self._answering = (name, turn)
        text = f"{name}, turn {turn}: the office lease runs until 31 March 2029, with a break date before that."
        return Reply(text=text, chunk_chars=4, delay_s=0.08)

    def answering(self) -> tuple[str, int] | None:
        """The job (and turn) whose answer streams now: each takes seconds, the test polls every 50 ms."""
        with self._lock:
            return self._answering

    def reset(self) -> None:
        with self._lock:
            self._answering = None


class Jobs:
    """The jobs folder as the app leaves it, read from disk only."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def dirs(self) -> dict[str, Path]:
        found = {}
        for path in self.root.glob("*/query.txt") if self.root.exists() else []:
            if not path.parent.name.startswith("."):
                found[path.read_text().split("]")[0].lstrip("[")] = path.parent
        return found

    def state(self, name: str) -> str | None:
        path = self.dirs().get(name)
        try:
            return json.loads((path / "job.json").read_text())["state"] if path else None
        except (OSError, ValueError):
            return None

    def count(self, name: str, file: str, **match: Any) -> int:
        path = self.dirs().get(name)
        rows = read_jsonl(path / file) if path else []
        return sum(1 for r in rows if all(r.get(k) == v for k, v in match.items()))


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def half_written(root: Path) -> list[str]:
    """JSON files that do not parse; JSONL lines that do not, except a last line the kill tore (no
    newline yet), which readers skip."""
    bad = []
    for path in root.rglob("*.json"):
        if "dataroom" in path.parts:
            continue
        try:
            json.loads(path.read_text())
        except ValueError:
            bad.append(str(path))
    for path in root.rglob("*.jsonl"):
        text = path.read_text()
        lines = text.split("\n")
        for n, line in enumerate(lines):
            torn_tail = n == len(lines) - 1
            if not line or torn_tail:
                continue
            try:
                json.loads(line)
            except ValueError:
                bad.append(f"{path}:{n + 1}")
    return bad


def running_job(jobs: Jobs) -> str | None:
    return next((name for name in jobs.dirs() if jobs.state(name) == "running"), None)


@pytest.mark.slow
def test_sigkill_mid_run_then_restart(tmp_path: Path) -> None:
    script = SlowScript()
    jobs = Jobs(tmp_path / "jobs")
    kills: list[str] = []  # the job that was running at each kill
    with ScriptedEndpoint(default=script) as endpoint:
        env = {"LLAMA_URL": endpoint.url, "MODEL_ID": "scripted", "RETRIEVAL_PRESET": "packaged", "SEARCHBOX_TOOLS": ""}

        def kill(proc: Any) -> None:
            kills.append(running_job(jobs) or "")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            script.reset()

        # Start: one run finishes; another runs; two more are submitted, and the first of them preempts
        # it (design §3). Kill 1 lands while that one streams its answer.
        with app_process(tmp_path, **env) as (url, proc):
            client = Client(url, verbose=False)
            client.predict(*search_args("FIN", budget=1), api_name="/search")
            assert jobs.state("FIN") == "done"
            finished = snapshot(jobs.dirs()["FIN"])
            client.submit(*search_args("RUN", budget=3), api_name="/search")
            wait_until(lambda: jobs.count("RUN", "turns.jsonl") >= 1, "RUN finished turn 1")
            client.submit(*search_args("Q1", budget=2), api_name="/search")
            client.submit(*search_args("Q2", budget=2), api_name="/search")
            wait_until(lambda: jobs.state("Q1") is not None and jobs.state("Q2") is not None, "Q1 and Q2 are stored")
            wait_until(lambda: jobs.state("RUN") == "paused" and (script.answering() or ("",))[0] in ("Q1", "Q2"),
                       "a run that preempted RUN streams its answer")
            kill(proc)

        # Kill 2: after a restart, once a run has resumed from its session and called a tool again.
        with app_process(tmp_path, **env) as (url, proc):
            tools_before = {n: jobs.count(n, "events.jsonl", type="tool_end") for n in jobs.dirs()}
            wait_until(lambda: any(jobs.count(n, "events.jsonl", type="run_start", resumed=True) >= 1
                                   and jobs.count(n, "events.jsonl", type="tool_end") > tools_before[n]
                                   for n in jobs.dirs()), "a resumed run called a tool")
            kill(proc)

        # Kill 3: the moment a turn ends, its records just written.
        with app_process(tmp_path, **env) as (url, proc):
            turns_before = {n: jobs.count(n, "turns.jsonl") for n in jobs.dirs()}
            wait_until(lambda: any(jobs.count(n, "turns.jsonl") > turns_before[n] for n in jobs.dirs()), "a turn ended")
            kill(proc)

        torn = half_written(jobs.root)
        with app_process(tmp_path, **env) as (url, proc):
            wait_until(lambda: all(jobs.state(n) == "done" for n in ("RUN", "Q1", "Q2")), "every run is done")

    problems: dict[str, list[str]] = {}
    budgets = {"RUN": 3, "Q1": 2, "Q2": 2}
    for name, budget in budgets.items():
        job_dir = jobs.dirs()[name]
        found = []
        meta = json.loads((job_dir / "run_meta.json").read_text())
        if meta["stop_reason"] != "budget_spent" or meta["turns"] != budget:
            found.append(f"stopped {meta['stop_reason']} after {meta['turns']} turns")
        if [t["turn"] for t in read_jsonl(job_dir / "turns.jsonl")] != list(range(1, budget + 1)):
            found.append(f"turns.jsonl: {[t['turn'] for t in read_jsonl(job_dir / 'turns.jsonl')]}")
        session = Session.load(job_dir / "session.jsonl")
        users = [m["content"] for m in session.messages if m["role"] == "user"]
        if users != [question(name), *[CONTINUE] * (budget - 1)]:
            found.append(f"user messages {users}")  # the question sent once, one Continue per later turn
        if not (job_dir / "work" / "ANSWER.md").read_text().startswith(f"{name}, turn 1:"):
            found.append("the answer is not turn 1's")
        if found:
            problems[name] = found
    resumed = [name for name in dict.fromkeys(kills)
               if name and jobs.count(name, "events.jsonl", type="run_start", resumed=True) >= 1]
    changed = snapshot(jobs.dirs()["FIN"]) != finished
    if changed:
        problems["FIN"] = ["the finished run's files changed"]
    if torn or half_written(jobs.root):
        problems["files"] = torn + half_written(jobs.root)
    lost = [name for name in budgets if jobs.state(name) != "done"] + (["FIN"] if changed else [])
    report("faults restart", f"kills {len(kills)}, interrupted runs {sorted(set(filter(None, kills)))}, "
          f"resumed {len(resumed)}, runs lost {len(lost)}, half-written files {len(torn)}")
    assert len(kills) == 3 and all(kills), kills  # every kill landed on a running run
    assert set(resumed) == set(kills)
    assert not problems, problems
    assert not lost


def test_a_line_torn_by_a_kill_never_swallows_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    session = Session(path)
    session.append({"role": "user", "content": "When does the lease end?"})
    with path.open("ab") as handle:  # what a kill in the middle of a write leaves
        handle.write(b'{"type": "message", "ts": 1, "message": {"role": "assis')
    resumed = Session.load(path)
    resumed.append({"role": "assistant", "content": "31 March 2029."})
    append_jsonl(path, {"type": "message", "message": {"role": "user", "content": CONTINUE}})
    assert [m["content"] for m in Session.load(path).messages] == ["When does the lease end?", "31 March 2029.", CONTINUE]


def test_a_turn_killed_before_its_turn_end_is_ended_on_resume_not_redone(tmp_path: Path) -> None:
    from conftest import SMALL_DATAROOM, write_tree
    from searchbox.agent.run import run_job
    from searchbox.jobs.job import create_job
    from searchbox.llm.clients.openai_client import OpenAIClient
    from searchbox.settings import Settings

    with ScriptedEndpoint(default=SlowScript()) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                                    retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"),
                                    turn_budget=2, force_budget=True)
        job_dir = tmp_path / "job"
        create_job(job_dir, question("T"), write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        assert run_job(job_dir, settings, client) == "budget_spent"
        # What a kill leaves between turn 2's last response (in the session) and its turn_end.
        turns = (job_dir / "turns.jsonl").read_text().splitlines(keepends=True)
        (job_dir / "turns.jsonl").write_text("".join(turns[:-1]))
        asked = len(endpoint.requests)
        assert run_job(job_dir, settings, client) == "budget_spent"
        client.close()
        assert len(endpoint.requests) == asked  # the finished turn is not asked for again
    users = [m["content"] for m in Session.load(job_dir / "session.jsonl").messages if m["role"] == "user"]
    assert users == [question("T"), CONTINUE]
    assert [t["turn"] for t in read_jsonl(job_dir / "turns.jsonl")] == [1, 2]
