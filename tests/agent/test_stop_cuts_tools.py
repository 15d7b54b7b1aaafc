"""Stop means stop (design §5): Pause and Stop end a running tool (a bash command with everything it
started, ripgrep, an embedding) at once, the run records how the call ended, and a resumed run tells
the model the call was cut instead of running it again.

Runs are real (run_job and the scheduler over real job folders, the real sandbox, the packaged MiniLM)
against the scripted endpoint. The bounds on seconds are generous, for a loaded 2-core machine: the
figures come from bench/stop_latency.py.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.control import RunControl
from searchbox.agent.run import connect_and_run
from searchbox.cancel import Cancelled, CancelToken
from searchbox.jobs.job import create_job
from searchbox.jobs.scheduler import Scheduler
from searchbox.jobs.store import JobStore
from searchbox.records.events import Event, EventBus, ToolStart
from searchbox.records.files import read_jsonl
from searchbox.records.job_folder import JobFolder
from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.encoder import Encoder
from searchbox.settings import Settings
from searchbox.tools.registry import REGISTRY
from searchbox.tools.tool import ToolContext
from searchbox.citations.ledger import SourceLedger
from searchbox.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "When does the office lease end?"
WAIT_S = 60.0
BOUND_S = 10.0  # from the request to the run being paused or stopped; the bench measures well under 1 s
SLEEP = "sleep 299.5"  # a number no other process on the machine sleeps for, to look for leftovers


def _sleepers() -> list[str]:
    found = subprocess.run(["pgrep", "-af", SLEEP], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if "pgrep" not in line]


def _answer(body: dict[str, Any]) -> Reply:
    """Step 1 runs a long bash command in the background (so the run can still be stopped from its
    shell), its own timeout far away; once the model has its result, it answers."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(text="The lease runs until 31 March 2029.")
    return Reply(tool_calls=[{"name": "bash", "arguments": {"command": f"{SLEEP} & {SLEEP}", "timeout": 120}}])


def _settings(tmp_path: Path, url: str, **overrides: Any) -> Settings:
    return Settings.resolve(env={}, **{"llama_url": url, "model_id": "scripted", "llm_attempts": 1, "searchbox_tools": "",
                                       "retrieval_preset": "packaged", "searchbox_cache_dir": str(tmp_path / "cache"),
                                       **overrides})


