"""Who uploaded what, and for how long an upload is kept.

Gradio stores whatever reaches /gradio_api/upload, with no session, for SEARCHBOX_UPLOAD_KEEP_SECONDS
(a day), and takes any file in its upload folder as a later call's input. So each upload is granted
to the client address that sent it (ui.visitors), within caps per address and in total (the file gate
asks, ui.file_gate, before a byte is stored and again as the body arrives). An upload in flight holds its
declared size against its own address, but against the total only what has arrived plus AHEAD: a few
addresses that declare big uploads and trickle them hold little of the room every visitor shares. Its
files are counted as its parts arrive, not as one per request. A handler that takes
an upload claims it for its page session: a path that another address uploaded, or that another
session already took, is refused, so no one starts a run or loads the explorer on a stranger's
upload by naming its path. An upload nothing claimed goes after SEARCHBOX_UPLOAD_UNCLAIMED_SECONDS;
a claimed one when every session that took it has ended or let it go (a run keeps its own copy of its
dataroom, so an API caller's run lets it go at once; a page keeps it while it shows it).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from searchbox.settings import Settings

_MB = 1024 * 1024
# What an upload in flight holds of the total beyond the bytes that arrived: at a real link's pace it
# fills this in seconds, and an address has at most SEARCHBOX_UPLOADS_PER_ADDRESS uploads in flight.
AHEAD = 8 * _MB


def canonical(path: str | Path) -> str:
    """A path as Gradio resolves one it serves or takes as input (gradio.utils.is_in_or_equal)."""
    return str(Path(os.path.abspath(str(path))).resolve())


class UploadRefused(Exception):
    """An upload over a cap: the HTTP status and the reason, both shown to the caller."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class NotYourUpload(ValueError):
    """A handler was given an upload that is not the caller's to take."""


@dataclass(frozen=True)
class UploadLimits:
    per_address: int  # files; 0: no limit
    per_address_bytes: int  # 0: no limit
    total_bytes: int  # 0: no limit
    unclaimed_s: float
    keep_s: float  # Gradio deletes every upload this old itself
    stall_s: float = 0  # a body that brings less than the file gate's pace over this long is cut off; 0: never

    @classmethod
    def of(cls, settings: Settings) -> UploadLimits:
        return cls(settings.searchbox_uploads_per_address, settings.searchbox_uploads_per_address_mb * _MB,
                   settings.searchbox_uploads_total_mb * _MB, settings.searchbox_upload_unclaimed_seconds,
                   settings.searchbox_upload_keep_seconds, settings.searchbox_upload_stall_seconds)


@dataclass(eq=False)
class Grant:
    """One upload request of one address: reserved at its declared size for its address, and at what
    arrived plus AHEAD in the total, until stored; then holding its files."""

    address: str
    size: int  # declared: what its address holds
    made: float
    held: int = 0  # what it holds of the total
    parts: int = 1  # the parts seen so far while in flight
    paths: frozenset[str] = frozenset()
    stored: bool = False
    sessions: set[str] = field(default_factory=set)  # the page sessions that hold it
    done: bool = False  # taken, and let go by every session that held it

    @property
    def files(self) -> int:
        return len(self.paths) if self.stored else self.parts


