"""Sweeps on a real multi-node Ray cluster (ray.cluster_utils.Cluster: a head that runs nothing and two
worker nodes), each worker node beside its own scripted model server of known latency. Run by
tests/evaluation/test_sweep_ray.py through testkit.ray_cluster.run_in_loopback:

    python -m testkit.ray_scenarios SCENARIO FOLDER   ->  the scenario's facts, as JSON on the last line

equal             the thread engine's sweep, then the Ray engine's, into FOLDER/thread and FOLDER/ray
node_kill         a worker node removed while it has runs in flight
server_dies       one of two servers stopped mid-sweep
interrupt_resume  Ctrl-C (SIGINT) on the driver mid-sweep, then a new driver on the same cluster
"""

from __future__ import annotations

import itertools
import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster

from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from testkit.small_room import SMALL_DATAROOM, write_tree
from testkit.small_sweep import MATRIX, QUESTIONS, answer_from_content, base_settings
from searchbox.evaluation.matrix import parse_matrix
from searchbox.evaluation.report import load_results
from searchbox.evaluation.sweep import ThreadEngine, run_sweep
from searchbox.llm.endpoints import Server
from searchbox.evaluation.sweep_ray import RayEngine
from searchbox.records.files import read_jsonl

LATENCY_S = 0.3  # per request; a run makes two or three


def slow(latency: float) -> Callable[[dict[str, Any]], Reply]:
    def answer(body: dict[str, Any]) -> Reply:
        time.sleep(latency)
        return answer_from_content(body)

    return answer


def start_cluster(workers: int = 2) -> tuple[Cluster, list[Any]]:
    node_args = {"object_store_memory": 80 * 2**20, "include_dashboard": False}
    # A node that stops answering is declared dead after 3 missed 1 s health checks (Ray's default: 30 s).
    health = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "_system_config": health, **node_args})
    nodes = [cluster.add_node(num_cpus=1, **node_args) for _ in range(workers)]
    cluster.wait_for_nodes()
    return cluster, nodes


def sweep(folder: Path, engine: Any, servers: list[ScriptedEndpoint], slots: int = 2,
          progress: Callable[..., None] | None = None, **settings: Any) -> list[dict[str, Any]]:
    base = base_settings(folder.parent / "cache").with_overrides(**settings)
    run_sweep(parse_matrix(MATRIX), QUESTIONS, folder.parent / "room", folder, base,
              endpoints=[Server(s.url, slots) for s in servers], engine=engine, progress=progress)
    return read_jsonl(folder / "results.jsonl")


