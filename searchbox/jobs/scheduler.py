"""The scheduler (design §3.1): one model slot, so runs are serial.

Which job runs next:
1. foreground runs, first in first out (submitted or explicitly resumed);
2. runs a foreground run preempted, the most recently preempted first (a stack);
3. auto-backfill: the paused run idle the longest (smallest last_active_at), itself preemptible.

A new foreground run preempts what runs: the run is asked to stop ("paused") and stops cleanly at its
next check; because a run resumes from its session, preempting loses nothing. It does so at once when
what runs is a backfill or a run of the same visitor, or in an operator's app; another visitor's
foreground run is preempted only once it has had the slot for SEARCHBOX_FAIR_SHARE_SECONDS since it
last got it, so that a stream of strangers' submits cannot keep every other run paused. A user's pause
holds a job ("held") until an explicit resume. Every state change is written to the store under one
lock, so a restart finds the queue as it was: running jobs return to the resumable pool.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from searchbox.agent.control import RunControl, StopRequest
from searchbox.records.events import DONE_REASONS, Event, Listener
from searchbox.jobs.store import JobRecord, JobStore
from searchbox.settings import Settings

log = logging.getLogger(__name__)

RunFn = Callable[[Path, Settings, RunControl, list[Listener]], str]
Subscription = queue.Queue[Event | None]

_STOP_REQUESTS = frozenset({"paused", "cancelled", "interrupted"})

# Why the scheduler asked the running run to stop. RunControl keeps only the first request, so when
# several arrive the strongest intent decides where the job goes: a cancel beats a user's pause,
# which beats a preemption, which beats a shutdown.
Intent = Literal["shutdown", "preempt", "hold", "cancel"]
_RANK: dict[Intent, int] = {"shutdown": 0, "preempt": 1, "hold": 2, "cancel": 3}


@dataclass
class _Active:
    record: JobRecord
    control: RunControl
    intent: Intent | None = None
    began: float = field(default_factory=time.monotonic)

    def ask(self, intent: Intent, request: StopRequest) -> None:
        if self.intent is None or _RANK[intent] > _RANK[self.intent]:
            self.intent = intent
        self.control.request(request)


class Scheduler:
    def __init__(self, store: JobStore, run_fn: RunFn, base_settings: Settings) -> None:
        self.store = store
        self.run_fn = run_fn
        self.base_settings = base_settings
        self._cond = threading.Condition()  # the one lock over every state change
        self._jobs: dict[str, JobRecord] = {}  # every unfinished job the scheduler knows
        self._active: _Active | None = None
        # Values are tuples, replaced whole, so the run's listener can read them without the lock.
        self._subscribers: dict[str, tuple[Subscription, ...]] = {}
        self._thread: threading.Thread | None = None
        self._preempt_timer: threading.Timer | None = None  # armed while a run's fair share runs out
        self._stopping = False
        self._version = 0
        self._last_stamp = 0.0

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Load the store's unfinished jobs and start the worker. Runs a killed app left "running"
        go back to the resumable pool; held runs stay held; queued ones keep their order."""
        with self._cond:
            if self._thread is not None:
                raise RuntimeError("the scheduler is already started")
            for record in self.store.list():
                if record.finished or record.id in self._jobs:
                    continue
                if record.state == "running":
                    record.state = "paused"
                    self._save(record)  # when this fails, the next start finds it "running" and pauses it again
                self._jobs[record.id] = record
            self._thread = threading.Thread(target=self._work, name="searchbox-scheduler", daemon=True)
            self._thread.start()
            self._changed()

    def stop(self, timeout: float | None = None) -> None:
        """Interrupt the running run (it returns to the pool and resumes after a restart) and end the worker."""
        with self._cond:
            self._stopping = True
            if self._preempt_timer is not None:
                self._preempt_timer.cancel()
            if self._active is not None:
                self._active.ask("shutdown", "interrupted")
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    # -- what users and the UI ask --------------------------------------------------------------

    def submit(self, job_id: str) -> bool:
        """Queue a new job (from store.create) as a foreground run. False when it was submitted before
        (a double click must not run it twice, even after it finished)."""
        with self._cond:
            record = self._jobs.get(job_id) or self.store.get(job_id)
            if record is None:
                raise KeyError(f"no job {job_id}")
            if job_id in self._jobs or record.state != "queued":
                return False
            self._enqueue(record)
            return True

    def resume(self, job_id: str) -> bool:
        """A held or paused job becomes a foreground run again, at the end of the FIFO; like a submit,
        it preempts the running run."""
        with self._cond:
            record = self._jobs.get(job_id)
            if record is None or record.state not in ("held", "paused"):
                return False
            self._enqueue(record)
            return True

    def pause(self, job_id: str) -> bool:
        """A user's pause: the job is held until resume(); a running run is stopped first."""
        with self._cond:
            record = self._jobs.get(job_id)
            if record is None:
                return False
            active = self._active_for(job_id)
            if active is not None:
                active.ask("hold", "paused")
                return True
            if record.state not in ("queued", "paused"):
                return False
            record.state = "held"
            self.store.save(record)
            self._changed()
            return True

    def cancel(self, job_id: str) -> bool:
        with self._cond:
            active = self._active_for(job_id)
            if active is not None:
                active.ask("cancel", "cancelled")
                return True
            record = self._jobs.pop(job_id, None)
            if record is None:
                return False
            record.state, record.stop_reason = "cancelled", "cancelled"
            self.store.save(record)
            self._close_subscribers(job_id)
            self._changed()
            return True

    def subscribe(self, job_id: str) -> Subscription:
        """Events of the job's current or next run, in order, then None when that run stops.
        Subscribing before submit loses nothing; a finished or unknown job gets None at once."""
        subscription: Subscription = queue.Queue()
        with self._cond:
            record = self._jobs.get(job_id) or self.store.get(job_id)
            if record is not None and not record.finished:
                self._subscribers[job_id] = (*self._subscribers.get(job_id, ()), subscription)
            else:
                subscription.put(None)
        return subscription

    def unsubscribe(self, job_id: str, subscription: Subscription) -> None:
        with self._cond:
            kept = tuple(s for s in self._subscribers.pop(job_id, ()) if s is not subscription)
            if kept:
                self._subscribers[job_id] = kept

    @property
    def version(self) -> int:
        """Bumped on every state change: a UI polls it to know when to refresh its jobs table."""
        return self._version

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once nothing runs and nothing is waiting to (held jobs do not count)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._active is None and self._next() is None, timeout)

    # -- the worker ----------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or self._next() is not None)
                record = self._next()
                if self._stopping or record is None:
                    return
                active = self._begin(record)
            if active is None:
                continue
            reason, error = self._execute(active)
            with self._cond:
                self._finish(active, reason, error)

    def _next(self) -> JobRecord | None:
        records = self._jobs.values()
        queued = [r for r in records if r.state == "queued"]
        if queued:
            return min(queued, key=lambda r: (r.queued_at or r.created_at, r.created_at))
        preempted = [r for r in records if r.state == "paused" and r.preempted_at is not None]
        if preempted:
            return max(preempted, key=lambda r: r.preempted_at or 0.0)
        paused = [r for r in records if r.state == "paused"]
        if paused:
            return min(paused, key=lambda r: (r.last_active_at or r.created_at, r.created_at))
        return None

    def _begin(self, record: JobRecord) -> _Active | None:
        """The job becomes the running one; None when its state cannot be recorded (it failed instead)."""
        if record.state == "paused" and record.preempted_at is None:
            record.foreground = False  # an auto-backfill; a preempted run keeps what it was
        record.state = "running"
        record.preempted_at = record.stop_reason = record.error = None
        record.last_active_at = self._stamp()
        problem = self._save(record)
        if problem is not None:
            # Not run: a run whose job.json cannot be written would be lost track of by a restart.
            self._give_up(record, problem)
            self._close_subscribers(record.id)
            self._changed()
            return None
        self._active = _Active(record, RunControl())
        self._changed()
        return self._active

    def _execute(self, active: _Active) -> tuple[str | None, str | None]:
        """The run, outside the lock; returns (stop reason, error). A raising run_fn is an error, not a crash."""
        job_id = active.record.id
        try:
            settings = self.store.settings_for(active.record, self.base_settings)
            return self.run_fn(self.store.job_dir(job_id), settings, active.control, [self._fan_out(job_id)]), None
        except Exception as exc:
            log.exception("the run of job %s raised", job_id)
            return None, f"{type(exc).__name__}: {exc}"[:2000]

    def _finish(self, active: _Active, reason: str | None, error: str | None) -> None:
        if self._preempt_timer is not None:  # it was for this run: the next one gets a share of its own
            self._preempt_timer.cancel()
            self._preempt_timer = None
        record = active.record
        record.stop_reason, record.error = reason, error
        record.last_active_at = self._stamp()
        if error is not None:
            record.state = "failed"
        elif reason in DONE_REASONS:
            record.state = "done"
        elif reason in _STOP_REQUESTS:
            if active.intent == "cancel" or (active.intent is None and reason == "cancelled"):
                record.state = "cancelled"
            elif active.intent == "hold":
                record.state = "held"
            else:
                record.state = "paused"
                if active.intent == "preempt":
                    record.preempted_at = record.last_active_at
        else:  # error_llm, error_dataroom, ceiling_seconds, ...
            record.state = "failed"
        problem = self._save(record)
        if problem is not None:
            self._give_up(record, problem)
        if record.finished:
            self._jobs.pop(record.id, None)
        self._active = None
        self._close_subscribers(record.id)
        self._changed()

    def _fan_out(self, job_id: str) -> Listener:
        def deliver(event: Event) -> None:
            for subscription in self._subscribers.get(job_id, ()):
                subscription.put(event)
        return deliver

    # -- helpers (called with the lock held) ----------------------------------------------------

    def _save(self, record: JobRecord) -> str | None:
        """Write the job's state. A failing disk (full, read-only) is logged and returned, never raised:
        raised in the worker, it would end the worker and strand every job after this one."""
        try:
            self.store.save(record)
        except OSError as exc:
            log.error("could not record job %s as %s: %s", record.id, record.state, exc)
            return f"{type(exc).__name__}: {exc}"
        return None

    def _give_up(self, record: JobRecord, problem: str) -> None:
        """A job whose state could not be written is failed: on disk too when the disk lets us."""
        record.state = "failed"
        record.error = f"the scheduler could not record this job's state ({problem})" + (
            f"; the run had failed: {record.error}" if record.error else "")
        self._save(record)
        self._jobs.pop(record.id, None)

    def _enqueue(self, record: JobRecord) -> None:
        """Join the end of the foreground FIFO and preempt the running run: at once, or once it has had
        its fair share of the slot (see the module's docstring)."""
        record.state, record.foreground = "queued", True
        record.queued_at = self._stamp()
        record.preempted_at = None
        self.store.save(record)
        self._jobs[record.id] = record
        active = self._active
        if active is not None and active.intent is None:
            wait = self._share_left(active, record)
            if wait <= 0:
                active.ask("preempt", "paused")
            elif self._preempt_timer is None:
                self._preempt_timer = threading.Timer(wait, self._preempt_when_due, [active])
                self._preempt_timer.daemon = True
                self._preempt_timer.start()
        self._changed()

    def _share_left(self, active: _Active, newcomer: JobRecord) -> float:
        """Seconds until the running run may be preempted for `newcomer`."""
        running = active.record
        share = self.base_settings.searchbox_fair_share_seconds
        if self.base_settings.searchbox_operator or not running.foreground or running.owner == newcomer.owner:
            return 0.0
        return active.began + share - time.monotonic()

    def _preempt_when_due(self, active: _Active) -> None:
        """The fair share of the run a newcomer waits for is spent: preempt it, if it still runs."""
        with self._cond:
            self._preempt_timer = None
            if self._active is active and active.intent is None and not self._stopping:
                active.ask("preempt", "paused")
                self._changed()

    def _active_for(self, job_id: str) -> _Active | None:
        return self._active if self._active is not None and self._active.record.id == job_id else None

    def _close_subscribers(self, job_id: str) -> None:
        for subscription in self._subscribers.pop(job_id, ()):
            subscription.put(None)

    def _changed(self) -> None:
        self._version += 1
        self._cond.notify_all()

    def _stamp(self) -> float:
        """Wall-clock time, strictly increasing within this process so FIFO and stack orders never tie."""
        self._last_stamp = max(time.time(), self._last_stamp + 1e-6)
        return self._last_stamp
