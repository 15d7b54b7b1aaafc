"""The scheduler (design §3.1) with real runs: run_job over real job folders, talking HTTP to
the scripted endpoint.

Every job asks "[NAME] When does the office lease end?" and the endpoint answers by the conversation
so far: step 1 lists the dataroom, step 2 greps it, step 3 answers. Because the reply depends only on
the conversation, a preempted run that resumes from its session picks up exactly where it was. A test
holds a step with a gate (the endpoint blocks before answering), waits until the step has arrived,
acts (submit, pause, cancel), checks that the scheduler asked the run to stop, then opens the gate:
the run stops at its first delta. No sleeps, no timing races.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.app_server import free_port
from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from searchbox.agent.control import RunControl
from searchbox.records.events import Delta, Event, Listener
from searchbox.agent.run import run_job
from searchbox.jobs.scheduler import RunFn, Scheduler, pool_servers
from searchbox.jobs.store import JobRecord, JobStore
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.llm.endpoints import PoolError, Server
from searchbox.records.files import read_json, read_jsonl
from searchbox.settings import Settings
from searchbox.records.job_folder import JobFolder
from testkit.tally import report

WAIT_S = 30.0  # generous: a loaded 2-core machine must never fail a test by being slow
# A crash in the worker (or a test thread) must fail the test, not pass with a warning.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
_NAME = re.compile(r"^\[(\w+)\]")


def name_of(job_dir: Path) -> str:
    match = _NAME.match(JobFolder(job_dir).question())
    assert match
    return match.group(1)


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


class Script:
    """The endpoint's answers, per job, by the number of steps its conversation already holds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: dict[tuple[str, int], threading.Event] = {}
        self._arrived: dict[tuple[str, int], threading.Event] = {}
        self.broken: set[str] = set()  # jobs whose endpoint fails: error_llm

    def gate(self, name: str, step: int) -> threading.Event:
        """Hold this job's request for this step until the returned event is set."""
        with self._lock:
            return self._gates.setdefault((name, step), threading.Event())

    def arrived(self, name: str, step: int) -> threading.Event:
        with self._lock:
            return self._arrived.setdefault((name, step), threading.Event())

    def open_all(self) -> None:
        with self._lock:
            for gate in self._gates.values():
                gate.set()

    def __call__(self, body: dict[str, Any]) -> Reply | Fault:
        messages = body["messages"]
        match = _NAME.match(str(messages[1]["content"]))
        assert match, messages[1]
        name = match.group(1)
        step = 1 + sum(1 for m in messages if m["role"] == "assistant")
        self.arrived(name, step).set()
        with self._lock:
            gate = self._gates.get((name, step))
        if gate is not None:
            gate.wait(WAIT_S)
        if name in self.broken:
            return Fault.http(500, "scripted failure")
        if step == 1:
            return Reply(tool_calls=[{"name": "ls", "arguments": {"path": "dataroom"}}], chunk_chars=400)
        if step == 2:
            return Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": "Harbour"}}], chunk_chars=400)
        return Reply(text=f"{name}: the lease runs until 31 March 2029 [s1].", chunk_chars=8)


