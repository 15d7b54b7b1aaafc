"""A public app's disk stays bounded and its queue shared (design §5): finished jobs are deleted past an
age and, oldest first, while all jobs take more than a total size; a queued, running, paused or held
job never is; one visitor may have only so many runs waiting. Real job folders, real files."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from searchbox.jobs.store import EXPLORE_PER_ADDRESS, STATE_FILE, JobRecord, JobStore, QueueLimits
from searchbox.records.files import write_json
from searchbox.settings import Settings
from conftest import deep_chain

DAY = 86400.0
MB = 2**20
ROOT = Path(__file__).resolve().parents[2]


def settings(**knobs: object) -> Settings:
    return Settings.resolve(env={}, searchbox_tools="", **knobs)


def job(store: JobStore, source: Path, state: str, days_ago: float, megabytes: int = 0, owner: str = "alice") -> JobRecord:
    """A job in `state`, last changed `days_ago`, holding `megabytes` of real (not sparse) data."""
    record = store.create(f"a {state} job", source, {}, owner, settings(searchbox_keep_days=0, searchbox_jobs_max_mb=0))
    record.state, record.updated_at = state, time.time() - days_ago * DAY
    write_json(store.job_dir(record.id) / STATE_FILE, dataclasses.asdict(record))  # save() would stamp it now
    if megabytes:
        (store.job_dir(record.id) / "work" / "blob.bin").write_bytes(b"x" * megabytes * MB)
    return record


def left(store: JobStore) -> set[str]:
    return {r.id for r in store.list()}


def test_finished_jobs_past_the_age_go_and_unfinished_ones_never(store: JobStore, source: Path) -> None:
    old = {state: job(store, source, state, days_ago=30) for state in ("done", "failed", "cancelled", "queued",
                                                                       "running", "paused", "held")}
    recent = job(store, source, "done", days_ago=1)
    removed = store.prune(max_age_s=14 * DAY, max_bytes=0)
    assert set(removed) == {old[s].id for s in ("done", "failed", "cancelled")}
    assert left(store) == {old[s].id for s in ("queued", "running", "paused", "held")} | {recent.id}
    assert not any(store.job_dir(i).exists() for i in removed)
    assert [p.name for p in store.root.iterdir() if p.name.startswith(".")] == []  # nothing half-deleted


def test_the_oldest_finished_jobs_go_first_until_the_total_fits(store: JobStore, source: Path) -> None:
    oldest = job(store, source, "done", days_ago=5, megabytes=3)
    running = job(store, source, "running", days_ago=4, megabytes=3)
    older = job(store, source, "failed", days_ago=3, megabytes=3)
    newer = job(store, source, "done", days_ago=2, megabytes=3)
    newest = job(store, source, "cancelled", days_ago=1, megabytes=3)
    assert store.prune(max_age_s=0, max_bytes=10 * MB) == [oldest.id, older.id]  # 15 MB -> 12 -> 9, under 10
    assert left(store) == {running.id, newer.id, newest.id}
    # A cap no finished job can meet: they all go, the running one stays.
    assert store.prune(max_age_s=0, max_bytes=1 * MB) == [newer.id, newest.id]
    assert left(store) == {running.id}


def test_a_sparse_file_counts_the_disk_it_uses(store: JobStore, source: Path) -> None:
    sparse = job(store, source, "done", days_ago=2)
    with (store.job_dir(sparse.id) / "work" / "hole.bin").open("wb") as handle:
        handle.truncate(512 * MB)  # no disk: nothing to free by deleting it before others
    kept = job(store, source, "done", days_ago=1)
    assert store.prune(max_age_s=0, max_bytes=64 * MB) == []
    assert left(store) == {sparse.id, kept.id}


def test_each_new_job_applies_the_knobs(store: JobStore, source: Path) -> None:
    stale = job(store, source, "done", days_ago=20)
    fresh = store.create("new", source, {}, "bob", settings(searchbox_keep_days=14))
    assert left(store) == {fresh.id}
    assert not store.job_dir(stale.id).exists()
    kept = job(store, source, "done", days_ago=20)
    store.create("again", source, {}, "bob", settings(searchbox_keep_days=0, searchbox_jobs_max_mb=0))
    assert kept.id in left(store)


def test_a_visitor_has_only_so_many_runs_waiting(store: JobStore, source: Path) -> None:
    base = settings(searchbox_keep_days=0, searchbox_jobs_max_mb=0)
    first = store.create("1", source, {}, "alice", base, max_waiting=2)
    store.create("2", source, {}, "alice", base, max_waiting=2)
    with pytest.raises(ValueError, match="You already have 2 runs queued or running.*cancel one in the Jobs tab"):
        store.create("3", source, {}, "alice", base, max_waiting=2)
    assert len(store.list("alice")) == 2  # nothing was laid out for the refused one
    store.create("someone else's", source, {}, "bob", base, max_waiting=2)
    first.state = "done"
    store.save(first)
    store.create("3", source, {}, "alice", base, max_waiting=2)
    held = store.list("alice")[0]
    held.state = "held"  # a run the visitor paused waits for no slot
    store.save(held)
    store.create("4", source, {}, "alice", base, max_waiting=2)


def test_one_address_and_all_visitors_together_have_only_so_many_runs_waiting(store: JobStore, source: Path) -> None:
    """An API caller that sends no visitor id (or a new one each call) got a fresh identity per run, so the
    per-visitor limit never bound it; the address the server saw does."""
    base = settings(searchbox_keep_days=0, searchbox_jobs_max_mb=0)
    limits = QueueLimits(per_visitor=2, total=3)
    here, there = store.visitor_of("203.0.113.7"), store.visitor_of("198.51.100.1")
    for n in range(2):
        store.create(f"{n}", source, {}, f"a-new-id-{n}", base, max_waiting=5, visitor=here, limits=limits)
    with pytest.raises(ValueError, match="Your address already has 2 runs queued or running"):
        store.create("2", source, {}, "a-new-id-2", base, max_waiting=5, visitor=here, limits=limits)
    store.create("from elsewhere", source, {}, "carol", base, max_waiting=5, visitor=there, limits=limits)
    with pytest.raises(ValueError, match="This app already has 3 runs queued or running"):
        store.create("one too many", source, {}, "dave", base, max_waiting=5, visitor=store.visitor_of("192.0.2.9"),
                     limits=limits)
    assert len(store.list()) == 3 and here != there and len(here) == 32
    assert not any("203.0.113.7" in (store.job_dir(r.id) / STATE_FILE).read_text() for r in store.list())


def test_explorer_datarooms_never_cost_another_visitor_a_finished_run(store: JobStore, source: Path) -> None:
    """Issue #32 item 1: with SEARCHBOX_JOBS_MAX_MB=3, a visitor's finished run, three fresh sessions each
    loading 1.1 MB in the explorer and one more run: the run's folder was pruned to make room for scratch."""
    knobs = settings(searchbox_keep_days=0, searchbox_jobs_max_mb=3)
    finished = job(store, source, "done", days_ago=0, megabytes=1)
    folders = []
    for stranger in ("a" * 32, "b" * 32, "c" * 32):
        folder = store.scratch_folder(knobs, stranger)
        (folder / "room.bin").write_bytes(b"x" * (11 * MB // 10))
        folders.append(folder)
    store.create("one more run", source, {}, "bob", knobs)
    assert finished.id in left(store) and (store.job_dir(finished.id) / "work" / "blob.bin").exists()
    # The explorer's own bound: all its folders together fit the same total, its oldest go first.
    store.scratch_folder(knobs, "d" * 32)
    assert not folders[0].exists() and folders[2].exists() and finished.id in left(store)
    JobStore(store.root)  # a restarted app: no page session holds any of them any more
    assert not any(f.exists() for f in folders)


def test_a_chain_2000_deep_in_an_explorer_folder_stops_neither_eviction_nor_a_restart(store: JobStore) -> None:
    """Issue #43: three explorer `write` calls built a 1,990-deep chain; past SEARCHBOX_JOBS_MAX_MB another
    visitor's explorer load raised RecursionError, and so did every start of the app after."""
    knobs = settings(searchbox_keep_days=0, searchbox_jobs_max_mb=1)
    hostile = store.scratch_folder(knobs, "a" * 32)
    deep_chain(hostile / "work", 1990)
    (hostile / "room.bin").write_bytes(b"x" * 2 * MB)

    stranger = store.scratch_folder(knobs, "b" * 32)  # evicts the hostile folder: all of them pass 1 MB

    assert stranger.exists() and not hostile.exists()
    deep_chain(stranger / "work", 1990)
    JobStore(store.root)  # a restart
    assert not any((store.root / ".explore").iterdir())
    assert not list(store.root.glob(".removing-*"))


def test_a_run_whose_work_is_a_chain_2000_deep_is_deleted_and_pruned(store: JobStore, source: Path) -> None:
    """Issue #43: one bash call built the chain in work/; Delete failed and left a `.removing-*` folder, and
    the prune before a stranger's next run made that run fail, as did every start after."""
    deleted = job(store, source, "done", days_ago=0)
    old = job(store, source, "done", days_ago=30)
    for record in (deleted, old):
        deep_chain(store.job_dir(record.id) / "work", 1990)
    deep_chain(store.root / ".removing-cut-short-by-a-crash", 1990)

    assert store.delete(deleted.id)
    fresh = store.create("a stranger's next run", source, {}, "bob", settings(searchbox_keep_days=14))

    assert left(store) == {fresh.id}
    JobStore(store.root)  # a restart
    assert not list(store.root.glob(".removing-*"))


def test_a_folder_that_cannot_be_removed_is_set_aside_and_said(store: JobStore, source: Path) -> None:
    """A folder removal cannot finish (here a mount point: EBUSY, as no chmod can help) must not stop the
    app's start, a Delete or the next run: it is renamed to `.removing-*`, logged, and removed at a later start."""
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespace here to make a mount point in a job folder")
    finished = job(store, source, "done", days_ago=0)
    explorer = store.scratch_folder(settings(), "a" * 32)
    mounts = [store.job_dir(finished.id) / "work" / "mnt", explorer / "work" / "mnt"]
    for mount in mounts:
        mount.mkdir(parents=True)
    code = ("import logging, sys; from pathlib import Path; logging.basicConfig(level=logging.INFO); "
            "from searchbox.jobs.store import JobStore; store = JobStore(Path(sys.argv[1])); "
            "print('deleted', store.delete(sys.argv[2]))")
    mount_all = " && ".join(f"mount -t tmpfs none '{m}' && touch '{m}/f'" for m in mounts)
    result = subprocess.run([unshare, "-m", "--propagation", "private", "sh", "-c",
                             f'{mount_all} && exec "$@"', "sh", sys.executable, "-c", code, str(store.root), finished.id],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stderr[-2000:]
    assert "deleted True" in result.stdout
    assert result.stderr.count("tried again at the next start") == 2, result.stderr
    assert len(list(store.root.glob(".removing-*"))) == 2 and not any((store.root / ".explore").iterdir())
    assert store.create("the next run", source, {}, "bob", settings()).id in left(store)
    JobStore(store.root)  # the next start, the mounts gone with their namespace
    assert not list(store.root.glob(".removing-*"))


def test_one_address_holds_only_so_many_explorer_datarooms(store: JobStore) -> None:
    knobs = settings(searchbox_keep_days=0, searchbox_jobs_max_mb=0)
    mine = [store.scratch_folder(knobs, "e" * 32) for _ in range(EXPLORE_PER_ADDRESS + 2)]
    theirs = store.scratch_folder(knobs, "f" * 32)
    assert [f.exists() for f in mine] == [False, False] + [True] * EXPLORE_PER_ADDRESS
    assert theirs.exists()


def test_a_job_just_created_counts_once_against_the_limit(store: JobStore, source: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Between a job appearing in the listing and its create returning, it was counted twice (listed and
    under way): on a busy machine a burst of submits was refused below the limit."""
    base = settings(searchbox_keep_days=0, searchbox_jobs_max_mb=0)
    listed, counted = threading.Event(), threading.Event()
    create = JobStore._create

    def create_then_wait(self: JobStore, *args: object) -> JobRecord:
        record = create(self, *args)
        listed.set()
        counted.wait(30)
        return record

    monkeypatch.setattr(JobStore, "_create", create_then_wait)
    first = threading.Thread(target=store.create, args=("first", source, {}, "alice", base), kwargs={"max_waiting": 2})
    first.start()
    assert listed.wait(30)
    monkeypatch.setattr(JobStore, "_create", create)
    try:
        store.create("second", source, {}, "alice", base, max_waiting=2)
    finally:
        counted.set()
        first.join(30)
    assert len(store.list("alice")) == 2


def test_a_burst_of_submits_cannot_pass_the_limit(store: JobStore, source: Path) -> None:
    base = settings(searchbox_keep_days=0, searchbox_jobs_max_mb=0)
    outcomes: list[str] = []
    start = threading.Barrier(6)

    def submit(n: int) -> None:
        start.wait()
        try:
            store.create(f"burst {n}", source, {}, "alice", base, max_waiting=3)
            outcomes.append("accepted")
        except ValueError:
            outcomes.append("refused")

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["accepted"] * 3 + ["refused"] * 3
    assert len(store.list("alice")) == 3


def test_a_finished_job_can_be_deleted_and_only_that(store: JobStore, source: Path) -> None:
    done, running = job(store, source, "done", days_ago=0), job(store, source, "running", days_ago=0)
    assert not store.delete(running.id) and not store.delete("no-such-job-0123456789")
    assert store.delete(done.id) and not store.job_dir(done.id).exists()
    assert left(store) == {running.id}


def test_an_operators_view_lists_every_run_but_deletes_only_ones_own(store: JobStore, source: Path) -> None:
    import gradio as gr

    from searchbox.ui.jobs_view import JobsView
    from searchbox.ui.services import Services

    alices = job(store, source, "done", days_ago=0, owner="alice")
    view = JobsView(Services(settings(searchbox_operator=True), store, scheduler=None))  # type: ignore[arg-type]
    assert view.table("bob")[2] == [alices.id]  # bob sees it ...
    with pytest.raises(gr.Error, match="No such job among your runs"):
        view.delete(alices.id, "bob")  # ... and cannot delete it
    assert view.delete(alices.id, "alice")[2] == [] and not store.job_dir(alices.id).exists()


@pytest.mark.slow  # the real app in a subprocess
def test_the_app_limits_waiting_runs_and_deletes_finished_ones(tmp_path: Path) -> None:
    from gradio_client import Client

    from testkit.app_server import running_app, throwaway_home
    from testkit.load_harness import search_args
    from testkit.scripted_endpoint import Reply, ScriptedEndpoint

    slow = Reply(text="Still thinking about it.", chunk_chars=1, delay_s=0.2)  # a run of several seconds
    with ScriptedEndpoint(default=slow) as endpoint, throwaway_home("queue-limit") as home, \
            running_app(home, LLAMA_URL=endpoint.url, MODEL_ID="scripted", SEARCHBOX_MAX_QUEUED_RUNS="1") as url:
        alice, bob = Client(url, verbose=False), Client(url, verbose=False)
        first = alice.submit(*search_args("first", "alice"), api_name="/search")
        deadline = time.time() + 60
        while not endpoint.requests and time.time() < deadline:  # the first run holds the model slot
            time.sleep(0.2)
        with pytest.raises(Exception, match="You already have 1 run queued or running"):
            alice.predict(*search_args("second", "alice"), api_name="/search")
        (job_id,) = [choice[1] for choice in alice.predict("alice", api_name="/jobs")[1]["choices"]]
        with pytest.raises(Exception, match="Only a finished run can be deleted"):
            alice.predict(job_id, "alice", api_name="/delete_job")
        other = bob.submit(*search_args("bob's", "bob"), api_name="/search")
        assert "**done**" in str(first.result(timeout=120)[0])
        assert "**done**" in str(other.result(timeout=120)[0])  # another visitor was never held back

        with pytest.raises(Exception):  # not among bob's runs, so not even a choice on his page
            bob.predict(job_id, "bob", api_name="/delete_job")
        rows = alice.predict(job_id, "alice", api_name="/delete_job")[0]
        assert rows["data"] == [] and not (home / "jobs" / job_id).exists()
        assert len(bob.predict("bob", api_name="/jobs")[0]["data"]) == 1


@pytest.mark.slow  # the real app in a subprocess
def test_an_api_caller_cannot_dodge_the_limit_with_new_visitor_ids(tmp_path: Path) -> None:
    from gradio_client import Client

    from testkit.app_server import running_app, throwaway_home
    from testkit.load_harness import search_args
    from testkit.scripted_endpoint import Reply, ScriptedEndpoint

    slow = Reply(text="Still thinking about it.", chunk_chars=1, delay_s=0.2)
    with ScriptedEndpoint(default=slow) as endpoint, throwaway_home("address-limit") as home, \
            running_app(home, LLAMA_URL=endpoint.url, MODEL_ID="scripted", SEARCHBOX_MAX_QUEUED_PER_ADDRESS="2") as url:
        caller = Client(url, verbose=False)
        running = [caller.submit(*search_args(f"run {n}", f"new-id-{n}"), api_name="/search") for n in range(2)]
        deadline = time.time() + 60
        while len(list((home / "jobs").glob("*/job.json"))) < 2 and time.time() < deadline:
            time.sleep(0.2)
        with pytest.raises(Exception, match="Your address already has 2 runs queued or running"):
            caller.predict(*search_args("run 2", "new-id-2"), api_name="/search")
        for submitted in running:
            assert "**done**" in str(submitted.result(timeout=120)[0])


@pytest.mark.slow  # the real app in a subprocess
def test_a_forwarded_header_from_an_untrusted_peer_picks_no_address(tmp_path: Path) -> None:
    """Issue #32 item 4: uvicorn believed X-Forwarded-For from any loopback peer, so a caller behind a
    local tunnel chose its own address per call and passed the per-address limit (5 of 5 queued
    against 3). With no SEARCHBOX_TRUSTED_PROXIES, the peer's own address counts."""
    from gradio_client import Client

    from testkit.app_server import running_app, throwaway_home
    from testkit.load_harness import search_args
    from testkit.scripted_endpoint import Reply, ScriptedEndpoint

    slow = Reply(text="Still thinking about it.", chunk_chars=1, delay_s=0.2)
    with ScriptedEndpoint(default=slow) as endpoint, throwaway_home("forwarded") as home, \
            running_app(home, LLAMA_URL=endpoint.url, MODEL_ID="scripted", SEARCHBOX_MAX_QUEUED_PER_ADDRESS="2") as url:
        callers = [Client(url, verbose=False, headers={"X-Forwarded-For": f"203.0.113.{n}"}) for n in range(3)]
        running = [callers[n].submit(*search_args(f"run {n}", f"id-{n}"), api_name="/search") for n in range(2)]
        deadline = time.time() + 60
        while len(list((home / "jobs").glob("*/job.json"))) < 2 and time.time() < deadline:
            time.sleep(0.2)
        with pytest.raises(Exception, match="Your address already has 2 runs queued or running"):
            callers[2].predict(*search_args("run 2", "id-2"), api_name="/search")
        for submitted in running:
            assert "**done**" in str(submitted.result(timeout=120)[0])


def test_behind_a_named_proxy_the_rightmost_untrusted_hop_is_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    import gradio as gr
    from starlette.requests import Request

    from searchbox.ui.visitors import client_address

    def seen(peer: str, forwarded: str) -> str:
        scope = {"type": "http", "client": (peer, 5000), "headers": [(b"x-forwarded-for", forwarded.encode())]}
        return client_address(gr.Request(request=Request(scope)))

    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setenv("SEARCHBOX_TRUSTED_PROXIES", "10.0.0.2, 10.0.0.3")
    assert seen("10.0.0.2", "6.6.6.6, 198.51.100.7, 10.0.0.3") == "198.51.100.7"  # the client's own claim skipped
    assert seen("127.0.0.1", "198.51.100.7") == "127.0.0.1"  # a peer not named: its header is ignored
    assert seen("10.0.0.2", "") == "10.0.0.2"
