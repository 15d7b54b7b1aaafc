"""Visitors' runs through the real app (python app.py, gradio_client visitors) over a pool of scripted
model servers of known latency (SEARCHBOX_ENDPOINTS), with 1, 2, 4 and 8 slots; or, with
`--server llama-server`, over one real llama.cpp `llama-server --parallel N` serving the packaged 0.5B,
whose N slots share this machine's cores (one turn, two steps and 256 output tokens a run).

Throughput: twice as many visitors as slots, each with one run in flight at a time (a new one as soon
as the last is done), so every slot has a run waiting for it; runs finished per minute, from the first
submit to the last run's end as the app's job.json records them, and that as a multiple of one slot
(the goal: at least 0.9 x the slots). Every request waits `--latency` seconds at its server before it
is answered, and a server holds at most its slots at once (a request past them would queue there and
is counted: it would mean the app sent a server more runs than its slots). Beside it: how busy the
slots were (the runs' time on them over slots x wall time: what the scheduler controls) and the CPU
seconds the app process spent per run (its own work, which slows each run once the machine's cores
are short).

Mixed load: `--greedy` visitors each keep SEARCHBOX_MAX_QUEUED_RUNS runs waiting at all times, while
`--fair` visitors send one run at a time; the longest wait of any visitor's run (submit to its first
slot, from job.json) for each kind, also as a multiple of one run's length.

With a real server a run ends done or not as the model answers: every run that ended counts towards
runs per minute (the slots' work is what is measured), and the table says how many were done. Requests past
a server's slots are counted on scripted servers only.

    python bench/app_slots.py [--slots 1,2,4,8] [--latency 10] [--rounds 2] [--mixed-slots 4]
    python bench/app_slots.py --server llama-server --slots 1,2,4 --rounds 1 --mixed-slots 0
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradio_client import Client  # noqa: E402

from testkit.app_server import running_app  # noqa: E402
from testkit.llama_server import ALIAS, llama_server  # noqa: E402
from testkit.load_harness import app_pid, scripted_agent, search_args  # noqa: E402
from testkit.scripted_endpoint import Reply, ScriptedEndpoint  # noqa: E402
from searchbox.jobs.store import FINISHED  # noqa: E402
from searchbox.records.files import read_json  # noqa: E402

GREEDY_QUEUE = 5  # SEARCHBOX_MAX_QUEUED_RUNS: what one greedy visitor keeps waiting
WARM_UP = "warm-up"  # the owner of one run before the measured ones: a first run loads what later ones reuse
SLOT_CONTEXT = 4096  # each llama-server slot's context; the server's is this times the slots
# A real model's run kept short: what is measured is the slots, not the answers.
REAL_RUN_KNOBS = {"MODEL_ID": ALIAS, "CONTEXT_WINDOW": str(SLOT_CONTEXT), "MAX_OUTPUT_TOKENS": "256",
                  "MAX_STEPS_PER_TURN": "2"}


@dataclass
class SlowServer:
    """A scripted model server that answers each request after `latency` seconds, `slots` at a time."""

    slots: int
    latency: float
    in_flight: int = 0
    past_slots: int = 0  # requests that arrived while every slot was busy
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.free = threading.Semaphore(self.slots)
        self.endpoint = ScriptedEndpoint(default=self.answer)

    def answer(self, body: dict[str, Any]) -> Reply:
        if not self.free.acquire(blocking=False):
            with self.lock:
                self.past_slots += 1
            self.free.acquire()
        try:
            time.sleep(self.latency)
            return scripted_agent(body)
        finally:
            self.free.release()


def split(slots: int) -> list[int]:
    """The slots over two servers (one server for one slot)."""
    return [slots] if slots == 1 else [slots - slots // 2, slots // 2]


def visitor(url: str) -> Client:
    """A visitor's client: it follows its runs, and leaves their files (answer, bundle) on the server."""
    return Client(url, verbose=False, download_files=False)


def submit_until(client: Client, tag: str, owner: str) -> str:
    """One run through /search, followed to its end; the final status line."""
    return str(client.submit(*search_args(tag, owner), api_name="/search").result(timeout=1800)[0])


def cpu_seconds(pid: int) -> float:
    """User and system CPU the process has used (its threads together)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def jobs_of(home: Path) -> list[dict[str, Any]]:
    """The measured runs' job.json (the warm-up run left out)."""
    jobs = (read_json(p) for p in sorted((home / "jobs").glob("*/job.json")))
    return [job for job in jobs if job and job["owner"] != WARM_UP]