class Runner:
    """The production run_fn's shape (a model client, then run_job), logging what each run did."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.log: list[tuple[str, str]] = []  # (job name, "start" or the stop reason)
        self.controls: dict[str, RunControl] = {}
        self.raise_for: set[str] = set()

    def __call__(self, job_dir: Path, settings: Settings, control: RunControl, listeners: list[Listener]) -> str:
        name = name_of(job_dir)
        with self._lock:
            self.log.append((name, "start"))
            self.controls[name] = control
        if name in self.raise_for:
            raise RuntimeError(f"the model for {name} could not be loaded")
        client = OpenAIClient(settings.llama_url, settings.model_id, max_attempts=1)
        try:
            reason = run_job(job_dir, settings, client, listeners, control)
        finally:
            client.close()
        with self._lock:
            self.log.append((name, reason))
        return reason

    @property
    def starts(self) -> list[str]:
        return [name for name, what in self.log if what == "start"]

    def requested(self, name: str) -> str | None:
        with self._lock:
            control = self.controls.get(name)
        return control.requested if control is not None else None


class Env:
    def __init__(self, tmp_path: Path, endpoint: ScriptedEndpoint, script: Script) -> None:
        self.tmp_path = tmp_path
        self.script = script
        self.store = JobStore(tmp_path / "jobs")
        self.runner = Runner()
        self.settings = Settings.resolve(
            env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
            retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"))
        self.source = write_tree(tmp_path / "room", SMALL_DATAROOM)
        self.ids: dict[str, str] = {}
        self.schedulers: list[Scheduler] = []

    def make(self, name: str, owner: str = "alice") -> str:
        record = self.store.create(f"[{name}] When does the office lease end?", self.source, {}, owner, self.settings)
        self.ids[name] = record.id
        return record.id

    def scheduler(self, run_fn: RunFn | None = None, servers: list[Server] | None = None, **knobs: Any) -> Scheduler:
        settings = self.settings.with_overrides(**knobs) if knobs else self.settings
        scheduler = Scheduler(self.store, run_fn or self.runner, settings, servers, probe_every_s=0.1)
        self.schedulers.append(scheduler)
        return scheduler

    def record(self, name: str) -> JobRecord:
        record = self.store.get(self.ids[name])
        assert record is not None
        return record

    def set_state(self, name: str, state: str, **fields: Any) -> None:
        """Write a state to disk directly, as a previous app process would have left it."""
        record = self.record(name)
        record.state = state  # type: ignore[assignment]
        for key, value in fields.items():
            setattr(record, key, value)
        self.store.save(record)

    def pause_midway(self, name: str) -> None:
        """Run the job outside any scheduler and pause it after its first tool: it has a session."""
        control = RunControl()

        def pause_after_first_tool(event: Event) -> None:
            if event.type == "tool_end":
                control.request("paused")

        client = OpenAIClient(self.settings.llama_url, "scripted", max_attempts=1)
        job_dir = self.store.job_dir(self.ids[name])
        assert run_job(job_dir, self.settings, client, [pause_after_first_tool], control) == "paused"
        client.close()

    def tool_names(self, name: str) -> list[str]:
        events = read_jsonl(self.store.job_dir(self.ids[name]) / "events.jsonl")
        return [e["name"] for e in events if e["type"] == "tool_end"]

    def meta(self, name: str) -> dict[str, Any]:
        return read_json(self.store.job_dir(self.ids[name]) / "run_meta.json")

    def assert_done_in_one_session(self, name: str) -> None:
        """Finished, with the tool calls from before and after any stop in one continuous session."""
        record = self.record(name)
        assert (record.state, record.stop_reason) == ("done", "first_turn_done")
        job_dir = self.store.job_dir(record.id)
        assert self.tool_names(name) == ["ls", "grep"]
        messages = [r["message"] for r in read_jsonl(job_dir / "session.jsonl") if r["type"] == "message"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
        meta = self.meta(name)
        assert meta["done"] and meta["turns"] == 1 and meta["tool_calls"] == 2
        assert len(read_jsonl(job_dir / "turns.jsonl")) == 1
        assert (job_dir / "work" / "ANSWER.md").read_text().startswith(f"{name}: the lease runs until 31 March 2029 [s1].")


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    script = Script()
    with ScriptedEndpoint(default=script) as endpoint:
        environment = Env(tmp_path, endpoint, script)
        try:
            yield environment
        finally:
            script.open_all()
            for scheduler in environment.schedulers:
                scheduler.stop(timeout=WAIT_S)


def test_paused_runs_are_backfilled_oldest_idle_first(env: Env) -> None:
    for name in ("P1", "P2"):
        env.make(name)
        env.pause_midway(name)
    env.set_state("P1", "paused", last_active_at=2000.0)
    env.set_state("P2", "paused", last_active_at=1000.0)  # idle the longest
    scheduler = env.scheduler()
    scheduler.start()
    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["P2", "P1"]
    for name in ("P1", "P2"):
        env.assert_done_in_one_session(name)
        assert not env.record(name).foreground  # they ran as backfills
        run_starts = [e for e in read_jsonl(env.store.job_dir(env.ids[name]) / "events.jsonl") if e["type"] == "run_start"]
        assert [e["resumed"] for e in run_starts] == [False, True]


def test_a_fresh_submit_preempts_a_backfill(env: Env) -> None:
    env.make("P")
    env.pause_midway("P")
    env.set_state("P", "paused", last_active_at=1000.0)
    held_p, held_f = env.script.gate("P", 2), env.script.gate("F", 1)
    scheduler = env.scheduler()
    scheduler.start()
    assert env.script.arrived("P", 2).wait(WAIT_S)  # the backfill is mid-step

    assert scheduler.submit(env.make("F"))
    assert env.runner.requested("P") == "paused"
    held_p.set()
    assert env.script.arrived("F", 1).wait(WAIT_S)
    preempted, fresh = env.record("P"), env.record("F")
    assert (preempted.state, preempted.stop_reason) == ("paused", "paused") and preempted.preempted_at is not None
    assert fresh.state == "running" and fresh.foreground
    held_f.set()

    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.log == [("P", "start"), ("P", "paused"), ("F", "start"), ("F", "first_turn_done"),
                              ("P", "start"), ("P", "first_turn_done")]
    env.assert_done_in_one_session("P")
    env.assert_done_in_one_session("F")
    assert env.record("P").preempted_at is None


def test_a_second_foreground_run_preempts_the_first_which_resumes_after(env: Env) -> None:
    held_a, held_b = env.script.gate("A", 2), env.script.gate("B", 1)
    scheduler = env.scheduler()
    scheduler.start()
    assert scheduler.submit(env.make("A"))
    assert env.script.arrived("A", 2).wait(WAIT_S)  # A listed the dataroom and asks for step 2

    assert scheduler.submit(env.make("B"))
    assert env.runner.requested("A") == "paused"
    held_a.set()
    assert env.script.arrived("B", 1).wait(WAIT_S)
    first = env.record("A")
    assert first.state == "paused" and first.preempted_at is not None and first.foreground
    assert env.tool_names("A") == ["ls"]
    held_b.set()

    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.log == [("A", "start"), ("A", "paused"), ("B", "start"), ("B", "first_turn_done"),
                              ("A", "start"), ("A", "first_turn_done")]
    env.assert_done_in_one_session("A")  # ls before the preemption, grep after: one continuous run
    env.assert_done_in_one_session("B")


def test_preempted_runs_resume_as_a_stack(env: Env) -> None:
    held = {name: env.script.gate(name, step) for name, step in (("A", 2), ("B", 2), ("C", 1))}
    scheduler = env.scheduler()
    scheduler.start()
    scheduler.submit(env.make("A"))
    assert env.script.arrived("A", 2).wait(WAIT_S)
    scheduler.submit(env.make("B"))
    held["A"].set()
    assert env.script.arrived("B", 2).wait(WAIT_S)
    scheduler.submit(env.make("C"))
    assert env.runner.requested("B") == "paused"
    held["B"].set()
    assert env.script.arrived("C", 1).wait(WAIT_S)
    a, b = env.record("A"), env.record("B")
    assert a.state == b.state == "paused" and a.preempted_at is not None and b.preempted_at is not None
    assert b.preempted_at > a.preempted_at
    held["C"].set()

    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["A", "B", "C", "B", "A"]
    for name in "ABC":
        env.assert_done_in_one_session(name)


def test_a_preempted_run_goes_before_an_older_ordinary_paused_one(env: Env) -> None:
    env.make("O")
    env.pause_midway("O")
    env.set_state("O", "paused", last_active_at=1.0)  # idle for ages
    env.make("A")  # queued on disk: the queue goes before the pool
    held_a, held_b = env.script.gate("A", 2), env.script.gate("B", 1)
    scheduler = env.scheduler()
    scheduler.start()
    assert env.script.arrived("A", 2).wait(WAIT_S)
    scheduler.submit(env.make("B"))
    held_a.set()
    assert env.script.arrived("B", 1).wait(WAIT_S)
    assert env.record("O").state == "paused" and env.record("O").preempted_at is None
    held_b.set()

    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["A", "B", "A", "O"]
    for name in "ABO":
        env.assert_done_in_one_session(name)


def test_a_held_run_is_not_picked_up_until_resumed(env: Env) -> None:
    held_a = env.script.gate("A", 2)
    scheduler = env.scheduler()
    scheduler.start()
    scheduler.submit(env.make("A"))
    assert env.script.arrived("A", 2).wait(WAIT_S)
    assert scheduler.pause(env.ids["A"])
    assert env.runner.requested("A") == "paused"
    held_a.set()
    wait_until(lambda: env.record("A").state == "held", "A is held")
    assert not scheduler.pause(env.ids["A"])  # already held

    scheduler.submit(env.make("B"))
    assert scheduler.wait_idle(WAIT_S)  # idle although A waits: held runs are never backfilled
    assert env.runner.starts == ["A", "B"] and env.record("A").state == "held"

    assert scheduler.resume(env.ids["A"])
    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["A", "B", "A"]
    env.assert_done_in_one_session("A")
    assert not scheduler.resume(env.ids["A"]) and not scheduler.submit(env.ids["A"])  # finished: never again


def test_waiting_jobs_can_be_held_and_cancelled(env: Env) -> None:
    scheduler = env.scheduler()
    for name in ("Q1", "Q2", "Q3"):
        assert scheduler.submit(env.make(name))  # not started yet: they wait
    assert not scheduler.submit(env.ids["Q1"])  # already queued: never twice
    with pytest.raises(KeyError):
        scheduler.submit("no-such-job-0000000000")
    assert scheduler.pause(env.ids["Q2"]) and scheduler.cancel(env.ids["Q3"])
    assert env.record("Q2").state == "held"
    assert (env.record("Q3").state, env.record("Q3").stop_reason) == ("cancelled", "cancelled")
    assert scheduler.cancel(env.ids["Q2"]) is True and env.record("Q2").state == "cancelled"
    assert not scheduler.cancel(env.ids["Q2"])
    scheduler.start()
    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["Q1"]
    assert not (env.store.job_dir(env.ids["Q3"]) / "session.jsonl").exists()


def test_cancel_stops_a_running_run_even_one_being_preempted(env: Env) -> None:
    held_a = env.script.gate("A", 2)
    scheduler = env.scheduler()
    scheduler.start()
    scheduler.submit(env.make("A"))
    assert env.script.arrived("A", 2).wait(WAIT_S)
    scheduler.submit(env.make("B"))  # asks A to pause for B ...
    assert scheduler.cancel(env.ids["A"])  # ... and the cancel wins over the preemption
    held_a.set()
    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["A", "B"]
    assert env.record("A").state == "cancelled" and env.record("B").state == "done"
    assert not scheduler.cancel(env.ids["A"])
    assert scheduler.subscribe(env.ids["A"]).get(timeout=WAIT_S) is None  # nothing will run any more

    held_c = env.script.gate("C", 2)
    scheduler.submit(env.make("C"))
    assert env.script.arrived("C", 2).wait(WAIT_S)
    assert scheduler.cancel(env.ids["C"])
    assert env.runner.requested("C") == "cancelled"
    held_c.set()
    assert scheduler.wait_idle(WAIT_S)
    assert (env.record("C").state, env.record("C").stop_reason) == ("cancelled", "cancelled")
    assert env.meta("C")["stop_reason"] == "cancelled"


def test_restart_recovery(env: Env) -> None:
    env.make("R")
    env.pause_midway("R")
    env.set_state("R", "running")  # the app was killed while R ran
    env.make("H")
    env.set_state("H", "held")
    env.make("Q1")
    env.make("Q2")
    env.make("D")
    env.set_state("D", "done", stop_reason="first_turn_done")
    done_before = env.record("D")

    held_q1 = env.script.gate("Q1", 1)
    scheduler = env.scheduler()
    scheduler.start()
    assert env.script.arrived("Q1", 1).wait(WAIT_S)
    recovered = env.record("R")
    assert recovered.state == "paused" and recovered.preempted_at is None
    assert env.record("H").state == "held" and env.record("Q2").state == "queued"
    held_q1.set()

    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["Q1", "Q2", "R"]  # queued in created order, then the pool
    env.assert_done_in_one_session("R")
    assert env.record("H").state == "held"
    assert env.record("D") == done_before


def test_stop_interrupts_the_run_which_resumes_after_a_restart(env: Env) -> None:
    held_a = env.script.gate("A", 2)
    first = env.scheduler()
    first.start()
    first.submit(env.make("A"))
    assert env.script.arrived("A", 2).wait(WAIT_S)
    stopping = threading.Thread(target=first.stop, kwargs={"timeout": WAIT_S})
    stopping.start()
    wait_until(lambda: env.runner.requested("A") == "interrupted", "the stop reaches the run")
    held_a.set()
    stopping.join(WAIT_S)
    assert not stopping.is_alive()
    assert (env.record("A").state, env.record("A").stop_reason) == ("paused", "interrupted")

    second = env.scheduler()
    second.start()
    assert second.wait_idle(WAIT_S)
    assert env.runner.starts == ["A", "A"]
    env.assert_done_in_one_session("A")


def test_a_failing_run_is_recorded_and_the_next_job_still_runs(env: Env) -> None:
    env.runner.raise_for.add("X")
    env.script.broken.add("E")
    scheduler = env.scheduler()
    for name in ("X", "E", "Y"):
        scheduler.submit(env.make(name))
    scheduler.start()
    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["X", "E", "Y"]
    crashed, broken = env.record("X"), env.record("E")
    assert crashed.state == "failed" and crashed.error is not None and "could not be loaded" in crashed.error
    assert (broken.state, broken.stop_reason) == ("failed", "error_llm")
    env.assert_done_in_one_session("Y")


def test_subscribers_get_the_run_live_and_in_order(env: Env) -> None:
    held_a = env.script.gate("A", 2)
    scheduler = env.scheduler()
    scheduler.start()
    env.make("A")
    # Subscribed before submit, so not one event is missed; several subscribers get the same.
    early, also_early = scheduler.subscribe(env.ids["A"]), scheduler.subscribe(env.ids["A"])
    gone = scheduler.subscribe(env.ids["A"])
    scheduler.unsubscribe(env.ids["A"], gone)  # a closed browser tab
    version = scheduler.version
    scheduler.submit(env.ids["A"])
    assert scheduler.version > version  # a jobs table knows to refresh
    assert env.script.arrived("A", 2).wait(WAIT_S)
    late = scheduler.subscribe(env.ids["A"])
    held_a.set()

    def drain(subscription: Any) -> list[Event]:
        events = []
        while (event := subscription.get(timeout=WAIT_S)) is not None:
            events.append(event)
        return events

    seen, seen_too, seen_late = drain(early), drain(also_early), drain(late)
    assert seen == seen_too
    types = [e.type for e in seen]
    assert types[0] == "run_start" and types[-1] == "stop" and types.count("tool_end") == 2
    deltas = "".join(e.text for e in seen if isinstance(e, Delta))
    assert deltas == "A: the lease runs until 31 March 2029 [s1]."  # every delta, in order
    assert seen_late and seen_late == seen[-len(seen_late):] and "run_start" not in [e.type for e in seen_late]
    assert scheduler.wait_idle(WAIT_S)
    assert gone.empty()
    assert scheduler.subscribe(env.ids["A"]).get(timeout=WAIT_S) is None
    assert scheduler.subscribe("no-such-job-0000000000").get(timeout=WAIT_S) is None


def test_racing_submits_run_every_job_exactly_once(env: Env) -> None:
    """Submits from many threads at once, racing the worker as it starts runs: nothing lost or doubled,
    never two runs at a time, first starts in FIFO order (later runs are resumptions after preemption)."""
    lock = threading.Lock()
    starts: list[str] = []
    finished: list[str] = []
    running = [0, 0]  # now, most ever

    def run_fn(job_dir: Path, settings: Settings, control: RunControl, listeners: list[Listener]) -> str:
        with lock:
            starts.append(job_dir.name)
            running[0] += 1
            running[1] = max(running)
        try:
            for _ in range(5):  # a few checks of the control, as the loop makes between steps
                if control.requested:
                    return control.requested
                time.sleep(0.002)
            with lock:
                finished.append(job_dir.name)
            return "first_turn_done"
        finally:
            with lock:
                running[0] -= 1

    scheduler = env.scheduler(run_fn)
    scheduler.start()
    ids = [env.make(f"J{n}") for n in range(12)]  # after start, so only the submits queue them
    barrier = threading.Barrier(2 * len(ids))
    accepted: list[bool] = []

    def submit(job_id: str, delay_s: float) -> None:
        barrier.wait(WAIT_S)
        time.sleep(delay_s)  # spread the submits over the first runs' starts and stops
        accepted.append(scheduler.submit(job_id))

    delays = [random.Random(n).uniform(0, 0.05) for n in range(2 * len(ids))]
    threads = [threading.Thread(target=submit, args=(job_id, delay)) for job_id, delay in zip(ids * 2, delays)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert scheduler.wait_idle(WAIT_S)

    assert len(accepted) == 2 * len(ids) and accepted.count(True) == len(ids)
    assert sorted(finished) == sorted(ids) and running[1] == 1
    records = [env.store.get(job_id) for job_id in ids]
    assert all(r is not None and r.state == "done" for r in records)
    queue_order = [r.id for r in sorted(records, key=lambda r: r.queued_at)]  # type: ignore[union-attr]
    first_starts = list(dict.fromkeys(starts))
    assert first_starts == queue_order


def test_the_worker_survives_failing_bookkeeping_writes(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """job.json writes fail as on a full disk: once as X starts, always for Z (a folder that refuses
    writes), once as W's finished state is written. Each such job fails; the worker serves the rest."""
    import errno

    import searchbox.jobs.store as store_module

    real_write = store_module.write_json
    failures: dict[tuple[str, str], float] = {}  # (job id, state being written) -> writes left to fail
    injected = [0]

    def flaky_write(path: Path, data: Any) -> None:
        key = (path.parent.name, data.get("state"))
        if path.name == "job.json" and failures.get(key, 0) > 0:
            failures[key] -= 1
            injected[0] += 1
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write(path, data)

    monkeypatch.setattr(store_module, "write_json", flaky_write)
    scheduler = env.scheduler()
    for name in ("X", "Z", "W", "Y"):
        assert scheduler.submit(env.make(name))
    failures[(env.ids["X"], "running")] = 1
    failures[(env.ids["Z"], "running")] = failures[(env.ids["Z"], "failed")] = float("inf")
    failures[(env.ids["W"], "done")] = 1
    scheduler.start()
    assert scheduler.wait_idle(WAIT_S)

    assert env.runner.starts == ["W", "Y"]  # X and Z never ran: their start could not be recorded
    x, z, w = env.record("X"), env.record("Z"), env.record("W")
    assert x.state == "failed" and "No space left on device" in (x.error or "")
    assert z.state == "queued"  # its folder refuses every write: the disk keeps the last state it took ...
    assert env.ids["Z"] not in scheduler._jobs  # ... and this process does not try it again and again
    assert w.state == "failed" and "could not record" in (w.error or "")
    assert env.meta("W")["stop_reason"] == "first_turn_done"  # the run's own records are whole
    env.assert_done_in_one_session("Y")
    assert any(thread.name == "searchbox-scheduler" and thread.is_alive() for thread in scheduler._threads)
    assert scheduler.submit(env.make("V")) and scheduler.wait_idle(WAIT_S)  # still serving
    env.assert_done_in_one_session("V")

    lost = [name for name in ("W", "Y", "V") if env.record(name).stop_reason != "first_turn_done"]
    survived = 3 - sum(1 for name in ("X", "Z", "W") if env.ids[name] in scheduler._jobs)
    report("faults scheduler", f"{injected[0]} failing job.json writes on 3 jobs, worker kept serving "
          f"after {survived} of 3, runs lost {len(lost)}")
    assert injected[0] >= 4 and survived == 3 and not lost


