"""The app over a pool of model servers (SEARCHBOX_ENDPOINTS), with real servers on 127.0.0.1 serving the
packaged 0.5B model and two visitors whose runs are submitted at once: two `python -m llama_cpp.server`
processes, one slot each (it serves one request at a time), where each run gets a server of its own; and one
llama.cpp `llama-server --parallel 2`, where each run gets a slot of it. Either way the two run at the same
time, and each job.json says which server and slot ran it. And what the page says of where a run stands.
Faults (a server killed mid-run) are in tests/jobs/test_scheduler.py, against scripted servers."""

from __future__ import annotations

import re
import threading
from contextlib import ExitStack
from pathlib import Path

import pytest
from gradio_client import Client

from testkit.app_server import running_app
from testkit.llama_server import ALIAS, LLAMA_CPP_SERVER, LLAMA_SERVER, llama_cpp_server, llama_server, missing
from testkit.load_harness import search_args
from searchbox.agent.control import RunControl
from searchbox.records.events import Listener
from searchbox.records.files import read_json
from searchbox.settings import Settings

KEY = "sk-pool-8d2e6b0a4c1f9e37"


def test_the_page_says_a_waiting_runs_place_in_line_and_a_running_ones_server(tmp_path: Path) -> None:
    from conftest import SMALL_DATAROOM, write_tree
    from searchbox.ui.jobs_view import COLUMNS, JobsView
    from searchbox.ui.run_view import RunView
    from searchbox.ui.services import Services

    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    release, started = threading.Event(), threading.Event()

    def run_fn(job_dir: Path, settings: Settings, control: RunControl, listeners: list[Listener]) -> str:
        started.set()
        assert settings.llama_url == "http://127.0.0.1:9/v1"  # the pool's server, not LLAMA_URL
        release.wait(30)
        return "first_turn_done"

    for operator in (False, True):
        started.clear()
        release.clear()
        settings = Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / f"jobs-{operator}"),
                                    llama_url="http://127.0.0.1:8/v1", searchbox_endpoints="http://127.0.0.1:9/v1=1",
                                    searchbox_operator=operator, searchbox_fair_share_seconds=3600)
        services = Services.start(settings, run_fn=run_fn)
        try:
            first = services.store.create("Q1?", source, {}, "alice", settings)
            second = services.store.create("Q2?", source, {}, "bob", settings)
            services.scheduler.submit(first.id)
            assert started.wait(30)
            services.scheduler.submit(second.id)
            view = RunView(services)
            server = "http://127.0.0.1:9/v1" if operator else "server 1"
            assert view._status(first.id).endswith(f"**running** · job `{first.id[:8]}` · on {server} · slot 1 · "
                                                   "1 of 1 slot busy")
            assert view._status(second.id).endswith("**queued** · job `" + second.id[:8] + "` · 1st of 1 in line · "
                                                    "1 of 1 slot busy")
            rows, _, ids = JobsView(services).table("alice")
            assert rows[ids.index(first.id)][COLUMNS.index("server")] == f"{server} · slot 1"
            release.set()
            assert services.scheduler.wait_idle(30)
            assert view._status(second.id).endswith("**done** (first_turn_done) · job `" + second.id[:8] + "`")
        finally:
            release.set()
            services.scheduler.stop(30)


@pytest.mark.real_model
@pytest.mark.slow
def test_two_visitors_runs_overlap_one_on_each_server_of_the_pool(tmp_path: Path) -> None:
    problem = missing(LLAMA_CPP_SERVER)
    if problem:
        pytest.skip(problem)
    with ExitStack() as stack:
        # One thread each: the two share this machine's cores, and both must answer at the same time.
        folders = [tmp_path / f"server-{n}" for n in (1, 2)]
        for folder in folders:
            folder.mkdir()
        urls = [stack.enter_context(llama_cpp_server(folder, n_ctx=4096, threads=1)) for folder in folders]
        statuses = _two_visitors_at_once(stack, tmp_path, ",".join(f"{u}=1" for u in urls))
    first, second = _ran_once_each_at_the_same_time(tmp_path, statuses)
    assert {first["server"], second["server"]} == set(urls) and first["slot"] == second["slot"] == 1


