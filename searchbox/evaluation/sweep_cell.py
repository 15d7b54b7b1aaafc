"""One cell of a sweep (an entry, a question, a repeat) as an engine runs it: the run in its job
folder, then, when it stopped on the model's errors, whether its server still answers at all (a
server that does not is taken out of the pool, and the cell runs again on another)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from searchbox.agent.control import RunControl
from searchbox.jobs.job import stop_reason_of
from searchbox.jobs.scheduler import RunFn
from searchbox.llm.endpoints import Server, endpoint_answers
from searchbox.settings import Settings

ERROR_LLM = "error_llm"  # the loop's stop after the client's own retries are spent


@dataclass(frozen=True)
class CellOutcome:
    """What the driver learns from one run: how it stopped, where and when it ran."""

    stop_reason: str | None
    node: str
    started_at: float
    ended_at: float
    server_answers: bool = True  # False: it stopped on model errors and its endpoint no longer answers


@dataclass(frozen=True)
class Dispatch:
    """A cell handed to an engine: its prepared job folder (on the driver), its settings, its server."""

    job_dir: Path
    settings: Settings
    server: Server


class CellLost(Exception):
    """The machine running a cell went away: nothing of the run came back, so it runs again."""


class Engine(Protocol):
    """Where a sweep's runs execute. `execute` blocks until the run stops and leaves its records in
    the dispatch's job folder; the driver calls it from one thread per slot in flight."""

    name: str  # as sweep.json records it

    def open(self, dataroom: Path, endpoints: list[Server] | None) -> list[Server]:
        """Get ready to run cells over `dataroom`; returns the servers to run on (the endpoints, or the
        built-in runtime wherever it can run)."""
        ...

    def execute(self, dispatch: Dispatch) -> CellOutcome: ...

    def live(self, servers: list[Server]) -> list[Server]:
        """The servers still reachable after a CellLost (a lost node takes its built-in runtime along)."""
        ...

    def stop(self) -> None:
        """Ask every run in flight to stop cleanly ("interrupted": resumable); later dispatches do not run."""
        ...

    def close(self) -> None: ...


def run_cell(job_dir: Path, settings: Settings, run_fn: RunFn, control: RunControl, node: str) -> CellOutcome:
    """Run (or resume) the prepared job in job_dir; a stop already asked for skips the run."""
    started = time.time()
    if control.requested is None:
        run_fn(job_dir, settings, control, [])
    reason = stop_reason_of(job_dir)
    answers = not (reason == ERROR_LLM and settings.llama_url and not endpoint_answers(settings.llama_url))
    return CellOutcome(reason, node, started, time.time(), answers)