def test_another_visitors_run_preempts_only_once_the_running_one_had_its_fair_share(env: Env) -> None:
    """Every new run preempted the running one at once: a stranger's stream of submits kept every other
    visitor's run paused."""
    held_a = env.script.gate("A", 2)
    scheduler = env.scheduler(searchbox_fair_share_seconds=2)
    scheduler.start()
    started = time.monotonic()
    scheduler.submit(env.make("A", owner="alice"))
    assert env.script.arrived("A", 2).wait(WAIT_S)
    assert scheduler.submit(env.make("B", owner="mallory"))
    assert env.runner.requested("A") is None  # not yet: A has not had its 2 s
    wait_until(lambda: env.runner.requested("A") == "paused", "A's share is spent and B preempts it")
    assert time.monotonic() - started >= 2
    held_a.set()
    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["A", "B", "A"]  # then as ever: B, and A resumes from its session
    env.assert_done_in_one_session("A")
    env.assert_done_in_one_session("B")


def test_in_an_operators_app_a_new_run_preempts_at_once(env: Env) -> None:
    held_a = env.script.gate("A", 2)
    scheduler = env.scheduler(searchbox_fair_share_seconds=3600, searchbox_operator=True)
    scheduler.start()
    scheduler.submit(env.make("A", owner="alice"))
    assert env.script.arrived("A", 2).wait(WAIT_S)
    scheduler.submit(env.make("B", owner="bob"))
    assert env.runner.requested("A") == "paused"
    held_a.set()
    assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts == ["A", "B", "A"]


