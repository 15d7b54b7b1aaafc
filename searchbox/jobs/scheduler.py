"""The scheduler (design §3.1): visitors' runs over the slots of a pool of model servers.

The slots: SEARCHBOX_ENDPOINTS names the servers and their slots as `ablate --endpoints` does (the same
pool: llm/endpoints.py reads it, jobs/pool.py counts its free slots); without it the app's own model
(LLAMA_URL, else the built-in runtime) is one slot.
A run holds one slot while it runs; a run on a pool server talks to that server, whatever LLAMA_URL
says (a run that names an endpoint of its own keeps it, and still takes a slot). job.json lists every
slot a job ran on (`placements`).

Which job takes a free slot:
1. foreground runs, first in first out (submitted or explicitly resumed);
2. runs a foreground run preempted, the most recently preempted first (a stack);
3. auto-backfill: the paused run idle the longest (smallest last_active_at), itself preemptible.
Within each, a run of the visitor who holds the fewest slots now goes first: one visitor's runs
cannot fill every slot that frees while another visitor's wait.

A new foreground run preempts only when every slot is busy (and none is being freed already): one
running run is asked to stop ("paused") and stops cleanly at its next check; because a run resumes
from its session, preempting loses nothing. The one asked: a backfill, else a run of the newcomer's own
visitor (the one running longest), at once; else a run of the visitor holding the most slots (more
than the newcomer's visitor holds), once it has had its slot for SEARCHBOX_FAIR_SHARE_SECONDS since it
last got it (at once in an operator's app), so that a stream of strangers' submits cannot keep every
other run paused. A user's pause holds a job ("held") until an explicit resume.

A server that stops answering: a run that stopped with error_llm on a pool server whose GET /models no
longer answers has not failed. The server leaves the pool, the run goes back to the front of the line
as a preempted run and resumes from its session on another slot; the scheduler asks a dropped server
every `probe_every_s` and puts it back once it answers.

Every state change is written to the store under one lock, so a restart finds the queue as it was:
running jobs return to the resumable pool.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from searchbox.agent.control import RunControl, StopRequest
from searchbox.jobs.store import JobRecord, JobStore
from searchbox.jobs.pool import Pool, Slot
from searchbox.llm.endpoints import Server, endpoint_answers, pool_servers
from searchbox.records.events import DONE_REASONS, Event, Listener
from searchbox.settings import Settings
from searchbox.settings.urls import without_userinfo

log = logging.getLogger(__name__)

RunFn = Callable[[Path, Settings, RunControl, list[Listener]], str]
Subscription = queue.Queue[Event | None]

_STOP_REQUESTS = frozenset({"paused", "cancelled", "interrupted"})
ERROR_LLM = "error_llm"  # the loop's stop once the client's own retries are spent
PROBE_EVERY_S = 10.0  # how often a dropped server is asked whether it answers again

# Why the scheduler asked the running run to stop. RunControl keeps only the first request, so when
# several arrive the strongest intent decides where the job goes: a cancel beats a user's pause,
# which beats a preemption, which beats a shutdown.
Intent = Literal["shutdown", "preempt", "hold", "cancel"]
_RANK: dict[Intent, int] = {"shutdown": 0, "preempt": 1, "hold": 2, "cancel": 3}


@dataclass
class _Active:
    record: JobRecord
    control: RunControl
    slot: Slot
    intent: Intent | None = None
    began: float = field(default_factory=time.monotonic)

    def ask(self, intent: Intent, request: StopRequest) -> None:
        if self.intent is None or _RANK[intent] > _RANK[self.intent]:
            self.intent = intent
        self.control.request(request)


@dataclass(frozen=True)
class Standing:
    """Where a job stands: its place among the runs waiting for a slot (1 = next; None when it is not
    waiting), and the pool's slots."""

    state: str
    place: int | None
    waiting: int  # runs waiting for a slot, all visitors together
    busy: int  # slots running a run
    slots: int  # slots of the servers that answer
    servers_down: int  # servers out of the pool for not answering