@pytest.mark.real_model
@pytest.mark.slow
def test_two_visitors_runs_overlap_on_the_two_slots_of_one_llama_server(tmp_path: Path) -> None:
    problem = missing(LLAMA_SERVER)
    if problem:
        pytest.skip(problem)
    with ExitStack() as stack:
        (tmp_path / "server").mkdir()
        # Two slots of 4096 tokens each (llama-server splits its context over its slots), as CONTEXT_WINDOW says;
        # the key the seed's deployment sets, which the app sends the pool's servers. One thread, which decodes both
        # slots' tokens in one batch: the app's own work needs the other core.
        url = stack.enter_context(llama_server(tmp_path / "server", n_ctx=8192, threads=1, parallel=2, api_key=KEY))
        statuses = _two_visitors_at_once(stack, tmp_path, f"{url}=2", LLAMA_API_KEY=KEY)
    first, second = _ran_once_each_at_the_same_time(tmp_path, statuses)
    assert first["server"] == second["server"] == url and {first["slot"], second["slot"]} == {1, 2}
    # The server decoded them on two slots of its own, not one after the other on one.
    log = (tmp_path / "server" / "server.log").read_text(errors="replace")
    assert {int(n) for n in re.findall(r"slot launch_slot_: id +(\d+)", log)} == {0, 1}, log[-3000:]
    assert not [p for p in (tmp_path / "jobs").rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def _two_visitors_at_once(stack: ExitStack, tmp_path: Path, pool: str, **env: str) -> dict[str, str]:
    """Two visitors' runs submitted together to the app over `pool`; each one's final status line."""
    app = stack.enter_context(running_app(tmp_path, SEARCHBOX_ENDPOINTS=pool, MODEL_ID=ALIAS, MAX_OUTPUT_TOKENS="32",
                                          MAX_STEPS_PER_TURN="1", FORCE_TOOL_STEPS="0",
                                          SEARCHBOX_MAX_QUEUED_PER_ADDRESS="0", **env))
    statuses: dict[str, str] = {}
    ready = threading.Barrier(2)

    def visitor(name: str) -> None:
        client = Client(app, verbose=False)
        ready.wait(120)  # both connected: the two submits land together
        statuses[name] = str(client.submit(*search_args(name, f"owner-{name}"), api_name="/search").result(timeout=900)[0])

    threads = [threading.Thread(target=visitor, args=(name,)) for name in ("v1", "v2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(900)
    return statuses


def _ran_once_each_at_the_same_time(tmp_path: Path, statuses: dict[str, str]) -> tuple[dict, dict]:
    """Both runs ended by their turn (done, or no_answer: in 32 tokens the 0.5B may write only a cut-off call,
    which is never an answer), each run once (never preempted), the two at the same time; their placements."""
    ended = ("(first_turn_done)", "(no_answer)")
    assert all(statuses.get(name, "").split(" · ")[0].endswith(ended) for name in ("v1", "v2")), statuses
    jobs = [read_json(path) for path in sorted((tmp_path / "jobs").glob("*/job.json"))]
    assert len(jobs) == 2 and all(job["stop_reason"] in ("first_turn_done", "no_answer") for job in jobs), jobs
    placements = [job["placements"] for job in jobs]
    assert all(len(runs) == 1 for runs in placements), placements
    first, second = (runs[0] for runs in placements)
    assert first["started_at"] < second["ended_at"] and second["started_at"] < first["ended_at"]
    for job in jobs:
        meta = read_json(tmp_path / "jobs" / job["id"] / "run_meta.json")
        assert meta["model_id"] == ALIAS and meta["config"]["LLAMA_URL"] == job["placements"][0]["server"]
    return first, second
