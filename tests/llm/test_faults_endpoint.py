"""Endpoint faults through the whole run path (design §2.3, §5): the real scheduler runs real jobs with
`connect_and_run`, exactly as the app does, against a scripted endpoint that fails in turn 2 of each
job; and the CLI runs against an endpoint that is not there.

Per fault, once (the run must recover by retrying, or by compacting for a context overflow) and for
good (the run must stop with error_llm). Either way nothing raises out of the run, the records of
turn 1 are kept whole, and the jobs queued behind still run.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.app_server import ROOT, free_port
from conftest import SMALL_DATAROOM, write_tree
from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from searchbox.agent.prompts import CONTINUE
from searchbox.agent.run import connect_and_run
from searchbox.jobs.scheduler import Scheduler
from searchbox.jobs.store import JobStore
from searchbox.records.files import read_json, read_jsonl
from searchbox.settings import Settings
from testkit.tally import report

WAIT_S = 300.0  # generous: a loaded 2-core machine must never fail a test by being slow
_NAME = re.compile(r"^\[(\w+)\]")


@dataclass(frozen=True)
class Scenario:
    fault: Fault
    times: float  # how many of the job's turn-2 requests fail: 1 (recovers) or forever (error_llm)
    overrides: tuple[tuple[str, Any], ...] = ()


ONCE, ALWAYS = 1, math.inf
HANG = (("llm_timeout_seconds", 2),)  # the hang outlasts the client's timeout; others keep the default
SCENARIOS: dict[str, Scenario] = {
    "REFUSE_ONCE": Scenario(Fault.refuse(), ONCE),
    "REFUSE": Scenario(Fault.refuse(), ALWAYS),
    "HANG_ONCE": Scenario(Fault.hang(60), ONCE, HANG),
    "HANG": Scenario(Fault.hang(60), ALWAYS, HANG),
    "DROP_ONCE": Scenario(Fault.drop(Reply(text="cut off in the middle of"), after_chunks=4), ONCE),
    "DROP": Scenario(Fault.drop(Reply(text="cut off in the middle of"), after_chunks=4), ALWAYS),
    "GARBAGE": Scenario(Fault.garbage(), ALWAYS),  # not retried: the client says what it got instead
    "HTTP503_ONCE": Scenario(Fault.http(503), ONCE),
    "HTTP500": Scenario(Fault.http(500, "upstream crashed"), ALWAYS),
    "OVERFLOW_ONCE": Scenario(Fault.overflow(), ONCE),  # compacted, then retried
    "OVERFLOW": Scenario(Fault.overflow(), ALWAYS),  # still too long after compaction
}


class Script:
    """Per job: turn 1 lists the dataroom then answers; turn 2 meets the job's fault, then answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.faults_served: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> Reply | Fault:
        messages = body["messages"]
        if not body.get("tools"):  # a compaction request: its one user message is the transcript
            return Reply(text="## Goal\nThe lease end.\n## Progress\nListed the dataroom.")
        match = _NAME.match(str(messages[1]["content"]))
        assert match, messages[1]
        name = match.group(1)
        turn = 1 + sum(1 for m in messages if m["role"] == "user" and m["content"] == CONTINUE)
        if turn == 2 and name in SCENARIOS:
            with self._lock:
                served = self.faults_served.get(name, 0)
                if served < SCENARIOS[name].times:
                    self.faults_served[name] = served + 1
                    return SCENARIOS[name].fault
        if messages[-1]["role"] == "user" and turn == 1:
            return Reply(tool_calls=[{"name": "ls", "arguments": {"path": "dataroom"}}], chunk_chars=400)
        return Reply(text=f"{name}: turn {turn}, the lease runs until 31 March 2029.", chunk_chars=8)


def check_records(job_dir: Path, name: str, recovered: bool) -> list[str]:
    """What is wrong with the job's records, if anything."""
    problems = []
    meta = read_json(job_dir / "run_meta.json", {}) or {}
    turns = read_jsonl(job_dir / "turns.jsonl")
    session = [r["message"] for r in read_jsonl(job_dir / "session.jsonl") if r["type"] == "message"]
    events = read_jsonl(job_dir / "events.jsonl")
    expected_reason = "budget_spent" if recovered else "error_llm"
    if meta.get("stop_reason") != expected_reason:
        problems.append(f"run_meta stop_reason {meta.get('stop_reason')!r}, not {expected_reason}")
    if [t["turn"] for t in turns] != ([1, 2] if recovered else [1]):
        problems.append(f"turns.jsonl holds turns {[t['turn'] for t in turns]}")
    if [m["role"] for m in session[:4]] != ["user", "assistant", "tool", "assistant"] or not session[0]["content"].startswith(f"[{name}]"):
        problems.append("session.jsonl lost turn 1")
    if not events or events[-1]["type"] != "stop" or events[-1].get("reason") != expected_reason:
        problems.append(f"events.jsonl does not end with the stop: {events[-1:] }")
    if not recovered and not any(e["type"] == "notice" and e.get("level") == "error" for e in events):
        problems.append("no notice says why the run stopped")
    answer = job_dir / "work" / "ANSWER.md"
    if not answer.exists() or f"{name}: turn 1" not in answer.read_text():
        problems.append("turn 1's answer is gone")
    if not (job_dir / "timing.json").exists() or not (job_dir / "sources.json").exists():
        problems.append("timing.json or sources.json missing")
    return problems