# -- a pool of model servers: several slots at once ------------------------------------------------------


def ran_on(env: Env, name: str) -> list[tuple[str | None, int]]:
    """(server URL, slot) of each time the job ran."""
    return [(p["server"], p["slot"]) for p in env.record(name).placements]


def test_runs_go_first_in_first_out_onto_every_free_slot_of_the_pool(env: Env) -> None:
    with ScriptedEndpoint(default=env.script) as big, ScriptedEndpoint(default=env.script) as small:
        held = {name: env.script.gate(name, 2) for name in "ABCD"}
        scheduler = env.scheduler(servers=[Server(big.url, 2), Server(small.url, 1)], searchbox_fair_share_seconds=3600)
        scheduler.start()
        for name, owner in (("A", "alice"), ("B", "bob"), ("C", "carol")):
            assert scheduler.submit(env.make(name, owner))
        for name in "ABC":
            assert env.script.arrived(name, 2).wait(WAIT_S)  # three runs at once
        # The server with the most free slots first, ties in pool order; no server past its slots.
        assert [ran_on(env, name) for name in "ABC"] == [[(big.url, 1)], [(big.url, 2)], [(small.url, 1)]]
        assert scheduler.submit(env.make("D", "dave"))
        standing = scheduler.standing(env.ids["D"])
        assert (standing.state, standing.place, standing.waiting, standing.busy, standing.slots) == ("queued", 1, 1, 3, 3)
        assert all(env.runner.requested(name) is None for name in "ABC")  # others' runs keep their slots for their share
        held["B"].set()
        assert env.script.arrived("D", 2).wait(WAIT_S)
        assert ran_on(env, "D") == [(big.url, 2)]  # the slot B left
        assert scheduler.standing(env.ids["D"]).place is None
        env.script.open_all()
        assert scheduler.wait_idle(WAIT_S)
    assert env.runner.starts[3:] == ["D"] and sorted(env.runner.starts) == ["A", "B", "C", "D"]  # each ran once
    for name in "ABCD":
        env.assert_done_in_one_session(name)


