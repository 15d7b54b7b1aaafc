"""Pause and Stop latency: how long after the request a running tool ends and the run is paused or
stopped, for a bash `sleep 300` and for the embedding of a dataroom (search_dataroom's first use,
with the packaged MiniLM embedder on the CPU).

Each case runs a real job through the scheduler (as the app's Pause and Stop buttons do) against a
scripted endpoint whose model calls the tool; the request comes once the tool is busy (the sleep
process is up; the embedding has run for a while).

    python bench/stop_latency.py [--repeat 3] [--chunks 300]
"""

from __future__ import annotations

import argparse
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.scripted_endpoint import Reply, ScriptedEndpoint  # noqa: E402
from searchbox.agent.run import connect_and_run  # noqa: E402
from searchbox.jobs.scheduler import Scheduler  # noqa: E402
from searchbox.jobs.store import JobStore  # noqa: E402
from searchbox.records.events import Event  # noqa: E402
from searchbox.retrieval.models import load_embedder  # noqa: E402
from searchbox.settings import Settings  # noqa: E402

SLEEP = "sleep 300"
EMBED_BUSY_S = 2.0  # how long the embedding runs before the request
WAIT_S = 120.0
STATES = {"pause": "held", "cancel": "cancelled"}

CASES: dict[str, dict[str, Any]] = {
    "bash sleep 300": {"tools": "", "call": {"name": "bash", "arguments": {"command": SLEEP, "timeout": 600}}},
    "embedding batch": {"tools": "search_dataroom",
                        "call": {"name": "search_dataroom", "arguments": {"query": "when does the lease end"}}},
}


def _answer(call: dict[str, Any]) -> Any:
    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(text="done")
        return Reply(tool_calls=[call])
    return answer


def _dataroom(folder: Path, chunks: int) -> Path:
    """Files of distinct prose, about `chunks` retrieval chunks in all (none of it cached anywhere)."""
    words = ("lease rent office term notice landlord tenant break clause payment quarter audit revenue cost "
             "staff policy security review contract renewal schedule annex party obligation").split()
    rng = random.Random(7)
    for n in range(max(chunks // 4, 1)):
        text = " ".join(rng.choice(words) for _ in range(4 * 1400 // 7))
        (folder / f"doc{n:04}.txt").write_text(f"Document {n}. {text}\n")
    return folder


def _sleeping() -> bool:
    found = subprocess.run(["pgrep", "-f", f"^{SLEEP}$"], capture_output=True, text=True).stdout
    return bool(found.strip())


def _next(events: queue.Queue[Event | None], kind: str, deadline: float) -> Event:
    while True:
        event = events.get(timeout=max(deadline - time.monotonic(), 0.01))
        if event is None:
            raise RuntimeError(f"the run stopped before a {kind} event")
        if event.type == kind:
            return event


def measure(case: str, how: str, room: Path, scratch: Path) -> tuple[float, float, str]:
    """Seconds from the request to the tool's end and to the job's new state, and how the tool ended."""
    spec = CASES[case]
    with ScriptedEndpoint(default=_answer(spec["call"])) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", llm_attempts=1, searchbox_tools=spec["tools"],
                                    retrieval_preset="packaged", searchbox_cache_dir=str(scratch / "cache"))
        store = JobStore(scratch / "jobs")
        scheduler = Scheduler(store, connect_and_run, settings)
        scheduler.start()
        try:
            record = store.create(f"{case}: {how}", room, {}, "bench", settings)
            events = scheduler.subscribe(record.id)
            scheduler.submit(record.id)
            deadline = time.monotonic() + WAIT_S
            _next(events, "tool_start", deadline)
            if case.startswith("bash"):
                while not _sleeping():
                    time.sleep(0.01)
            else:
                time.sleep(EMBED_BUSY_S)
            asked = time.monotonic()
            getattr(scheduler, how)(record.id)
            ended = _next(events, "tool_end", asked + WAIT_S)
            tool_s = time.monotonic() - asked
            while (current := store.get(record.id)) is None or current.state != STATES[how]:
                if time.monotonic() - asked > WAIT_S:
                    raise RuntimeError(f"the job never became {STATES[how]}")
                time.sleep(0.002)
            run_s = time.monotonic() - asked
            scheduler.cancel(record.id)  # a held job would wait for a resume
        finally:
            scheduler.stop(timeout=WAIT_S)
    return tool_s, run_s, str(getattr(ended, "ended", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="measurements per case and request")
    parser.add_argument("--chunks", type=int, default=300, help="about how many chunks the embedding case embeds")
    args = parser.parse_args()
    settings = Settings.resolve(env={}, retrieval_preset="packaged")
    started = time.monotonic()
    load_embedder(settings)  # loaded once for the process, as in the app: the cut of a load is not measured
    print(f"packaged MiniLM loaded in {time.monotonic() - started:.1f} s")
    print(f"{'case':<18} {'request':<7} {'tool ended (s)':>22} {'run stopped (s)':>22}  ended")
    with tempfile.TemporaryDirectory() as tmp:
        room = Path(tmp) / "room"
        room.mkdir()
        _dataroom(room, args.chunks)
        for case in CASES:
            for how in ("pause", "cancel"):
                rows = [measure(case, how, room, Path(tempfile.mkdtemp(dir=tmp))) for _ in range(args.repeat)]
                tools, runs = [r[0] for r in rows], [r[1] for r in rows]
                endings = ",".join(sorted({r[2] for r in rows}))
                label = "Pause" if how == "pause" else "Stop"
                print(f"{case:<18} {label:<7} {_spread(tools):>22} {_spread(runs):>22}  {endings}", flush=True)


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f}, max {max(values):.2f}"


if __name__ == "__main__":
    main()
