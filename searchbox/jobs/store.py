"""The job store: every job's folder (design §2.2) plus a `job.json` with its scheduling state, so the
queue and the history survive a restart (design §3.1).

    <root>/<job_id>/job.json   state, owner, question, timestamps, knob overrides
    <root>/<job_id>/...        the job folder create_job lays out
    <root>/.explore/<id>/      a dataroom loaded in the explorer (scratch_folder), while its visitor uses it
    <root>/.visitor-key        the secret that client addresses are digested with (visitor_of)

A job is built in a hidden staging folder and renamed into place only once its job.json exists, so
a refused dataroom or a crash mid-create never leaves a half-made job that listing would show.

A public app's disk stays bounded (design §5): each new job or explorer folder first prunes finished jobs,
oldest first, past an age and while all jobs take more than a total size; explorer folders have their own
bound (a few per client address, and the same total size for all of them) and never cost a run; a queued,
running, paused or held job is never removed. A visitor may have only so many runs waiting at once, so one cannot fill the queue all wait in:
counted by the visitor id their page sends (`owner`), by the client address the server saw (`visitor`,
which an API caller cannot change by sending another id), and over all visitors together.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import os
import re
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from searchbox.records.removal import remove_job_folder
from searchbox.jobs.job import create_job
from searchbox.records.files import read_json, write_json
from searchbox.settings import Settings
from searchbox.settings.urls import without_userinfo

log = logging.getLogger(__name__)

JobState = Literal["queued", "running", "paused", "held", "done", "failed", "cancelled"]
STATES: frozenset[str] = frozenset(get_args(JobState))
FINISHED: frozenset[str] = frozenset({"done", "failed", "cancelled"})
# Runs that wait for the model slot or hold it (a preempted one resumes by itself; a held one does not).
WAITING: frozenset[str] = frozenset({"queued", "running", "paused"})

STATE_FILE = "job.json"
_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")  # token_urlsafe output; also keeps ids from naming other paths
# `max_output_tokens` is a knob, `hf_token` a secret: "token" counts only as a whole word.
_SECRET_NAME = re.compile(r"api_?key|secret|password|(^|_)token($|_)", re.IGNORECASE)
_SECRET_KNOBS = {f.name for f in dataclasses.fields(Settings) if f.metadata.get("secret")}


@dataclass
class JobRecord:
    id: str
    owner: str  # opaque: the browser session or user that submitted the job
    question: str
    visitor: str = ""  # the client the server saw submit it (a digest of its address), for the per-address limit
    state: JobState = "queued"
    created_at: float = 0.0
    updated_at: float = 0.0
    queued_at: float | None = None  # when it last joined the foreground FIFO (orders the queue)
    last_active_at: float | None = None  # when it last ran (orders backfill: oldest idle first)
    preempted_at: float | None = None  # set while paused by a foreground run (a stack: latest resumes first)
    stop_reason: str | None = None
    error: str | None = None  # why the run failed, when run_fn raised
    overrides: dict[str, Any] = field(default_factory=dict)
    foreground: bool = True  # False while it runs as a backfill
    # Each time it ran, where: {server (URL; null: the app's own model), server_number, slot, started_at,
    # ended_at, stop_reason, and server_down when that server stopped answering}.
    placements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


def public_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """Overrides without secrets: those come from the environment and are never written to a job."""
    return {k: v for k, v in overrides.items() if k not in _SECRET_KNOBS and not _SECRET_NAME.search(k)}


class QueueFull(ValueError):
    """A new run refused because too many wait already (the visitor's, its address's or everyone's)."""


@dataclass(frozen=True)
class QueueLimits:
    """Runs that may wait at once beyond one visitor id's own (0 = no limit): from one client address, and
    from everyone together."""

    per_visitor: int = 0
    total: int = 0

    @classmethod
    def of(cls, settings: Settings) -> QueueLimits:
        return cls(settings.searchbox_max_queued_per_address, settings.searchbox_max_queued_total)


_STALE_STAGING_S = 3600  # a half-made job folder this old was left by a crash, not by a create in progress
_REMOVING = ".removing-"  # a pruned job is renamed out of the listing first, then deleted
EXPLORE_DIR = ".explore"
EXPLORE_PER_ADDRESS = 2  # explorer datarooms one client address holds at once (a tab or two)
_VISITOR_KEY = ".visitor-key"


class JobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # The creates under way (job id -> owner, visitor), counted against the limits with the listed jobs:
        # by id, a job that is already listed but not yet out of it is counted once, not twice.
        self._creating: dict[str, tuple[str, str]] = {}
        self._finished_bytes: dict[str, int] = {}  # a finished job no longer grows: measured once
        self._remove_stale_staging()
        for path in root.glob(_REMOVING + "*"):  # a prune cut short by a crash, or a folder set aside
            self.discard(path)
        # Explorer folders belong to the page sessions of a process; none outlives it.
        for path in (root / EXPLORE_DIR).glob("*"):
            self.discard(path)
        self._visitor_key = b""  # read or made on first use

    def _remove_stale_staging(self) -> None:
        """A kill during `create` leaves a `.staging-*` folder (never listed as a job); free its disk."""
        for path in self.root.glob(".staging-*"):
            try:
                stale = time.time() - path.stat().st_mtime > _STALE_STAGING_S
            except OSError:  # removed meanwhile
                continue
            if stale:
                log.info("removing %s, left by an interrupted job creation", path.name)
                self.discard(path)

    def visitor_of(self, address: str) -> str:
        """The digest of a client address that job.json keeps (empty for none): keyed with this store's
        own secret, so the jobs folder names no address."""
        if not address:
            return ""
        with self._lock:
            self._visitor_key = self._visitor_key or _secret_key(self.root / _VISITOR_KEY)
        return hmac.new(self._visitor_key, address.encode(), hashlib.sha256).hexdigest()[:32]

    def scratch_folder(self, base_settings: Settings, visitor: str = "") -> Path:
        """A new, empty folder for a dataroom loaded in the explorer, named by its visitor (the digest of
        the client address). Scratch never costs another visitor a finished run: each address keeps at
        most EXPLORE_PER_ADDRESS folders (its own oldest go first), and while all explorer folders take
        more than SEARCHBOX_JOBS_MAX_MB the oldest explorer folders go, never a job. The caller removes it."""
        self.prune(base_settings.searchbox_keep_days * 86400.0, base_settings.searchbox_jobs_max_mb * 2**20)
        root = self.root / EXPLORE_DIR
        root.mkdir(mode=0o700, exist_ok=True)
        owner = visitor if _ID.match(visitor or "-") else "anon"
        with self._lock:
            folders = sorted((p for p in root.iterdir() if p.is_dir() and not p.is_symlink()),
                             key=lambda p: p.stat().st_mtime)
            own = [p for p in folders if p.name.startswith(owner + "-")]
            for path in own[:max(0, len(own) - EXPLORE_PER_ADDRESS + 1)]:  # room for the new one
                self.discard(path)
                folders.remove(path)
            max_bytes = base_settings.searchbox_jobs_max_mb * 2**20
            sizes = {p: _disk_bytes(p) for p in folders} if max_bytes else {}
            total = sum(sizes.values())
            for path in folders:
                if not max_bytes or total <= max_bytes:
                    break
                self.discard(path)
                total -= sizes[path]
            return Path(tempfile.mkdtemp(prefix=owner + "-", dir=root))

    def job_dir(self, job_id: str) -> Path:
        if not _ID.match(job_id):
            raise ValueError(f"not a job id: {job_id!r}")
        return self.root / job_id

    def create(self, question: str, source: Path, overrides: dict[str, Any], owner: str,
               base_settings: Settings, *, max_waiting: int = 0, visitor: str = "",
               limits: QueueLimits | None = None) -> JobRecord:
        """Lay out a new queued job, after pruning old ones (SEARCHBOX_KEEP_DAYS, SEARCHBOX_JOBS_MAX_MB).
        max_waiting > 0: refused when the owner already has that many runs waiting; `limits` bound the runs
        waiting from the `visitor` (a client address's digest) and over everyone (QueueFull past any of them).
        DataroomError, SettingsError, ValueError propagate; nothing is left."""
        job_id = secrets.token_urlsafe(16)
        limits = limits or QueueLimits()
        with self._lock:  # counted with the creates under way: a burst of submits cannot pass the limits
            waiting = {r.id: (r.owner, r.visitor) for r in self.list() if r.state in WAITING} | self._creating
            mine = sum(who == owner for who, _ in waiting.values())
            if max_waiting and mine >= max_waiting:
                raise QueueFull(f"You already have {mine} run{'s' if mine != 1 else ''} queued or running, the "
                                 "most one visitor may have at once; wait for one to finish, or cancel one in the Jobs tab.")
            from_there = sum(bool(visitor) and where == visitor for _, where in waiting.values())
            if limits.per_visitor and from_there >= limits.per_visitor:
                raise QueueFull(f"Your address already has {from_there} runs queued or running, the most one address "
                                 "may have at once; wait for one to finish, or cancel one in the Jobs tab.")
            if limits.total and len(waiting) >= limits.total:
                raise QueueFull(f"This app already has {len(waiting)} runs queued or running, the most it takes at "
                                 "once; try again in a few minutes.")
            self._creating[job_id] = (owner, visitor)
        try:
            self.prune(base_settings.searchbox_keep_days * 86400.0, base_settings.searchbox_jobs_max_mb * 2**20)
            return self._create(job_id, question, source, overrides, owner, visitor, base_settings)
        finally:
            with self._lock:
                self._creating.pop(job_id, None)

    def _create(self, job_id: str, question: str, source: Path, overrides: dict[str, Any], owner: str,
                visitor: str, base_settings: Settings) -> JobRecord:
        overrides = public_overrides(overrides)
        url = overrides.get("llama_url") or ""
        if without_userinfo(url) != url:  # job.json never holds a password
            if url != base_settings.llama_url:
                raise ValueError("The endpoint URL holds a user name and password (user:password@), which would be "
                                 "stored with the run; use an endpoint that needs none in its URL")
            del overrides["llama_url"]  # the operator's own: the environment gives it to the run again
        settings = base_settings.with_overrides(**overrides)  # unknown or bad knobs fail before any file exists
        staging = self.root / f".staging-{job_id}"
        try:
            create_job(staging, question, source, settings)
            now = time.time()
            record = JobRecord(job_id, owner, question.strip(), visitor=visitor, created_at=now, updated_at=now,
                               overrides=overrides)
            write_json(staging / STATE_FILE, dataclasses.asdict(record))
            os.rename(staging, self.job_dir(job_id))
        except BaseException:
            self.discard(staging)
            raise
        return record

    def get(self, job_id: str) -> JobRecord | None:
        if not _ID.match(job_id):
            return None
        return self._load(self.root / job_id)

    def save(self, record: JobRecord) -> None:
        record.updated_at = time.time()
        write_json(self.job_dir(record.id) / STATE_FILE, dataclasses.asdict(record))

    def settings_for(self, record: JobRecord, base: Settings) -> Settings:
        settings = base.with_overrides(**record.overrides)
        if settings.llama_url and settings.llama_url != base.llama_url and settings.llama_api_key:
            # An endpoint the run names itself (a visitor's own): the operator's key is for the operator's.
            settings = settings.with_overrides(llama_api_key="")
        return settings

    def list(self, owner: str | None = None) -> list[JobRecord]:
        """Newest first; owner None lists everyone's jobs (an operator's view)."""
        records = []
        for path in self.root.iterdir():
            if path.name.startswith(".") or not path.is_dir():
                continue
            record = self._load(path)
            if record is not None and (owner is None or record.owner == owner):
                records.append(record)
        return sorted(records, key=lambda r: r.created_at, reverse=True)

    def prune(self, max_age_s: float, max_bytes: int, now: float | None = None) -> list[str]:
        """Delete finished jobs (0 turns a bound off): those finished more than max_age_s ago, then the
        oldest while all jobs together take more than max_bytes of disk. The ids deleted."""
        if not max_age_s and not max_bytes:
            return []
        now = time.time() if now is None else now
        with self._lock:  # two creates at once must not measure or delete the same jobs twice
            records = sorted(self.list(), key=lambda r: r.updated_at)  # updated last when it finished
            sizes = {r.id: self._disk_bytes(r) for r in records}
            # Jobs only: explorer scratch has its own budget (scratch_folder) and never makes a run go.
            total, removed = sum(sizes.values()), []
            for record in (r for r in records if r.finished):
                too_old = bool(max_age_s) and now - record.updated_at > max_age_s
                if too_old or (max_bytes and total > max_bytes):
                    self._remove(record.id)
                    total -= sizes[record.id]
                    removed.append(record.id)
        if removed:
            log.info("removed %d finished job(s) past SEARCHBOX_KEEP_DAYS or SEARCHBOX_JOBS_MAX_MB; jobs now take %d MB",
                     len(removed), total // 2**20)
        return removed

    def delete(self, job_id: str) -> bool:
        """Delete a finished job (a visitor's Delete); False when there is none, or it is not finished."""
        with self._lock:
            record = self.get(job_id)
            if record is None or not record.finished:
                return False
            self._remove(job_id)
            return True

    def _disk_bytes(self, record: JobRecord) -> int:
        if record.id in self._finished_bytes:
            return self._finished_bytes[record.id]
        size = _disk_bytes(self.job_dir(record.id))
        if record.finished:
            self._finished_bytes[record.id] = size
        return size

    def _remove(self, job_id: str) -> None:
        self.discard(self.job_dir(job_id), f"{_REMOVING}{job_id}")
        self._finished_bytes.pop(job_id, None)

    def discard(self, path: Path, aside: str = "") -> None:
        """Remove a folder of this store (a job's, a staging or an explorer folder), never raising: another
        visitor's request or the app's start must not fail on what one visitor built. It is renamed out of
        every listing first (to `aside`, a `.removing-*` name in the root); one that cannot be removed stays
        there, said in the log, and is tried again at the next start."""
        doomed = path
        if not (path.parent == self.root and path.name.startswith(_REMOVING)):
            doomed = self.root / (aside or f"{_REMOVING}{secrets.token_urlsafe(12)}")
            try:
                os.rename(path, doomed)  # out of every listing at once
            except FileNotFoundError:
                return
            except OSError as exc:  # not even renamed: it stays where it is, still counted
                log.warning("could not set %s aside to remove it (%s)", path.name, exc)
                return
        try:
            remove_job_folder(doomed)
        except OSError as exc:
            log.warning("could not remove %s (%s); it stays set aside as %s and is tried again at the next start",
                        path.name, exc, doomed.name)

    def _load(self, job_dir: Path) -> JobRecord | None:
        """The job's record; a missing or corrupt job.json is logged and skipped, never raised."""
        data = read_json(job_dir / STATE_FILE)
        if not job_dir.is_dir():
            return None
        try:
            record = JobRecord(**data)
            if (record.state not in STATES or record.id != job_dir.name
                    or not isinstance(record.created_at, (int, float)) or not isinstance(record.overrides, dict)
                    or not isinstance(record.placements, list)):
                raise ValueError(f"state {record.state!r}, id {record.id!r}")
        except (TypeError, ValueError) as exc:
            log.warning("skipping job %s: its %s is missing or corrupt (%s)", job_dir.name, STATE_FILE, exc)
            return None
        return record


def _secret_key(path: Path) -> bytes:
    """The key in `path`, made on first use (readable by the app's user only)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    key = secrets.token_bytes(32)
    fd, staged = tempfile.mkstemp(dir=path.parent, prefix=_VISITOR_KEY + "-")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(key)
        os.link(staged, path)  # whole, or not at all: another process may be making it too
    except FileExistsError:
        return path.read_bytes()
    finally:
        os.unlink(staged)
    return key


def _disk_bytes(folder: Path) -> int:
    """Disk a folder takes (allocated blocks: a sparse file counts what it uses), links never followed."""
    total, pending = 0, [folder]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:  # removed meanwhile, or unreadable: it takes nothing we could free
            continue
        for entry in entries:
            try:
                total += entry.stat(follow_symlinks=False).st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
            except OSError:
                continue
    return total