class Scheduler:
    def __init__(self, store: JobStore, run_fn: RunFn, base_settings: Settings,
                 servers: list[Server] | None = None, probe_every_s: float = PROBE_EVERY_S) -> None:
        self.store = store
        self.run_fn = run_fn
        self.base_settings = base_settings
        self.pool = Pool(servers if servers is not None else pool_servers(base_settings))
        self.probe_every_s = probe_every_s
        self._cond = threading.Condition()  # the one lock over every state change
        self._jobs: dict[str, JobRecord] = {}  # every unfinished job the scheduler knows
        self._active: dict[str, _Active] = {}  # job id -> its run in flight
        # Values are tuples, replaced whole, so the run's listener can read them without the lock.
        self._subscribers: dict[str, tuple[Subscription, ...]] = {}
        self._threads: set[threading.Thread] = set()  # the dispatcher, the prober, one per run in flight
        # A run another visitor's newcomer will preempt once its fair share is spent: job id -> when (monotonic).
        self._due: dict[str, float] = {}
        self._started = False
        self._stopping = False
        self._version = 0
        self._last_stamp = 0.0

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Load the store's unfinished jobs and start dispatching. Runs a killed app left "running" go
        back to the resumable pool; held runs stay held; queued ones keep their order."""
        with self._cond:
            if self._started:
                raise RuntimeError("the scheduler is already started")
            self._started = True
            for record in self.store.list():
                if record.finished or record.id in self._jobs:
                    continue
                if record.state == "running":
                    record.state = "paused"
                    self._save(record)  # when this fails, the next start finds it "running" and pauses it again
                self._jobs[record.id] = record
            self._spawn(self._dispatch, "searchbox-scheduler")
            if any(server.url is not None for server in self.pool.servers):
                self._spawn(self._probe_dropped, "searchbox-pool-probe")
            self._changed()

    def stop(self, timeout: float | None = None) -> None:
        """Interrupt the running runs (they return to the pool and resume after a restart) and end the threads."""
        with self._cond:
            self._stopping = True
            for active in self._active.values():
                active.ask("shutdown", "interrupted")
            self._cond.notify_all()
            threads = list(self._threads)
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

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
        it preempts a running run when every slot is busy."""
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
            active = self._active.get(job_id)
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
            active = self._active.get(job_id)
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

    def standing(self, job_id: str) -> Standing:
        """Where the job stands now: its place in line and the pool's slots (what the page says)."""
        with self._cond:
            line = [r.id for r in self._waiting_order()]
            record = self._jobs.get(job_id) or self.store.get(job_id)
            place = line.index(job_id) + 1 if job_id in line else None
            return Standing(record.state if record is not None else "", place, len(line), len(self._active),
                            self.pool.slots, len(self.pool.dropped))

    def occupancy(self) -> Standing:
        """The pool's slots and the runs waiting for one, of no job in particular (what GET /health says)."""
        return self.standing("")

    @property
    def version(self) -> int:
        """Bumped on every state change: a UI polls it to know when to refresh its jobs table."""
        return self._version

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once nothing runs and nothing is waiting to (held jobs do not count)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._active and self._next() is None, timeout)

    # -- the dispatcher, the runs, the prober -----------------------------------------------------

    def _spawn(self, target: Callable[..., None], name: str, *args: object) -> None:
        thread = threading.Thread(target=self._forget_when_done, args=(target, *args), name=name, daemon=True)
        self._threads.add(thread)
        thread.start()

    def _forget_when_done(self, target: Callable[..., None], *args: object) -> None:
        try:
            target(*args)
        finally:
            with self._cond:
                self._threads.discard(threading.current_thread())

    def _dispatch(self) -> None:
        """Start a run on every free slot while runs wait, and preempt the runs whose fair share ran out."""
        while True:
            with self._cond:
                while not (self._stopping or self._startable() or self._overdue()):
                    self._cond.wait(self._until_due())  # woken by every change, so a new due time is seen
                if self._stopping:
                    return
                self._preempt_overdue()
                while self._startable():
                    record = self._next()
                    slot = self.pool.take()
                    assert record is not None and slot is not None
                    active = self._begin(record, slot)
                    if active is not None:
                        self._spawn(self._run, f"searchbox-run-{record.id[:8]}", active)

    def _startable(self) -> bool:
        return self._next() is not None and any(self.pool.free(s) > 0 for s in self.pool.servers)

    def _run(self, active: _Active) -> None:
        reason, error = self._execute(active)
        lost = reason == ERROR_LLM and self._server_gone(active)  # asked outside the lock: it may take seconds
        with self._cond:
            self._finish(active, reason, error, lost)

    def _probe_dropped(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping, timeout=self.probe_every_s)
                if self._stopping:
                    return
                dropped = list(self.pool.dropped)
            back = [server for server in dropped if server.url is not None and endpoint_answers(server.url)]
            if back:
                with self._cond:
                    for server in back:
                        log.warning("model server %s answers again: back in the pool", without_userinfo(server.url or ""))
                        self.pool.restore(server)
                    self._changed()

    def _waiting_order(self) -> list[JobRecord]:
        """The runs waiting for a slot, in the order free slots would take them: queued first, then the
        preempted stack, then backfill; within each, the visitor holding the fewest slots first (each run
        that goes counts for its visitor in what follows)."""
        held = Counter(active.record.owner for active in self._active.values())
        left = [r for r in self._jobs.values() if r.state in ("queued", "paused") and r.id not in self._active]
        order: list[JobRecord] = []
        while left:
            record = min(left, key=lambda r: (*self._kind(r), held[r.owner], self._within_kind(r)))
            order.append(record)
            left.remove(record)
            held[record.owner] += 1
        return order

    @staticmethod
    def _kind(record: JobRecord) -> tuple[int]:
        if record.state == "queued":
            return (0,)
        return (1,) if record.preempted_at is not None else (2,)

    @staticmethod
    def _within_kind(record: JobRecord) -> tuple[float, float]:
        if record.state == "queued":
            return (record.queued_at or record.created_at, record.created_at)
        if record.preempted_at is not None:
            return (-record.preempted_at, record.created_at)  # the latest preempted first
        return (record.last_active_at or record.created_at, record.created_at)  # idle the longest first

    def _next(self) -> JobRecord | None:
        order = self._waiting_order()
        return order[0] if order else None

    def _begin(self, record: JobRecord, slot: Slot) -> _Active | None:
        """The job runs on `slot`; None when its state cannot be recorded (it failed instead)."""
        if record.state == "paused" and record.preempted_at is None:
            record.foreground = False  # an auto-backfill; a preempted run keeps what it was
        record.state = "running"
        record.preempted_at = record.stop_reason = record.error = None
        record.last_active_at = self._stamp()
        server = slot.server
        record.placements.append({"server": without_userinfo(server.url) if server.url else None,
                                  "server_number": self.pool.number(server), "slot": slot.number,
                                  "started_at": record.last_active_at, "ended_at": None, "stop_reason": None})
        problem = self._save(record)
        if problem is not None:
            # Not run: a run whose job.json cannot be written would be lost track of by a restart.
            self.pool.give_back(slot)
            self._give_up(record, problem)
            self._close_subscribers(record.id)
            self._changed()
            return None
        active = self._active[record.id] = _Active(record, RunControl(), slot)
        self._changed()
        return active

    def _execute(self, active: _Active) -> tuple[str | None, str | None]:
        """The run, outside the lock; returns (stop reason, error). A raising run_fn is an error, not a crash."""
        job_id = active.record.id
        try:
            settings = self._settings_for(active)
            return self.run_fn(self.store.job_dir(job_id), settings, active.control, [self._fan_out(job_id)]), None
        except Exception as exc:
            log.exception("the run of job %s raised", job_id)
            return None, f"{type(exc).__name__}: {exc}"[:2000]

    def _settings_for(self, active: _Active) -> Settings:
        settings = self.store.settings_for(active.record, self.base_settings)
        url = _pool_url(active)
        return settings.with_overrides(llama_url=url) if url is not None else settings

    def _server_gone(self, active: _Active) -> bool:
        """Whether the run's error_llm came from its pool server no longer answering at all."""
        url = _pool_url(active)
        return url is not None and not endpoint_answers(url)

    def _finish(self, active: _Active, reason: str | None, error: str | None, lost: bool) -> None:
        record = active.record
        self.pool.give_back(active.slot)
        self._due.pop(record.id, None)  # it was for this run: the next one gets a share of its own
        record.stop_reason, record.error = reason, error
        record.last_active_at = self._stamp()
        record.placements[-1].update(ended_at=record.last_active_at, stop_reason=reason)
        if lost:
            self._take_out(active.slot.server)
            record.placements[-1]["server_down"] = True
        if error is not None:
            record.state = "failed"
        elif reason in DONE_REASONS:
            record.state = "done"
        elif reason in _STOP_REQUESTS or lost:
            if active.intent == "cancel" or (active.intent is None and reason == "cancelled"):
                record.state = "cancelled"
            elif active.intent == "hold":
                record.state = "held"
            else:
                record.state = "paused"
                if active.intent == "preempt" or lost:  # a lost server's run goes first to the next free slot
                    record.preempted_at = record.last_active_at
        else:  # error_llm, error_dataroom, ceiling_seconds, no_answer, ...
            # no_answer too: a run that gave no answer did not do what it was asked, and a list or a client that
            # reads only the state must never count it finished ("done" with a badge would be read as done).
            record.state = "failed"
        problem = self._save(record)
        if problem is not None:
            self._give_up(record, problem)
        if record.finished:
            self._jobs.pop(record.id, None)
        del self._active[record.id]
        self._close_subscribers(record.id)
        self._changed()

    def _take_out(self, server: Server) -> None:
        if server in self.pool.servers:
            log.warning("model server %s does not answer: out of the pool until it does, its runs resume elsewhere",
                        without_userinfo(server.url or ""))
            self.pool.drop(server)

    def _fan_out(self, job_id: str) -> Listener:
        def deliver(event: Event) -> None:
            for subscription in self._subscribers.get(job_id, ()):
                subscription.put(event)
        return deliver

    # -- helpers (called with the lock held) ----------------------------------------------------

    def _save(self, record: JobRecord) -> str | None:
        """Write the job's state. A failing disk (full, read-only) is logged and returned, never raised:
        raised in a scheduler thread, it would end it and strand every job after this one."""
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
        """Join the end of the foreground FIFO; when every slot is busy, preempt a running run: at once,
        or once it has had its fair share of its slot (see the module's docstring)."""
        record.state, record.foreground = "queued", True
        record.queued_at = self._stamp()
        record.preempted_at = None
        self.store.save(record)
        self._jobs[record.id] = record
        if self._short_of_slots():
            victim = self._victim(record)
            if victim is not None:
                wait = self._share_left(victim, record)
                if wait <= 0:
                    victim.ask("preempt", "paused")
                else:
                    self._due[victim.record.id] = time.monotonic() + wait
        self._changed()

    def _short_of_slots(self) -> bool:
        """More runs queued than slots free or being freed."""
        queued = sum(1 for r in self._jobs.values() if r.state == "queued")
        free = sum(self.pool.free(s) for s in self.pool.servers)
        freeing = sum(1 for a in self._active.values() if a.intent is not None)
        return queued > free + freeing

    def _victim(self, newcomer: JobRecord) -> _Active | None:
        """The run a newcomer preempts: a backfill, else its own visitor's, else one of the visitor holding
        the most slots when that is more than the newcomer's visitor holds; the longest running first."""
        held = Counter(a.record.owner for a in self._active.values())
        candidates = [a for a in self._active.values() if a.intent is None and a.record.id not in self._due
                      and (not a.record.foreground or a.record.owner == newcomer.owner
                           or held[a.record.owner] > held[newcomer.owner])]

        def rank(active: _Active) -> tuple[int, int, float]:
            group = 0 if not active.record.foreground else 1 if active.record.owner == newcomer.owner else 2
            return group, -held[active.record.owner], active.began

        return min(candidates, key=rank, default=None)

    def _share_left(self, active: _Active, newcomer: JobRecord) -> float:
        """Seconds until the running run may be preempted for `newcomer`."""
        running = active.record
        share = self.base_settings.searchbox_fair_share_seconds
        if self.base_settings.searchbox_operator or not running.foreground or running.owner == newcomer.owner:
            return 0.0
        return active.began + share - time.monotonic()

    def _overdue(self) -> bool:
        now = time.monotonic()
        return any(due <= now for due in self._due.values())

    def _until_due(self) -> float | None:
        return max(0.0, min(self._due.values()) - time.monotonic()) if self._due else None

    def _preempt_overdue(self) -> None:
        """The fair share of a run a newcomer waits for is spent: preempt it, if it still runs and a
        queued run still lacks a slot."""
        now = time.monotonic()
        for job_id in [job_id for job_id, due in self._due.items() if due <= now]:
            del self._due[job_id]
            active = self._active.get(job_id)
            if active is not None and active.intent is None and self._short_of_slots():
                active.ask("preempt", "paused")
                self._changed()

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



def _pool_url(active: _Active) -> str | None:
    """The pool server's URL the run talks to; None for the app's own model or an endpoint the run named."""
    return None if active.record.overrides.get("llama_url") else active.slot.server.url
