"""The job store: job folders plus job.json, ids nobody can guess, no secrets on disk, nothing
half-made left behind, and listing that survives a broken file."""

from __future__ import annotations

import json
import os
import logging
import re
import time
from pathlib import Path

import pytest

from searchbox.dataroom.unpack import DataroomError
from searchbox.jobs import store as store_module
from searchbox.jobs.store import STATE_FILE, JobStore
from searchbox.settings import Settings, SettingsError

QUESTION = "When does the office lease end?"


@pytest.fixture
def base() -> Settings:
    return Settings.resolve(env={"JINA_API_KEY": "jina-from-the-environment"}, searchbox_tools="")


def test_a_job_is_a_job_folder_with_its_state(store: JobStore, source: Path, base: Settings) -> None:
    record = store.create(f"  {QUESTION}\n", source, {"turn_budget": 3}, "alice", base)
    job_dir = store.job_dir(record.id)
    for name in ("query.txt", "input.zip", STATE_FILE, "work/dataroom/legal/lease.txt"):
        assert (job_dir / name).exists(), name
    assert (record.state, record.owner, record.question) == ("queued", "alice", QUESTION)
    assert record.preempted_at is None and record.last_active_at is None and record.foreground
    assert store.get(record.id) == record
    # The settings asked for live in job.json until the run starts and records what it really uses in config.json.
    assert json.loads((job_dir / STATE_FILE).read_text())["overrides"] == {"turn_budget": 3}
    assert store.settings_for(record, base).turn_budget == 3 and not (job_dir / "config.json").exists()

    record.state, record.stop_reason = "done", "first_turn_done"
    store.save(record)
    again = store.get(record.id)
    assert again is not None and again.state == "done" and again.updated_at >= record.created_at


def test_ids_are_unguessable_and_unique(store: JobStore, source: Path, base: Settings) -> None:
    ids = [store.create(QUESTION, source, {}, "alice", base).id for _ in range(8)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22,}", job_id) for job_id in ids)  # 128 random bits, URL-safe
    assert sorted(p.name for p in store.root.iterdir()) == sorted(ids)
    # Ids come from URLs and forms: anything else names no job and no path.
    for bad in ("../jobs", "", "x", ids[0][:-1] + "/"):
        assert store.get(bad) is None
    with pytest.raises(ValueError):
        store.job_dir("../../etc")


def test_listing_is_newest_first_and_filtered_by_owner(store: JobStore, source: Path, base: Settings) -> None:
    a1 = store.create("first of alice", source, {}, "alice", base)
    b1 = store.create("first of bob", source, {}, "bob", base)
    a2 = store.create("second of alice", source, {}, "alice", base)
    assert [r.id for r in store.list()] == [a2.id, b1.id, a1.id]  # an operator sees everyone's
    assert [r.id for r in store.list("alice")] == [a2.id, a1.id]
    assert [r.id for r in store.list("bob")] == [b1.id]
    assert store.list("mallory") == []


def test_a_corrupt_or_missing_state_file_is_skipped(store: JobStore, source: Path, base: Settings,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    good = store.create(QUESTION, source, {}, "alice", base)
    torn = store.create(QUESTION, source, {}, "alice", base)
    (store.job_dir(torn.id) / STATE_FILE).write_text('{"id": "')
    alien = store.create(QUESTION, source, {}, "alice", base)
    (store.job_dir(alien.id) / STATE_FILE).write_text(json.dumps({"id": alien.id, "state": "exploded"}))
    lost = store.create(QUESTION, source, {}, "alice", base)
    (store.job_dir(lost.id) / STATE_FILE).unlink()
    with caplog.at_level(logging.WARNING, logger="searchbox.jobs.store"):
        assert [r.id for r in store.list()] == [good.id]
        assert store.get(torn.id) is None
    assert {torn.id, alien.id, lost.id} <= {rec.args[0] for rec in caplog.records}  # type: ignore[index]


def test_overrides_never_keep_secrets(store: JobStore, source: Path, base: Settings) -> None:
    overrides = {"turn_budget": 4, "max_output_tokens": 512, "jina_api_key": "jina-typed-in-the-ui",
                 "hf_token": "hf-secret", "OPENAI_API_KEY": "sk-secret", "client_secret": "shh"}
    record = store.create(QUESTION, source, overrides, "alice", base)
    assert record.overrides == {"turn_budget": 4, "max_output_tokens": 512}
    on_disk = "".join(p.read_text(errors="ignore") for p in store.job_dir(record.id).glob("*.json"))
    for secret in ("jina-typed-in-the-ui", "hf-secret", "sk-secret", "shh", "jina-from-the-environment"):
        assert secret not in on_disk
    settings = store.settings_for(record, base)
    assert (settings.turn_budget, settings.max_output_tokens) == (4, 512)
    assert settings.jina_api_key == "jina-from-the-environment"  # secrets come from the environment


@pytest.mark.parametrize("problem", ["bad zip", "empty question", "unknown knob", "crash after the dataroom"])
def test_a_refused_job_leaves_nothing_registered(problem: str, store: JobStore, source: Path, base: Settings,
                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    question, overrides = QUESTION, {}
    if problem == "bad zip":
        source = tmp_path / "room.zip"
        source.write_text("not a zip at all")
    elif problem == "empty question":
        question = "   "
    elif problem == "unknown knob":
        overrides = {"turbo": True}
    else:  # the dataroom is installed read-only, then writing job.json fails
        def fail(path: Path, data: object) -> None:
            raise OSError("disk full")
        monkeypatch.setattr(store_module, "write_json", fail)

    expected = {"bad zip": DataroomError, "empty question": ValueError, "unknown knob": SettingsError,
                "crash after the dataroom": OSError}[problem]
    with pytest.raises(expected) as raised:
        store.create(question, source, overrides, "alice", base)
    if problem == "bad zip":
        assert "zip" in str(raised.value).lower()  # the user's message comes through
    assert store.list() == [] and list(store.root.iterdir()) == []


def test_a_job_folder_half_made_by_a_crash_is_removed_on_the_next_start(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    old, fresh = root / ".staging-old", root / ".staging-in-progress"
    for folder in (old, fresh):
        (folder / "work" / "dataroom").mkdir(parents=True)
        (folder / "work" / "dataroom" / "a.md").write_text("x")
    (old / "work" / "dataroom").chmod(0o555)  # as install_dataroom leaves it
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    JobStore(root)
    assert not old.exists() and fresh.exists()  # another process may be creating that one right now