def with_app(slots: int, latency: float, home: Path, load: Any,
             real: bool = False) -> tuple[list[dict[str, Any]], list[SlowServer], float]:
    """Start the servers (scripted, or one real llama-server) and the app, warm it up, put the load on; the
    measured runs' job.json, the scripted servers, and the CPU seconds the app spent under the load."""
    with ExitStack() as stack:
        if real:
            servers: list[SlowServer] = []
            url = stack.enter_context(llama_server(home, n_ctx=slots * SLOT_CONTEXT, parallel=slots))
            pool, knobs = f"{url}={slots}", REAL_RUN_KNOBS
        else:
            servers = [SlowServer(n, latency) for n in split(slots)]
            for server in servers:
                server.endpoint.start()
                stack.callback(server.endpoint.stop)
            pool, knobs = ",".join(f"{s.endpoint.url}={s.slots}" for s in servers), {"MODEL_ID": "scripted"}
        # All visitors come from this machine: the per-address limit would count them as one.
        url = stack.enter_context(running_app(home, SEARCHBOX_ENDPOINTS=pool, SEARCHBOX_MAX_QUEUED_PER_ADDRESS="0",
                                              SEARCHBOX_MAX_QUEUED_TOTAL="0",
                                              SEARCHBOX_MAX_QUEUED_RUNS=str(GREEDY_QUEUE), **knobs))
        submit_until(visitor(url), "warm-up", WARM_UP)
        pid = app_pid(int(url.rstrip("/").rsplit(":", 1)[1]))
        cpu = cpu_seconds(pid)
        load(url)
        cpu = cpu_seconds(pid) - cpu
        return jobs_of(home), servers, cpu