def _wait_for(events: queue.Queue[Event | None], kind: str, name: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while True:
        event = events.get(timeout=max(deadline - time.monotonic(), 0.01))
        assert event is not None, f"the run stopped before its {name} {kind}"
        if event.type == kind and getattr(event, "name", None) == name:
            return


def _stop_bash_through_the_scheduler(tmp_path: Path, endpoint: ScriptedEndpoint, how: str) -> tuple[Scheduler, JobStore, str, float]:
    """A scheduled run is asked to stop (`how`: pause or cancel, as the app's buttons do) while its bash
    command runs; returns the seconds from the request to the job's new state."""
    store = JobStore(tmp_path / "jobs")
    settings = _settings(tmp_path, endpoint.url)
    scheduler = Scheduler(store, connect_and_run, settings)
    scheduler.start()
    record = store.create(QUESTION, write_tree(tmp_path / "room", SMALL_DATAROOM), {}, "alice", settings)
    events = scheduler.subscribe(record.id)
    scheduler.submit(record.id)
    _wait_for(events, "tool_start", "bash")
    deadline = time.monotonic() + WAIT_S
    while not _sleepers():  # the command runs
        assert time.monotonic() < deadline, "the bash command never started"
        time.sleep(0.05)
    asked = time.monotonic()
    assert getattr(scheduler, how)(record.id)
    state = "held" if how == "pause" else "cancelled"
    while (current := store.get(record.id)) is None or current.state != state:
        assert time.monotonic() - asked < WAIT_S, f"the job never became {state}"
        time.sleep(0.01)
    return scheduler, store, record.id, time.monotonic() - asked


def _tool_ends(job_dir: Path) -> list[dict[str, Any]]:
    return [row for row in read_jsonl(job_dir / "events.jsonl") if row["type"] == "tool_end"]


def test_stop_ends_a_running_bash_command_and_all_it_started(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=_answer) as endpoint:
        scheduler, store, job_id, seconds = _stop_bash_through_the_scheduler(tmp_path, endpoint, "cancel")
        scheduler.stop(timeout=WAIT_S)
    assert seconds < BOUND_S
    assert _sleepers() == []  # the background sleep too
    [end] = _tool_ends(store.job_dir(job_id))
    assert end["ended"] == "cut_by_stop" and end["is_error"]
    assert end["duration_ms"] < 120_000
    record = store.get(job_id)
    assert record is not None and record.stop_reason == "cancelled"


def test_pause_cuts_bash_and_the_resumed_run_tells_the_model_instead_of_running_it_again(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=_answer) as endpoint:
        scheduler, store, job_id, seconds = _stop_bash_through_the_scheduler(tmp_path, endpoint, "pause")
        assert seconds < BOUND_S
        assert _sleepers() == []
        job_dir = store.job_dir(job_id)
        [end] = _tool_ends(job_dir)
        assert end["ended"] == "cut_by_pause"
        assert scheduler.resume(job_id)
        assert scheduler.wait_idle(WAIT_S)
        scheduler.stop(timeout=WAIT_S)
        requests = [r.body["messages"] for r in endpoint.requests]
    record = store.get(job_id)
    assert record is not None and (record.state, record.stop_reason) == ("done", "first_turn_done")
    # One bash call in all: the resumed run did not run the cut command again (nor ask the model again).
    assert [e["type"] for e in read_jsonl(job_dir / "events.jsonl")].count("tool_start") == 1
    assert len(requests) == 2
    cut_result = requests[1][-1]
    assert cut_result["role"] == "tool"
    assert "cut before it finished: the run was paused" in cut_result["content"]
    assert "not run again" in cut_result["content"]
    session = [row for row in read_jsonl(job_dir / "session.jsonl") if row["message"]["role"] == "tool"]
    assert [row["ended"] for row in session] == ["cut_by_pause"]


def test_the_run_ceiling_cuts_a_running_command(tmp_path: Path) -> None:
    """A run's time limits, like a pause, no longer wait for the tool that runs to end."""
    with ScriptedEndpoint(default=_answer) as endpoint:
        settings = _settings(tmp_path, endpoint.url, ceiling_seconds=3)
        job_dir = tmp_path / "job"
        create_job(job_dir, QUESTION, write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
        started = time.monotonic()
        reason = connect_and_run(job_dir, settings, RunControl(), [])
    assert reason == "ceiling_seconds"
    assert time.monotonic() - started < 3 + BOUND_S
    assert [e["ended"] for e in _tool_ends(job_dir)] == ["cut_by_ceiling"]
    assert _sleepers() == []


def test_a_cut_ends_a_long_ripgrep_search(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    with open(work / "huge.bin", "wb") as handle:  # sparse: no disk used, minutes of reading for ripgrep
        handle.truncate(64 * 2**30)
    token = CancelToken()
    context = ToolContext(work, SourceLedger(), cancel=token)
    asked: list[float] = []

    def pause_soon() -> None:
        time.sleep(1.0)
        asked.append(time.monotonic())
        token.request("paused")

    threading.Thread(target=pause_soon, daemon=True).start()
    output = REGISTRY["grep"].run(context, {"pattern": "needle", "path": "huge.bin"})
    assert time.monotonic() - asked[0] < BOUND_S
    assert output.ended == "cut_by_pause" and output.is_error
    assert "grep was cut before it finished: the run was paused" in output.text


class _PausingEmbedder:
    """The packaged MiniLM, and a pause requested as its first batch ends: the next must not start."""

    def __init__(self, minilm: Any, token: CancelToken) -> None:
        self.inner, self.token = minilm[0], token
        self.name = self.inner.name
        self.batches: list[int] = []

    def embed(self, texts: list[str], role: Any) -> np.ndarray:
        vectors = self.inner.embed(texts, role)
        self.batches.append(len(texts))
        self.token.request("paused")
        return vectors


def test_an_embedding_is_cut_between_batches_and_keeps_what_it_made(minilm: Any) -> None:
    token = CancelToken()
    embedder = _PausingEmbedder(minilm, token)
    cache = EmbeddingCache()
    encoder = Encoder("packaged:minilm", lambda: (embedder, minilm[1]), cache, token)
    texts = [f"passage {n}: the office lease at {n} Harbour Street runs until 2029." for n in range(40)]
    with pytest.raises(Cancelled) as cut:
        encoder.encode(texts, "passage")
    assert cut.value.ended == "cut_by_pause"
    assert embedder.batches == [1]
    kept = cache.get_many("packaged:minilm", "passage", texts)
    assert sum(v is not None for v in kept) == 1  # the finished batch is kept for the resumed run


class _StuckEmbedder:
    """A batch that takes a minute (a big model on a slow CPU)."""

    name = "stuck"

    def __init__(self) -> None:
        self.release = threading.Event()

    def embed(self, texts: list[str], role: Any) -> np.ndarray:
        self.release.wait(WAIT_S)
        return np.ones((len(texts), 4), dtype=np.float32) / 2


@pytest.mark.parametrize("stuck_in", ["load", "batch"])
def test_a_cut_does_not_wait_for_a_model_load_or_the_batch_under_way(minilm: Any, stuck_in: str) -> None:
    token = CancelToken()
    embedder = _StuckEmbedder()

    def load() -> tuple[Any, Any]:
        if stuck_in == "load":
            embedder.release.wait(WAIT_S)
        return embedder, minilm[1]

    encoder = Encoder("stuck", load, EmbeddingCache(), token)
    threading.Timer(0.5, token.request, ["cancelled"]).start()
    started = time.monotonic()
    try:
        with pytest.raises(Cancelled) as cut:
            encoder.encode(["one text", "another"], "passage")
    finally:
        embedder.release.set()
    assert time.monotonic() - started < BOUND_S
    assert cut.value.ended == "cut_by_stop"


def test_a_cut_does_not_wait_for_the_dataroom_extraction(small_work: Path, packaged_settings: Settings,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def slow_extraction(work_dir: Path, settings: Settings) -> None:
        release.wait(WAIT_S)  # a dataroom of many PDFs

    monkeypatch.setattr("searchbox.workspace.load_corpus", slow_extraction)
    token = CancelToken()
    workspace = Workspace(small_work.parent, packaged_settings, cancel=token)
    threading.Timer(0.5, token.request, ["paused"]).start()
    started = time.monotonic()
    try:
        with pytest.raises(Cancelled):
            workspace.corpus
    finally:
        release.set()
    assert time.monotonic() - started < BOUND_S


def test_a_paused_search_records_its_cut_and_is_not_run_again_on_resume(tmp_path: Path, minilm: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """search_dataroom embeds the dataroom on its first use: a pause cuts that embedding."""
    control = RunControl()
    embedder = _PausingEmbedder(minilm, control.token)
    monkeypatch.setattr("searchbox.retrieval.engine.load_embedder", lambda settings: (embedder, minilm[1]))

    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(text="The lease runs until 31 March 2029.")
        return Reply(tool_calls=[{"name": "search_dataroom", "arguments": {"query": "office lease end"}}])

    with ScriptedEndpoint(default=answer) as endpoint:
        # The background indexer would embed beside the search: this test is about the search's own batches.
        settings = _settings(tmp_path, endpoint.url, searchbox_tools="search_dataroom", background_index=False)
        job_dir = tmp_path / "job"
        create_job(job_dir, QUESTION, write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
        assert connect_and_run(job_dir, settings, control, []) == "paused"
        [end] = _tool_ends(job_dir)
        assert end["ended"] == "cut_by_pause" and end["is_error"]
        assert embedder.batches == [1]
        assert connect_and_run(job_dir, settings, RunControl(), []) == "first_turn_done"
        resumed = endpoint.requests[-1].body["messages"]
    assert len(_tool_ends(job_dir)) == 1
    assert "search_dataroom was cut before it finished: the run was paused" in resumed[-1]["content"]


def test_a_command_that_ends_by_itself_is_recorded_completed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    output = REGISTRY["bash"].run(ToolContext(work, SourceLedger(), cancel=CancelToken()), {"command": "echo hi"})
    assert (output.ended, output.text) == ("completed", "hi")
    timed = REGISTRY["bash"].run(ToolContext(work, SourceLedger(), cancel=CancelToken()),
                        {"command": "sleep 30", "timeout": 1})
    assert timed.ended == "timed_out"


@pytest.mark.slow
def test_ctrl_c_in_the_cli_cuts_the_command_and_stops_the_run_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "job"
    with ScriptedEndpoint(default=_answer) as endpoint:
        command = [sys.executable, "-m", "searchbox", "run", QUESTION, "--out", str(out),
                   "--dataroom", str(write_tree(tmp_path / "room", SMALL_DATAROOM))]
        for knob, value in {"LLAMA_URL": endpoint.url, "MODEL_ID": "scripted", "SEARCHBOX_TOOLS": "",
                            "RETRIEVAL_PRESET": "packaged", "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}.items():
            command += ["--set", f"{knob}={value}"]
        cli = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + WAIT_S
            while not _sleepers():
                assert cli.poll() is None and time.monotonic() < deadline, "the bash command never started"
                time.sleep(0.05)
            asked = time.monotonic()
            cli.send_signal(signal.SIGINT)
            printed, _ = cli.communicate(timeout=WAIT_S)
            seconds = time.monotonic() - asked
        finally:
            cli.kill()
    assert seconds < BOUND_S, printed
    assert "stop reason: interrupted" in printed
    assert _sleepers() == []
    assert [e["ended"] for e in _tool_ends(out)] == ["cut_by_interrupt"]
    assert read_jsonl(out / "events.jsonl")[-1]["type"] == "stop"  # the records end whole


def test_a_call_the_app_died_in_is_not_run_again_on_resume(tmp_path: Path) -> None:
    """It may be what killed the app: run again, it would kill every restart."""
    control = RunControl()

    def pause_after_the_response(event: Event) -> None:
        if event.type == "step_end":
            control.request("paused")

    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(text="The lease runs until 31 March 2029.")
        return Reply(tool_calls=[{"name": "bash", "arguments": {"command": SLEEP, "timeout": 5}},
                                 {"name": "ls", "arguments": {}}])

    with ScriptedEndpoint(default=answer) as endpoint:
        settings = _settings(tmp_path, endpoint.url)
        job_dir = tmp_path / "job"
        create_job(job_dir, QUESTION, write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
        assert connect_and_run(job_dir, settings, control, [pause_after_the_response]) == "paused"
        # What a SIGKILL while bash ran leaves: the call's start recorded, no result.
        [response] = [row["message"] for row in read_jsonl(job_dir / "session.jsonl")
                      if row["message"]["role"] == "assistant"]
        bash_call = response["tool_calls"][0]
        EventBus(JobFolder(job_dir).events).emit(ToolStart(call_id=bash_call["id"], name="bash",
                                                           arguments={"command": SLEEP}, raw_arguments=""))
        assert connect_and_run(job_dir, settings, RunControl(), []) == "first_turn_done"
        resumed = endpoint.requests[-1].body["messages"]
    assert [(e["name"], e["ended"]) for e in _tool_ends(job_dir)] == [("bash", "cut_by_crash"), ("ls", "completed")]
    assert "bash was cut before it finished: the app stopped while it ran" in resumed[-2]["content"]
    assert _sleepers() == []