def test_one_visitor_cannot_keep_every_slot_while_another_waits(env: Env) -> None:
    with ScriptedEndpoint(default=env.script) as endpoint:
        held = {name: env.script.gate(name, 2) for name in ("G1", "G2", "G3", "F")}
        scheduler = env.scheduler(servers=[Server(endpoint.url, 2)], searchbox_fair_share_seconds=2)
        scheduler.start()
        submitted: dict[str, float] = {}
        for name in ("G1", "G2"):
            submitted[name] = time.monotonic()
            scheduler.submit(env.make(name, "greedy"))
            assert env.script.arrived(name, 2).wait(WAIT_S)
        # Every slot busy: the visitor's own newest run takes the slot of their run that ran longest, at once.
        scheduler.submit(env.make("G3", "greedy"))
        assert env.runner.requested("G1") == "paused" and env.runner.requested("G2") is None
        held["G1"].set()
        assert env.script.arrived("G3", 2).wait(WAIT_S)

        scheduler.submit(env.make("F", "fair"))
        assert scheduler.standing(env.ids["F"]).place == 1
        wait_until(lambda: env.runner.requested("G2") == "paused", "the greedy visitor's longest run gives F its slot")
        assert time.monotonic() - submitted["G2"] >= 2  # not before it had its share
        assert env.runner.requested("G3") is None
        held["G2"].set()
        assert env.script.arrived("F", 2).wait(WAIT_S)
        assert sorted(r.owner for r in scheduler.store.list() if r.state == "running") == ["fair", "greedy"]
        env.script.open_all()
        assert scheduler.wait_idle(WAIT_S)
    assert sorted(env.runner.starts[:2]) == ["G1", "G2"] and env.runner.starts[2:4] == ["G3", "F"]
    g1, g2 = env.record("G1"), env.record("G2")
    assert g2.placements[1]["started_at"] < g1.placements[1]["started_at"]  # the preempted resume as a stack
    for name in ("G1", "G2", "G3", "F"):
        env.assert_done_in_one_session(name)