def throughput(slots: int, latency: float, rounds: int, real: bool = False) -> dict[str, Any]:
    visitors = 2 * slots
    errors: list[str] = []

    def load(url: str) -> None:
        ready = threading.Barrier(visitors)

        def one_at_a_time(n: int) -> None:
            client = visitor(url)
            ready.wait(300)
            for r in range(rounds):
                status = submit_until(client, f"c{n:02d}-r{r}", f"visitor-{n:02d}")
                if "**done**" not in status and not real:  # a real model's run may end without an answer
                    errors.append(status[:200])

        threads = [threading.Thread(target=one_at_a_time, args=(n,)) for n in range(visitors)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    with tempfile.TemporaryDirectory(prefix="searchbox-app-slots-") as tmp:
        jobs, servers, cpu = with_app(slots, latency, Path(tmp), load, real)
    done = [job for job in jobs if job["state"] == "done"]
    ended = [job for job in jobs if job["state"] in FINISHED] if real else done
    first = min(job["created_at"] for job in jobs)
    last = max(p["ended_at"] for job in ended for p in job["placements"])
    ran = [sum(p["ended_at"] - p["started_at"] for p in job["placements"]) for job in ended]
    run_s = statistics.median(ran)
    return {"slots": slots, "servers": max(1, len(servers)), "visitors": visitors, "runs": len(jobs),
            "done": len(done), "wall_s": last - first, "per_min": 60 * len(ended) / (last - first), "run_s": run_s,
            "resumed": sum(len(job["placements"]) - 1 for job in jobs), "cpu_per_run": cpu / max(1, len(ended)),
            "busy": sum(ran) / (slots * (last - first)),
            "past_slots": sum(s.past_slots for s in servers), "errors": errors}


def mixed(slots: int, latency: float, fair: int, greedy: int, rounds: int) -> dict[str, Any]:
    stop_greedy = threading.Event()

    def load(url: str) -> None:
        ready = threading.Barrier(fair + greedy)

        def fair_visitor(n: int) -> None:
            client = visitor(url)
            ready.wait(300)
            time.sleep(latency)  # the greedy ones' runs are in line first
            for r in range(rounds):
                submit_until(client, f"f{n:02d}-r{r}", f"fair-{n:02d}")

        def greedy_visitor(n: int) -> None:
            client = visitor(url)
            ready.wait(300)
            waiting = [client.submit(*search_args(f"g{n:02d}-r{r}", f"greedy-{n:02d}"), api_name="/search")
                       for r in range(GREEDY_QUEUE)]
            r = GREEDY_QUEUE
            while waiting:
                waiting.pop(0).result(timeout=1800)
                if not stop_greedy.is_set():  # one done: another in its place
                    waiting.append(client.submit(*search_args(f"g{n:02d}-r{r}", f"greedy-{n:02d}"), api_name="/search"))
                    r += 1

        fair_threads = [threading.Thread(target=fair_visitor, args=(n,)) for n in range(fair)]
        greedy_threads = [threading.Thread(target=greedy_visitor, args=(n,)) for n in range(greedy)]
        for thread in fair_threads + greedy_threads:
            thread.start()
        for thread in fair_threads:
            thread.join()
        stop_greedy.set()
        for thread in greedy_threads:
            thread.join()

    with tempfile.TemporaryDirectory(prefix="searchbox-app-slots-") as tmp:
        jobs, servers, _ = with_app(slots, latency, Path(tmp), load)
    waits: dict[str, list[float]] = defaultdict(list)
    runs: list[float] = []
    for job in jobs:
        if job["placements"]:
            waits[job["owner"].split("-")[0]].append(job["placements"][0]["started_at"] - job["created_at"])
            runs.extend(p["ended_at"] - p["started_at"] for p in job["placements"] if p["ended_at"])
    return {"slots": slots, "fair": fair, "greedy": greedy, "runs": len(jobs),
            "done": sum(job["state"] == "done" for job in jobs), "run_s": statistics.median(runs),
            "waits": dict(waits), "resumed": sum(len(job["placements"]) - 1 for job in jobs),
            "past_slots": sum(s.past_slots for s in servers)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=("scripted", "llama-server"), default="scripted",
                        help="scripted servers of known latency, or one real llama-server with the slots")
    parser.add_argument("--slots", default="1,2,4,8", help="slot counts to measure, comma-separated")
    parser.add_argument("--latency", type=float, default=10.0, help="seconds each server takes per request")
    parser.add_argument("--rounds", type=int, default=2, help="runs each throughput visitor sends, one after another")
    parser.add_argument("--mixed-slots", type=int, default=4, help="slots of the mixed load (0: skip it)")
    parser.add_argument("--fair", type=int, default=4, help="visitors sending one run at a time")
    parser.add_argument("--greedy", type=int, default=2, help=f"visitors keeping {GREEDY_QUEUE} runs waiting")
    args = parser.parse_args()

    real = args.server == "llama-server"
    if real:
        print(f"one llama-server --parallel N (the packaged 0.5B, {SLOT_CONTEXT} tokens a slot), 2 visitors per slot, "
              f"{args.rounds} runs each; runs/min counts every run that ended, done or not")
    else:
        print(f"scripted servers, {args.latency:g} s per request (2 requests a run), 2 visitors per slot, "
              f"{args.rounds} runs each")
    print(f"{'slots':>5} {'servers':>7} {'runs':>5} {'done':>5} {'wall s':>7} {'runs/min':>8} {'x one':>6} "
          f"{'/ slots':>7} {'run s':>6} {'slots busy':>10} {'resumed':>7} {'past slots':>10} {'app cpu s/run':>13}")
    one = None
    for slots in (int(n) for n in args.slots.split(",")):
        point = throughput(slots, args.latency, args.rounds, real)
        one = one or point["per_min"] / slots
        times = point["per_min"] / one
        print(f"{point['slots']:>5} {point['servers']:>7} {point['runs']:>5} {point['done']:>5} {point['wall_s']:>7.1f} "
              f"{point['per_min']:>8.1f} {times:>6.2f} {times / slots:>7.2f} {point['run_s']:>6.1f} {point['busy']:>10.0%} "
              f"{point['resumed']:>7} {'-' if real else point['past_slots']:>10} {point['cpu_per_run']:>13.2f}",
              flush=True)
        for error in point["errors"][:5]:
            print(f"  ! {error}")
    if args.mixed_slots and not real:
        result = mixed(args.mixed_slots, args.latency, args.fair, args.greedy, args.rounds)
        print(f"\nmixed load on {result['slots']} slots: {result['fair']} fair visitors (one run at a time, "
              f"{args.rounds} each), {result['greedy']} greedy ones ({GREEDY_QUEUE} runs waiting at all times); "
              f"{result['done']}/{result['runs']} runs done, a run takes {result['run_s']:.1f} s")
        print(f"{'visitors':>8} {'runs':>5} {'median wait s':>13} {'longest wait s':>14} {'x one run':>9}")
        for kind in ("fair", "greedy"):
            waits = result["waits"].get(kind, [])
            if waits:
                print(f"{kind:>8} {len(waits):>5} {statistics.median(waits):>13.1f} {max(waits):>14.1f} "
                      f"{max(waits) / result['run_s']:>9.2f}")
        print(f"runs resumed after a preemption: {result['resumed']}; requests past a server's slots: "
              f"{result['past_slots']}")


if __name__ == "__main__":
    main()
