"""Who uploaded what, and for how long an upload is kept.

Gradio stores whatever reaches /gradio_api/upload, with no session, for SEARCHBOX_UPLOAD_KEEP_SECONDS
(a day), and takes any file in its upload folder as a later call's input. So each upload is granted
to the client address that sent it (ui.visitors), within caps per address and in total, counted as
the request's size before a byte is stored (the file gate asks, ui.file_gate). A handler that takes
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

    @classmethod
    def of(cls, settings: Settings) -> UploadLimits:
        return cls(settings.searchbox_uploads_per_address, settings.searchbox_uploads_per_address_mb * _MB,
                   settings.searchbox_uploads_total_mb * _MB, settings.searchbox_upload_unclaimed_seconds,
                   settings.searchbox_upload_keep_seconds)


@dataclass(eq=False)
class Grant:
    """One upload request of one address: reserved at its size until stored, then holding its files."""

    address: str
    size: int
    made: float
    paths: frozenset[str] = frozenset()
    stored: bool = False
    sessions: set[str] = field(default_factory=set)  # the page sessions that hold it
    done: bool = False  # taken, and let go by every session that held it

    @property
    def files(self) -> int:
        return len(self.paths) if self.stored else 1


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
            total = sum(g.size for g in self._grants)
            keep = f"kept until the page that took it is closed, or {_duration(limits.unclaimed_s)} when nothing used it"
            if limits.per_address_bytes and size > limits.per_address_bytes:
                raise UploadRefused(413, f"This upload ({_mb(size)}) is more than one address may keep here "
                                         f"({_mb(limits.per_address_bytes)}).")
            if limits.per_address and held_files >= limits.per_address:
                raise UploadRefused(429, f"Your address already has {_count(held_files)} kept here (at most "
                                         f"{limits.per_address}; each is {keep}). Close a page you uploaded from, "
                                         "or try again later.")
            if limits.per_address_bytes and held_bytes + size > limits.per_address_bytes:
                raise UploadRefused(429, f"Your address already has {_mb(held_bytes)} of uploads kept here; this one "
                                         f"({_mb(size)}) would pass {_mb(limits.per_address_bytes)} (each is {keep}). "
                                         "Close a page you uploaded from, or try again later.")
            if limits.total_bytes and total + size > limits.total_bytes:
                raise UploadRefused(507, "The app holds all the uploads it can keep right now; try again in a few "
                                         "minutes.")
            grant = Grant(address, size, self._clock())
            self._grants.append(grant)
            return grant

    def stored(self, grant: Grant, paths: Iterable[str]) -> None:
        with self._lock:
            grant.paths = frozenset(canonical(p) for p in paths)
            grant.stored = True

    def cancel(self, grant: Grant) -> None:
        """The upload was not stored (refused, or the client went away): its room is free again."""
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
