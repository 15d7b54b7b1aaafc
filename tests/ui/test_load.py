"""The real app under load (design §5: no load loses or doubles a run): 50 runs submitted at once by 10
gradio_client visitors against a scripted endpoint; every run is accepted, runs exactly once and
ends done, the page and the jobs table keep answering, and memory does not grow per finished run.
Timings are printed, not asserted. Run with `pytest -s tests/ui/test_load.py` to see the tally line;
bench/load.py prints the full table."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.load_harness import run_load
from testkit.tally import report
from searchbox.settings import Settings

RUNS, CLIENTS = 50, 10


@pytest.mark.slow
def test_many_visitors_submitting_at_once_get_every_run_done_exactly_once() -> None:
    result = run_load(RUNS, CLIENTS)
    print("\n" + "\n".join(f"  {name}: {value}" for name, value in result.table_rows()))
    report("load", result.tally())
    assert result.errors == []
    assert result.accepted == RUNS
    assert result.finished == {"done": RUNS}
    # One job folder per submission, each run to done once: one answer step after one tool step
    # (a preempted run resumes where it stopped, it never repeats a step).
    assert sorted(j.tag for j in result.jobs) == sorted(result.tags)
    for job in result.jobs:
        assert (job.state, job.turns, job.steps, job.stops_done) == ("done", 1, 2, 1), job
    assert set(result.requests) == set(result.tags)  # nothing reached the endpoint but these runs
    assert result.page.errors == [] and result.table.errors == [] and result.opened.errors == []
    assert result.page.seconds and result.table.seconds and result.opened.seconds
    # The first runs warm the app up (imports, caches); after that, finished runs must not pile up.
    assert result.rss_kb[RUNS] - result.rss_kb[10] < 0.5 * result.rss_kb[10], result.rss_kb


def test_a_finished_run_does_not_keep_its_secrets_in_memory(tmp_path: Path) -> None:
    from conftest import SMALL_DATAROOM, write_tree
    from searchbox.ui.services import Services

    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    settings = Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / "jobs"))
    services = Services.start(settings, run_fn=lambda *args: "first_turn_done")
    try:
        first = services.store.create("Q?", source, {}, "alice", settings)
        services.remember_secrets(first.id, {"jina_api_key": "jina_first"})
        services.scheduler.submit(first.id)
        assert services.scheduler.wait_idle(30)
        second = services.store.create("Q2?", source, {}, "alice", settings)
        services.remember_secrets(second.id, {"jina_api_key": "jina_second"})
        assert services.secrets_for(first.id) == {}
        assert services.secrets_for(second.id) == {"jina_api_key": "jina_second"}
    finally:
        services.scheduler.stop()


def test_bundles_made_at_once_for_one_job_all_succeed(tmp_path: Path) -> None:
    # Under load a run's own final download and visitors opening it in the Jobs tab bundle it together.
    import threading
    import zipfile

    from searchbox.jobs.bundle import make_bundle

    job_dir = tmp_path / "job"
    (job_dir / "work").mkdir(parents=True)
    (job_dir / "work" / "ANSWER.md").write_text("answer\n")
    (job_dir / "events.jsonl").write_text("{}\n" * 20_000)  # big enough that the writes overlap
    errors: list[BaseException] = []

    def bundle() -> None:
        try:
            make_bundle(job_dir)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=bundle) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with zipfile.ZipFile(job_dir / "bundle.zip") as archive:
        assert sorted(archive.namelist()) == ["events.jsonl", "work/ANSWER.md"]
    assert sorted(p.name for p in job_dir.iterdir()) == ["bundle.zip", "events.jsonl", "work"]
