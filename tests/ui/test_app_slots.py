"""The app over a pool of model servers (SEARCHBOX_ENDPOINTS). The real app over two real servers: two
`python -m llama_cpp.server` processes on 127.0.0.1 serving the packaged 0.5B model, one slot each, and
two visitors whose runs are submitted at once; each run gets a server of its own, the two run at the
same time, and each job.json says which server and slot ran it. And what the page says of where a run
stands. Faults (a server killed mid-run) are in tests/jobs/test_scheduler.py, against scripted servers."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from pathlib import Path

import pytest
from gradio_client import Client

from testkit.app_server import running_app
from testkit.llama_server import ALIAS, llama_server, missing_server_modules
from testkit.load_harness import search_args
from searchbox.agent.control import RunControl
from searchbox.records.events import Listener
from searchbox.records.files import read_json
from searchbox.settings import Settings


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
    missing = missing_server_modules()
    if missing:
        pytest.skip(f"llama-cpp-python's server extra is not installed (no {', '.join(missing)})")
    with ExitStack() as stack:
        # One thread each: the two share this machine's cores, and both must answer at the same time.
        folders = [tmp_path / f"server-{n}" for n in (1, 2)]
        for folder in folders:
            folder.mkdir()
        urls = [stack.enter_context(llama_server(folder, n_ctx=4096, threads=1)) for folder in folders]
        app = stack.enter_context(running_app(tmp_path, SEARCHBOX_ENDPOINTS=",".join(f"{u}=1" for u in urls),
                                              MODEL_ID=ALIAS, MAX_OUTPUT_TOKENS="32", MAX_STEPS_PER_TURN="1",
                                              FORCE_TOOL_STEPS="0", SEARCHBOX_MAX_QUEUED_PER_ADDRESS="0"))
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
    assert all("**done**" in statuses.get(name, "") for name in ("v1", "v2")), statuses
    jobs = [read_json(path) for path in sorted((tmp_path / "jobs").glob("*/job.json"))]
    assert len(jobs) == 2 and all(job["state"] == "done" for job in jobs), jobs
    placements = [job["placements"] for job in jobs]
    assert all(len(runs) == 1 for runs in placements), placements  # each ran once, never preempted
    first, second = (runs[0] for runs in placements)
    assert {first["server"], second["server"]} == set(urls) and first["slot"] == second["slot"] == 1
    assert first["started_at"] < second["ended_at"] and second["started_at"] < first["ended_at"]  # at the same time
    for job in jobs:
        meta = read_json(tmp_path / "jobs" / job["id"] / "run_meta.json")
        assert meta["model_id"] == ALIAS and meta["config"]["LLAMA_URL"] == job["placements"][0]["server"]

