"""One visitor's run through the app's own services (the job store, the scheduler, the real run function),
and the texts a visitor gets of it: the feed as the page draws it and the bundle the page offers, member
by member. For tests that look for what must never reach a visitor (the operator's endpoint, a key)."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from searchbox.jobs.bundle import downloads
from searchbox.jobs.store import JobRecord
from searchbox.llm.disclosure import operator_details
from searchbox.records.events import load_events
from searchbox.settings import Settings
from searchbox.ui.feed import Feed
from searchbox.ui.services import Services
from testkit.small_room import SMALL_DATAROOM, write_tree


@dataclass
class VisitorRun:
    settings: Settings
    services: Services
    record: JobRecord
    job: Path

    def feed(self) -> str:
        feed = Feed(self.record.question)
        for event in load_events(self.job):
            feed.add(event)
        return json.dumps(feed.messages)

    def downloads(self) -> dict[str, str]:
        """The ANSWER.md download (when there is one) and each member of the bundle, as a visitor gets them."""
        answer, bundle = downloads(self.job, operator_details(self.settings))
        found = {"ANSWER.md download": Path(answer).read_text()} if answer else {}
        with zipfile.ZipFile(bundle) as archive:
            found.update({f"bundle:{name}": archive.read(name).decode("utf-8", "replace") for name in archive.namelist()})
        return found


@contextmanager
def visitor_run(tmp_path: Path, env: dict[str, str]) -> Iterator[VisitorRun]:
    """A run of "When does the lease end?" on the small dataroom, by visitor "visitor", finished (or failed)."""
    settings = Settings.resolve(env={"MODEL_ID": "m", "SEARCHBOX_TOOLS": "", "RETRIEVAL_PRESET": "packaged",
                                     "LLM_ATTEMPTS": "1", **env},
                                searchbox_jobs_dir=str(tmp_path / "jobs"), searchbox_cache_dir=str(tmp_path / "cache"))
    services = Services.start(settings)
    try:
        record = services.store.create("When does the lease end?", write_tree(tmp_path / "room", SMALL_DATAROOM), {},
                                       "visitor", settings)
        services.scheduler.submit(record.id)
        assert services.scheduler.wait_idle(120)
        finished = services.store.get(record.id)
        assert finished is not None
        yield VisitorRun(settings, services, finished, services.store.job_dir(record.id))
    finally:
        services.scheduler.stop(30)