def test_a_free_slot_goes_first_to_the_visitor_holding_the_fewest(env: Env) -> None:
    for name in ("G1", "G2", "G3"):
        env.make(name, "greedy")
    env.make("F", "fair")  # queued last: first in first out alone would run it last
    with ScriptedEndpoint(default=env.script) as endpoint:
        held = {name: env.script.gate(name, 2) for name in ("G1", "G2", "G3", "F")}
        scheduler = env.scheduler(servers=[Server(endpoint.url, 2)])
        scheduler.start()
        for name in ("G1", "F"):
            assert env.script.arrived(name, 2).wait(WAIT_S)
        assert [scheduler.standing(env.ids[name]).place for name in ("G2", "G3")] == [1, 2]
        held["F"].set()  # F's slot frees; greedy's next run takes it
        assert env.script.arrived("G2", 2).wait(WAIT_S)
        env.script.open_all()
        assert scheduler.wait_idle(WAIT_S)
    assert sorted(env.runner.starts[:2]) == ["F", "G1"] and sorted(env.runner.starts[2:]) == ["G2", "G3"]
    for name in ("G1", "G2", "G3", "F"):
        env.assert_done_in_one_session(name)


def test_a_server_killed_mid_run_leaves_the_pool_and_its_run_resumes_on_another_once(env: Env) -> None:
    killed = threading.Event()

    def dying(body: dict[str, Any]) -> Reply | Fault:
        reply = env.script(body)
        return Fault.refuse() if killed.is_set() else reply  # a request in flight when it died gets no answer

    doomed = ScriptedEndpoint(default=dying, port=free_port())
    doomed_url = doomed.start()
    try:
        with ScriptedEndpoint(default=env.script) as other:
            held = {name: env.script.gate(name, 2) for name in "ABCD"}
            scheduler = env.scheduler(servers=[Server(doomed_url, 1), Server(other.url, 1)])
            scheduler.start()
            scheduler.submit(env.make("A", "alice"))
            assert env.script.arrived("A", 2).wait(WAIT_S)
            scheduler.submit(env.make("B", "bob"))
            assert env.script.arrived("B", 2).wait(WAIT_S)
            assert ran_on(env, "A") == [(doomed_url, 1)] and ran_on(env, "B") == [(other.url, 1)]

            killed.set()
            doomed.stop()  # it stops listening with A's step 2 in it
            held["A"].set()
            wait_until(lambda: env.record("A").state == "paused", "A's run stops and goes back in line")
            lost = env.record("A")
            assert lost.preempted_at is not None and lost.placements[0]["server_down"]
            assert lost.placements[0]["stop_reason"] == "error_llm"
            standing = scheduler.standing(lost.id)
            assert (standing.place, standing.busy, standing.slots, standing.servers_down) == (1, 1, 1, 1)
            held["B"].set()
            assert scheduler.wait_idle(WAIT_S)
            assert ran_on(env, "A") == [(doomed_url, 1), (other.url, 1)]
            for name in "AB":  # nothing lost, no tool run twice: one continuous session each
                env.assert_done_in_one_session(name)

            killed.clear()
            doomed.start()  # it answers GET /v1/models again, at the same address
            wait_until(lambda: scheduler.standing(lost.id).slots == 2, "the server is back in the pool")
            for name, owner in (("C", "carol"), ("D", "dave")):
                scheduler.submit(env.make(name, owner))
                assert env.script.arrived(name, 2).wait(WAIT_S)
            assert {ran_on(env, "C")[0][0], ran_on(env, "D")[0][0]} == {doomed_url, other.url}
            env.script.open_all()
            assert scheduler.wait_idle(WAIT_S)
    finally:
        doomed.stop()
    assert sorted(env.runner.starts) == ["A", "A", "B", "C", "D"]
    for name in "CD":
        env.assert_done_in_one_session(name)