def keys(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [[r["entry"], r["question_id"], r["repeat"]] for r in rows]


def equal(folder: Path, cluster: Cluster, nodes: list[Any], servers: list[ScriptedEndpoint]) -> dict[str, Any]:
    sweep(folder / "thread", ThreadEngine(), servers)
    engine = RayEngine(cluster.address)
    seen: list[int] = []  # what the Compare tab's reader finds while the sweep runs
    rows = sweep(folder / "ray", engine, servers,
                 progress=lambda row, done, total: seen.append(len(load_results(folder / "ray"))))
    return {"seen_while_running": seen, "fetches": dict(engine.fetches), "lost": engine.lost,
            "nodes": sorted({r["node"] for r in rows}), "worker_nodes": [n.node_id for n in nodes]}


def node_kill(folder: Path, cluster: Cluster, nodes: list[Any], servers: list[ScriptedEndpoint]) -> dict[str, Any]:
    engine = RayEngine(cluster.address)
    killed: list[Any] = []

    def kill_busiest() -> None:
        busy = {n.node_id: engine.in_flight[n.node_id] for n in nodes}
        victim = max(nodes, key=lambda n: busy[n.node_id])
        killed.extend([victim.node_id, busy[victim.node_id]])
        started = time.monotonic()
        cluster.remove_node(victim, allow_graceful=False)  # as a machine that fails: no goodbye
        killed.append(time.monotonic() - started)

    # Not at the first row itself: the runs that started beside it end with it (on a loaded machine a few ms
    # later, so the kill could catch none). Half a reply later those have landed, and every run still in
    # flight is waiting on a reply with a second or more to go, the new ones in their first.
    timer = threading.Timer(LATENCY_OF["node_kill"] / 2, kill_busiest)
    rows = sweep(folder / "ray", engine, servers, progress=lambda row, done, total: timer.start() if done == 1 else None)
    timer.join()
    return {"rows": keys(rows), "killed": killed[0], "in_flight_when_killed": killed[1], "lost": engine.lost,
            "remove_node_s": killed[2], "nodes": [r["node"] for r in rows]}


def server_dies(folder: Path, cluster: Cluster, nodes: list[Any], servers: list[ScriptedEndpoint]) -> dict[str, Any]:
    engine = RayEngine(cluster.address)
    dead = servers[1].url
    requests = itertools.count(1)
    answer = servers[1].default

    def dies_at_its_third_request(body: dict[str, Any]) -> Reply | Fault:
        # The second server's first two runs each still need their answering request when its third request
        # arrives, so a run surely loses its server mid-run (stopping it after a finished row did not: both
        # its runs could be past their last request, and nothing then needed it).
        n = next(requests)  # atomic: handlers run on threads of their own
        if n < 3:
            return answer(body)
        if n == 3:
            threading.Thread(target=servers[1].stop, daemon=True).start()
        return Fault.refuse()

    servers[1].default = dies_at_its_third_request
    rows = sweep(folder / "ray", engine, servers, llm_attempts=2, llm_timeout_seconds=5)
    sweep_meta = json.loads((folder / "ray" / "sweep.json").read_text())
    return {"rows": keys(rows), "dead": dead, "endpoints": [r["endpoint"] for r in rows],
            "stops": [r["stop_reason"] for r in rows], "dropped": sweep_meta.get("dropped_servers")}


def interrupt_resume(folder: Path, cluster: Cluster, nodes: list[Any],
                     servers: list[ScriptedEndpoint]) -> dict[str, Any]:
    def ctrl_c(row: dict[str, Any], done: int, total: int) -> None:
        if done == 2:
            signal.raise_signal(signal.SIGINT)

    interrupted = False
    started = time.monotonic()
    try:
        sweep(folder / "ray", RayEngine(cluster.address), servers, progress=ctrl_c)
    except KeyboardInterrupt:
        interrupted = True
    stopped_s = time.monotonic() - started
    first = keys(read_jsonl(folder / "ray" / "results.jsonl"))
    metas = {p.parent.name + "/" + p.name: json.loads((p / "run_meta.json").read_text())
             for p in sorted((folder / "ray" / "runs").glob("*/*")) if (p / "run_meta.json").exists()}
    stops = {run: meta.get("stop_reason") for run, meta in metas.items()}
    turns = {run: meta.get("turns", 0) for run, meta in metas.items()}
    rows = sweep(folder / "ray", RayEngine(cluster.address), servers)  # a new driver, the same cluster
    resumed = []
    for row in rows:
        starts = [e["resumed"] for e in read_jsonl(folder / "ray" / row["job_dir"] / "events.jsonl")
                  if e["type"] == "run_start"]
        resumed.append(starts)
    return {"interrupted": interrupted, "stopped_s": stopped_s, "first": first, "stops_after_ctrl_c": stops,
            "turns_after_ctrl_c": turns, "rows": keys(rows), "run_starts": resumed}


SCENARIOS = {f.__name__: f for f in (equal, node_kill, server_dies, interrupt_resume)}
# A node is killed, or Ctrl-C lands, while runs wait on their server: slow replies keep them in flight
# through it (at 0.3 s, on a loaded machine, a run could finish and send its records back first: nothing was
# lost to the kill, and the last runs ended before the driver saw the Ctrl-C).
LATENCY_OF = {"node_kill": 2.0, "interrupt_resume": 1.5}


def main(name: str, folder: Path) -> None:
    write_tree(folder / "room", SMALL_DATAROOM)
    started = time.monotonic()
    cluster, nodes = start_cluster()
    try:
        latency = LATENCY_OF.get(name, LATENCY_S)
        with ScriptedEndpoint(default=slow(latency)) as one, ScriptedEndpoint(default=slow(latency)) as two:
            facts = SCENARIOS[name](folder, cluster, nodes, [one, two])
    finally:
        ray.shutdown()
        cluster.shutdown()
    facts["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(facts))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
