"""What the app's handlers share: the base settings, the job store, the scheduler, the ledger of
uploads (ui.uploads), the warm start (ui.warm_start), and the secrets a visitor typed for a run (kept in memory only, never in a job
folder). A visitor's run gets the
operator's JINA_API_KEY only with the operator's consent (SEARCHBOX_VISITOR_KEYS, or an operator's own
app): else a key the visitor typed, or none, also when it resumes after a restart."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from searchbox.agent.control import RunControl
from searchbox.records.events import Listener
from searchbox.agent.run import connect_and_run
from searchbox.llm.disclosure import hidden_from_anyone
from searchbox.jobs.scheduler import RunFn, Scheduler
from searchbox.jobs.store import JobRecord, JobStore
from searchbox.settings import Settings
from searchbox.ui.uploads import UploadLedger, UploadLimits
from searchbox.ui.warm_start import WarmStart


@dataclass
class Services:
    settings: Settings
    store: JobStore
    scheduler: Scheduler
    uploads: UploadLedger = field(init=False)
    warm: WarmStart = field(init=False)  # started by app.py, when SEARCHBOX_WARM_START is on
    _secrets: dict[str, dict[str, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.uploads = UploadLedger(UploadLimits.of(self.settings))
        self.warm = WarmStart(self.settings, hide=lambda text: hidden_from_anyone(self.settings, text))

    @classmethod
    def start(cls, settings: Settings, run_fn: RunFn = connect_and_run) -> Services:
        store = JobStore(Path(settings.jobs_dir))
        holder: dict[str, Services] = {}

        def run_with_secrets(job_dir: Path, job_settings: Settings, control: RunControl, listeners: list[Listener]) -> str:
            secrets = holder["services"].secrets_for(job_dir.name)
            if not shares_operator_key(settings):
                secrets.setdefault("jina_api_key", "")
            return run_fn(job_dir, job_settings.with_overrides(**secrets) if secrets else job_settings, control, listeners)

        services = cls(settings, store, Scheduler(store, run_with_secrets, settings))
        holder["services"] = services
        services.scheduler.start()
        services.uploads.start_sweeping()
        return services

    def remember_secrets(self, job_id: str, secrets: dict[str, str]) -> None:
        """Keep a run's secrets while it may still run; those of finished runs are dropped here, so
        a long-lived app holds keys only for unfinished runs (a paused run needs its keys to resume)."""
        with self._lock:
            held = list(self._secrets)
        finished = [held_id for held_id in held if (record := self.store.get(held_id)) is None or record.finished]
        with self._lock:
            for finished_id in finished:
                self._secrets.pop(finished_id, None)
            self._secrets[job_id] = {k: v for k, v in secrets.items() if v}

    def secrets_for(self, job_id: str) -> dict[str, str]:
        with self._lock:
            return dict(self._secrets.get(job_id, {}))

    def visitor_settings(self) -> Settings:
        """The settings work done for a visitor outside a run starts from (the explorer's): without the
        operator's Jina key unless they share it."""
        return self.settings if shares_operator_key(self.settings) else self.settings.with_overrides(jina_api_key="")

    def visible_jobs(self, owner: str) -> list[JobRecord]:
        """The viewer's own runs; every run for an operator."""
        return self.store.list(None if self.settings.searchbox_operator else owner)

    def may_see(self, job_id: str, owner: str) -> JobRecord | None:
        record = self.store.get(job_id) if job_id else None
        if record is None or (record.owner != owner and not self.settings.searchbox_operator):
            return None
        return record


def shares_operator_key(settings: Settings) -> bool:
    """Whether visitors' work may spend the operator's JINA_API_KEY."""
    return settings.searchbox_operator or settings.searchbox_visitor_keys