class UploadLedger:
    def __init__(self, limits: UploadLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self._grants: list[Grant] = []
        self._live_sessions: set[str] = set()
        self._lock = threading.Lock()

    # -- the file gate's side --------------------------------------------------------------

    def reserve(self, address: str, size: int) -> Grant:
        """Room for an upload of `size` bytes from `address`, or UploadRefused saying which cap it meets."""
        self.sweep()
        limits = self.limits
        with self._lock:
            mine = [g for g in self._grants if g.address == address]
            held_files, held_bytes = sum(g.files for g in mine), sum(g.size for g in mine)
            if limits.per_address_bytes and size > limits.per_address_bytes:
                raise UploadRefused(413, f"This upload ({_mb(size)}) is more than one address may keep here "
                                         f"({_mb(limits.per_address_bytes)}).")
            if limits.per_address and held_files >= limits.per_address:
                raise UploadRefused(429, f"Your address already has {_count(held_files)} kept here (at most "
                                         f"{limits.per_address}; each is {self._keep()}). Close a page you uploaded "
                                         "from, or try again later.")
            if limits.per_address_bytes and held_bytes + size > limits.per_address_bytes:
                raise UploadRefused(429, f"Your address already has {_mb(held_bytes)} of uploads kept here; this one "
                                         f"({_mb(size)}) would pass {_mb(limits.per_address_bytes)} (each is "
                                         f"{self._keep()}). Close a page you uploaded from, or try again later.")
            grant = Grant(address, size, self._clock(), held=min(size, AHEAD))
            self._check_total(grant.held)
            self._grants.append(grant)
            return grant

    def grow(self, grant: Grant, arrived: int, parts: int) -> None:
        """An upload in flight has `arrived` bytes and `parts` parts so far: UploadRefused when its files pass
        its address's cap, or its room in the total cannot grow with it."""
        limits = self.limits
        with self._lock:
            others = sum(g.files for g in self._grants if g.address == grant.address and g is not grant)
            if limits.per_address and others + parts > limits.per_address:
                raise UploadRefused(429, f"This upload has more files than your address may keep here (at most "
                                         f"{limits.per_address}, {others} kept already; each is {self._keep()}).")
            grant.parts = max(parts, 1)  # counted as one file before its first part arrives
            held = min(grant.size, arrived + AHEAD)
            if held > grant.held:
                self._check_total(held - grant.held)
                grant.held = held

    def _check_total(self, more: int) -> None:
        total = self.limits.total_bytes
        if total and sum(g.held for g in self._grants) + more > total:
            raise UploadRefused(507, "The app holds all the uploads it can keep right now; try again in a few minutes.")

    def _keep(self) -> str:
        return (f"kept until the page that took it is closed, or {_duration(self.limits.unclaimed_s)} when nothing "
                "used it")

    def stored(self, grant: Grant, paths: Iterable[str]) -> None:
        with self._lock:
            grant.paths = frozenset(canonical(p) for p in paths)
            grant.stored = True
            grant.held = grant.size

    def cancel(self, grant: Grant) -> None:
        """The upload was not stored (refused, cut off, or the client went away) and nothing of it is left on
        disk: its room is free again."""
        with self._lock:
            if grant in self._grants:
                self._grants.remove(grant)

    def uploaders(self, path: str | Path) -> set[str] | None:
        """The addresses that uploaded the file at `path`; None when it is no upload this ledger holds."""
        key = canonical(path)
        with self._lock:
            found = {g.address for g in self._grants if key in g.paths}
        return found or None

    # -- the handlers' side ----------------------------------------------------------------

    def claim(self, path: str | Path, address: str, session: str | None) -> None:
        """Take the upload at `path` for a call from `address` in page session `session` (None: a call with
        no session, which takes it once, for a run that copies it); NotYourUpload when it is not theirs."""
        key = canonical(path)
        with self._lock:
            free = [g for g in self._grants if key in g.paths and g.address == address
                    and (not g.sessions or (session and session in g.sessions))]
            if not free:
                raise NotYourUpload("This upload is not yours, or it was deleted (an upload no page or run took is "
                                    f"kept {_duration(self.limits.unclaimed_s)}): upload the dataroom again.")
            if session:
                for grant in free:
                    grant.sessions.add(session)
                self._live_sessions.add(session)

    def release(self, path: str | Path, session: str | None) -> None:
        """A call that took the upload is done with it (an API caller's run has its own copy): it goes once
        no other session holds it."""
        key = canonical(path)
        with self._lock:
            for grant in (g for g in self._grants if key in g.paths and session in g.sessions):
                grant.sessions.discard(session)
                grant.done = not grant.sessions
        self.sweep()

    def release_session(self, session: str | None) -> None:
        """A page session ended (its tab closed or reloaded): the uploads only it held go now."""
        with self._lock:
            self._live_sessions.discard(session or "")
        self.sweep()

    def sweep(self) -> None:
        """Delete the uploads no one needs any more, and forget them."""
        now = self._clock()
        with self._lock:
            expired = [g for g in self._grants if g.stored and self._expired(g, now)]
            self._grants = [g for g in self._grants if g not in expired]
            still_held = {p for g in self._grants for p in g.paths}
        for path in {p for g in expired for p in g.paths} - still_held:
            _remove(path)

    def _expired(self, grant: Grant, now: float) -> bool:
        age = now - grant.made
        if age >= self.limits.keep_s or not any(os.path.lexists(p) for p in grant.paths):
            return True  # Gradio deleted it already, or is about to
        if grant.sessions:
            return not grant.sessions & self._live_sessions
        return grant.done or age >= self.limits.unclaimed_s

    def start_sweeping(self) -> None:
        """Sweep in the background, often enough that an unclaimed upload goes on time."""
        every = max(0.5, min(60.0, self.limits.unclaimed_s / 4))

        def loop() -> None:
            while True:
                time.sleep(every)
                self.sweep()

        threading.Thread(target=loop, name="searchbox-upload-sweeper", daemon=True).start()


def _remove(path: str) -> None:
    """An upload's file and the folder Gradio made for it, when that is empty."""
    try:
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
    except OSError:  # gone already, or its folder holds another file
        pass


def _count(files: int) -> str:
    return f"{files} upload" + ("" if files == 1 else "s")


def _mb(size: int) -> str:
    return f"{size / _MB:.1f} MB"


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 60 else f"{seconds:g} s"
