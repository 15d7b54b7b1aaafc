"""Sweep throughput against 1, 2, 4, 8 simulated model servers: scripted OpenAI-compatible servers
of fixed latency with several slots each, on a Ray cluster on this machine (loopback only: the
process re-runs itself in a network namespace, testkit/ray_cluster.py).

Each point runs the same small matrix (the test sweep's: 2 entries x 3 questions, 2 or 3 requests a
run) with enough repeats for ROUNDS runs per slot, so each slot is kept busy; throughput is the pace
of runs finishing (between the first and the last to finish: a new Ray driver is a new Ray job, whose
worker processes start afresh, and the start is not the pace), as a ratio to one server.
The ideal is N x; the goal >= 0.9 N up to the machine's limit. The driver's own time per run is its
process CPU time (the driver, its Ray core worker threads, scoring the rows) over the runs.

    python bench/sweep_scaling.py [--servers 1,2,4,8] [--slots 4] [--latency 1.0] [--engine ray]

Measured on the 2-core build machine (shared with other agents' work), Ray engine, one node with 2
CPUs, 2 slots per server, 1.0 s per request (`--servers 1,2,4,8`, then `--servers 1,8,16`):

    servers  slots  runs  runs/s  x one  / ideal  driver ms/run
          1      2    12   0.757   1.00     1.00           36.5
          2      4    24   1.500   1.98     0.99           32.5
          4      8    48   2.958   3.91     0.98           31.8
          8     16    96   5.500   7.27     0.91           27.4   (7.81, 0.98 in the second run)
         16     32   192   5.784   7.66     0.48           28.6

The thread engine on the same machine (`--engine thread`, measured by an earlier form of this bench:
whole-sweep wall time, 3 runs per slot): 1.00, 1.97, 3.36, 6.66 x (0.83 of ideal at 8), 60-66 ms of
driver CPU per run (there the driver process runs the runs themselves).

Where it stops: at 16 runs in flight. Each run asks 1/8 of a CPU (sweep_ray.RUN_CPUS), so a 2-CPU
node holds 16 at once and more slots only queue in Ray. The cap is there because each run in flight is
a Ray worker process of its own, 350-450 MB resident with searchbox imported (16 of them: about 6.5 GB
here). The driver is not the limit: about 30 ms of CPU per run (tar of the job folder both ways, the
row's scoring, Ray's client threads), so one core of driver would carry some 30 runs a second.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from testkit.ray_cluster import loopback_prefix  # noqa: E402

IN_NAMESPACE = "SWEEP_SCALING_IN_NAMESPACE"
ROUNDS = 6  # runs per slot in each point


def measure(servers: list[int], slots: int, latency: float, engine_name: str) -> list[dict[str, Any]]:
    from testkit.ray_scenarios import slow
    from testkit.scripted_endpoint import ScriptedEndpoint
    from testkit.small_room import SMALL_DATAROOM, write_tree
    from testkit.small_sweep import MATRIX, QUESTIONS, base_settings
    from searchbox.evaluation.matrix import parse_matrix
    from searchbox.evaluation.sweep import ThreadEngine, run_sweep
    from searchbox.llm.endpoints import Server
    from searchbox.evaluation.sweep_ray import RayEngine

    work = Path(tempfile.mkdtemp(prefix="sweep-scaling-"))
    room = write_tree(work / "room", SMALL_DATAROOM)
    matrix = parse_matrix(MATRIX)
    cells_per_repeat = len(matrix) * len(QUESTIONS)
    address = None
    if engine_name == "ray":  # one cluster for every point: its workers stay warm between sweeps
        from ray.cluster_utils import Cluster

        # Ray keeps only as many idle workers as CPUs and ends the rest after a second: keep one per
        # slot warm, so no point pays for starting the workers the point before it had.
        warm = {"num_workers_soft_limit": max(servers) * slots + 2}
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": os.cpu_count(), "include_dashboard": False,
                                                                "_system_config": warm})
        address = cluster.address

    def sweep(n: int, name: str) -> dict[str, Any]:
        endpoints = [ScriptedEndpoint(default=slow(latency)) for _ in range(n)]
        for endpoint in endpoints:
            endpoint.start()
        repeats = max(1, round(ROUNDS * n * slots / cells_per_repeat))
        engine = RayEngine(address) if engine_name == "ray" else ThreadEngine()
        finished: list[float] = []
        cpu, wall = time.process_time(), time.monotonic()
        try:
            run_sweep(matrix, QUESTIONS, room, work / name, base_settings(work / "cache"),
                      endpoints=[Server(e.url, slots) for e in endpoints], repeats=repeats, engine=engine,
                      progress=lambda row, done, total: finished.append(time.monotonic()))
        finally:
            for endpoint in endpoints:
                endpoint.stop()
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
        runs = repeats * cells_per_repeat
        # Runs finished per second between the first and the last to finish: the pace once running, without
        # the sweep's start (a new Ray driver is a new job: its worker processes start afresh).
        pace = (len(finished) - 1) / (finished[-1] - finished[0])
        return {"servers": n, "slots": n * slots, "runs": runs, "wall_s": round(wall, 2),
                "runs_per_s": round(pace, 3), "driver_ms_per_run": round(1000 * cpu / runs, 1)}

    try:
        sweep(max(servers), "warmup")  # start every worker the largest point needs, so no point pays for it
        points = [sweep(n, f"n{n}") for n in servers]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = points[0]["runs_per_s"] / points[0]["servers"]
    for point in points:
        point["ratio"] = round(point["runs_per_s"] / base, 2)
        point["ratio_over_ideal"] = round(point["ratio"] / point["servers"], 2)
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="1,2,4,8")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per request of each scripted server")
    parser.add_argument("--engine", choices=("ray", "thread"), default="ray")
    args = parser.parse_args()
    if os.environ.get(IN_NAMESPACE) != "1" and loopback_prefix():
        os.environ[IN_NAMESPACE] = "1"
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(loopback_prefix()[0], [*loopback_prefix(), sys.executable, *sys.argv])
    points = measure([int(n) for n in args.servers.split(",")], args.slots, args.latency, args.engine)
    print(f"engine {args.engine}, {args.slots} slots per server, {args.latency}s per request, "
          f"{os.cpu_count()} CPU(s)")
    print(f"{'servers':>7} {'slots':>5} {'runs':>5} {'wall s':>7} {'runs/s':>7} {'x one':>6} {'/ ideal':>7} "
          f"{'driver ms/run':>13}")
    for p in points:
        print(f"{p['servers']:>7} {p['slots']:>5} {p['runs']:>5} {p['wall_s']:>7} {p['runs_per_s']:>7} "
              f"{p['ratio']:>6} {p['ratio_over_ideal']:>7} {p['driver_ms_per_run']:>13}")
    print(json.dumps(points))


if __name__ == "__main__":
    main()