def test_stop_interrupts_every_running_run_and_a_restart_resumes_each(env: Env) -> None:
    with ScriptedEndpoint(default=env.script) as endpoint:
        servers = [Server(endpoint.url, 2)]
        for name in "AB":
            env.script.gate(name, 2)  # both held mid-run until the stop reaches them
        first = env.scheduler(servers=servers)
        first.start()
        for name, owner in (("A", "alice"), ("B", "bob")):
            first.submit(env.make(name, owner))
            assert env.script.arrived(name, 2).wait(WAIT_S)
        stopping = threading.Thread(target=first.stop, kwargs={"timeout": WAIT_S})
        stopping.start()
        wait_until(lambda: all(env.runner.requested(name) == "interrupted" for name in "AB"), "the stop reaches both")
        env.script.open_all()
        stopping.join(WAIT_S)
        assert not stopping.is_alive() and not first._threads
        assert [(env.record(name).state, env.record(name).stop_reason) for name in "AB"] == [("paused", "interrupted")] * 2

        second = env.scheduler(servers=servers)
        second.start()
        assert second.wait_idle(WAIT_S)
    for name in "AB":
        env.assert_done_in_one_session(name)
        assert len(env.record(name).placements) == 2


def test_a_malformed_pool_is_refused_naming_the_knob(tmp_path: Path) -> None:
    assert pool_servers(Settings.resolve(env={})) == [Server(None)]
    pool = tmp_path / "pool.txt"
    pool.write_text("http://gpu1:8080/v1=4  # four slots\nhttp://gpu2:8080/v1\n")
    assert pool_servers(Settings.resolve(env={"SEARCHBOX_ENDPOINTS": f"@{pool}"})) == [
        Server("http://gpu1:8080/v1", 4), Server("http://gpu2:8080/v1", 1)]
    for spec, message in [("http://a/v1=0", "at least 1"), ("gpu1:8080=2", "not an http"),
                          (f"@{tmp_path / 'none.txt'}", "cannot read"), ("http://a/v1,http://a/v1", "named twice")]:
        with pytest.raises(PoolError, match=f"^SEARCHBOX_ENDPOINTS: .*{message}"):
            pool_servers(Settings.resolve(env={"SEARCHBOX_ENDPOINTS": spec}))