def test_endpoint_faults_through_the_scheduler_and_connect_and_run(tmp_path: Path) -> None:
    script = Script()
    with ScriptedEndpoint(default=script) as endpoint:
        store = JobStore(tmp_path / "jobs")
        settings = Settings.resolve(
            env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="", retrieval_preset="packaged",
            searchbox_cache_dir=str(tmp_path / "cache"), turn_budget=2, force_budget=True, llm_attempts=2)
        source = write_tree(tmp_path / "room", SMALL_DATAROOM)
        scheduler = Scheduler(store, connect_and_run, settings)
        ids: dict[str, str] = {}
        # Every job after a faulty one is "the next run"; NEXT, with no fault at all, comes last.
        for name in [*SCENARIOS, "NEXT"]:
            overrides = dict(SCENARIOS[name].overrides) if name in SCENARIOS else {}
            record = store.create(f"[{name}] When does the office lease end?", source, overrides, "tester", settings)
            ids[name] = record.id
            assert scheduler.submit(record.id)
        scheduler.start()
        try:
            assert scheduler.wait_idle(WAIT_S)
        finally:
            scheduler.stop(timeout=WAIT_S)

    survived, lost, problems = 0, [], {}
    for name, job_id in ids.items():
        record = store.get(job_id)
        scenario = SCENARIOS.get(name)
        recovered = scenario is None or scenario.times == ONCE
        found = check_records(store.job_dir(job_id), name, recovered)
        if record is None or record.error is not None:  # run_fn raised: an exception escaped the run
            found.append(f"the run raised: {record.error if record else 'job gone'}")
        elif record.state != ("done" if recovered else "failed"):
            found.append(f"job state {record.state}")
        if found:
            problems[name] = found
            if record is None or record.state not in ("done", "failed") or not (store.job_dir(job_id) / "session.jsonl").exists():
                lost.append(name)
        elif scenario is not None:
            survived += 1
    served = sum(script.faults_served.values())
    report("faults endpoint", f"injected {len(SCENARIOS)}, survived {survived}, runs lost {len(lost)} "
          f"({served} faulty responses served; {sum(s.times == ONCE for s in SCENARIOS.values())} recovered by retry "
          f"or compaction, the rest error_llm)")
    assert not problems, problems
    assert survived == len(SCENARIOS) and not lost
    assert all(script.faults_served.get(name, 0) >= 1 for name in SCENARIOS)  # every fault was really met


def test_the_cli_against_an_endpoint_that_is_not_there(tmp_path: Path) -> None:
    out = tmp_path / "job"
    room = write_tree(tmp_path / "room", SMALL_DATAROOM)
    knobs = {"LLAMA_URL": f"http://127.0.0.1:{free_port()}/v1", "MODEL_ID": "nobody", "SEARCHBOX_TOOLS": "",
             "RETRIEVAL_PRESET": "packaged", "LLM_ATTEMPTS": "2", "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "searchbox", "run", "[CLI] When does the office lease end?", "--dataroom", str(room),
               "--out", str(out), *[arg for knob, value in knobs.items() for arg in ("--set", f"{knob}={value}")]]
    result = subprocess.run(command, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True,
                            text=True, timeout=WAIT_S)
    problems = []
    if result.returncode != 1 or "stop reason: error_llm" not in result.stdout:
        problems.append(f"exit {result.returncode}: {result.stdout[-1500:]}")
    if "Traceback" in result.stderr:
        problems.append(f"an exception escaped: {result.stderr[-1500:]}")
    meta = read_json(out / "run_meta.json", {}) or {}
    events = read_jsonl(out / "events.jsonl")
    session = read_jsonl(out / "session.jsonl")
    if meta.get("stop_reason") != "error_llm" or not events or events[-1]["type"] != "stop":
        problems.append(f"records: stop reason {meta.get('stop_reason')!r}, last event {events[-1:]}")
    if not session or session[0]["message"]["content"] != "[CLI] When does the office lease end?":
        problems.append("the session lost the question")
    if not any("ConnectError" in str(e.get("message", "")) for e in events if e["type"] == "notice"):
        problems.append("no notice names the connection error")
    report("faults endpoint (CLI)", f"injected 1, survived {int(not problems)}, runs lost {int(not session)}")
    assert not problems, problems
