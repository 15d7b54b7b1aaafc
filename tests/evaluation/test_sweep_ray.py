"""Sweeps on a real multi-node Ray cluster on this machine (testkit/ray_scenarios.py, run on loopback by
testkit/ray_cluster.py): the Ray engine gives the thread engine's rows, summary and report; a node
killed mid-sweep loses no cell and duplicates none; a server that dies leaves the pool and the sweep
finishes; Ctrl-C on the driver stops runs cleanly and a new driver resumes them on the same cluster.
Each test starts and stops its own cluster (a head that runs nothing and two worker nodes)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from testkit.ray_cluster import facts_of, loopback_prefix, run_in_loopback
from test_ablation import MATRIX, QUESTIONS, comparable
from searchbox.evaluation.report import load_results, summary_table
from searchbox.records.files import read_json, read_jsonl

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow
CELLS = [[e["name"], q["id"], 1] for e in MATRIX["entries"] for q in QUESTIONS]


def scenario(name: str, folder: Path) -> dict[str, Any]:
    return facts_of(run_in_loopback([sys.executable, "-m", "testkit.ray_scenarios", name, str(folder)], timeout=300))


def without_wall(summary: dict[str, Any]) -> dict[str, Any]:
    return {**summary, "entries": [{k: v for k, v in e.items() if k != "wall_s"} for e in summary["entries"]]}


def test_the_ray_engine_gives_the_thread_engines_rows_summary_and_report(tmp_path: Path) -> None:
    facts = scenario("equal", tmp_path)
    thread, ray = tmp_path / "thread", tmp_path / "ray"
    ray_rows = read_jsonl(ray / "results.jsonl")
    # Each worker node's runs went to the servers in turn; the endpoint is where, not what.
    assert comparable(ray_rows, "endpoint") == comparable(read_jsonl(thread / "results.jsonl"), "endpoint")
    assert without_wall(read_json(ray / "summary.json")) == without_wall(read_json(thread / "summary.json"))
    report = [summary_table(load_results(folder)).drop(columns=["wall s"]) for folder in (thread, ray)]
    assert report[0].equals(report[1])
    assert read_json(ray / "sweep.json")["engine"] == "ray" and read_json(thread / "sweep.json")["engine"] == "thread"

    # Both worker nodes ran cells (the head runs none), each row says which, and how long it queued.
    assert len(facts["nodes"]) == 2 and all(r["queue_s"] >= 0 and r["node"] in facts["nodes"] for r in ray_rows)
    assert {n[-8:] for n in facts["nodes"]} == {n[:8] for n in facts["worker_nodes"]}
    # Six runs, one dataroom fetch from the object store: the nodes share this machine's disk cache.
    assert sum(facts["fetches"].values()) == 1 and facts["lost"] == 0
    # The Compare tab's reader saw each row as it landed, while the sweep still ran.
    assert facts["seen_while_running"] == [1, 2, 3, 4, 5, 6]


def test_a_node_killed_mid_sweep_loses_no_cell_and_duplicates_none(tmp_path: Path) -> None:
    facts = scenario("node_kill", tmp_path)
    # The node had runs in flight (one may have sent its records back just before the kill).
    assert 1 <= facts["lost"] <= facts["in_flight_when_killed"]
    assert sorted(facts["rows"]) == sorted(CELLS)  # every cell once
    killed = facts["killed"][:8]
    assert sum(node.endswith(killed) for node in facts["nodes"]) < 6 - facts["lost"]  # the lost ran elsewhere
    rows = read_jsonl(tmp_path / "ray" / "results.jsonl")
    assert all(r["done"] for r in rows)


def test_a_server_that_dies_is_dropped_and_the_sweep_finishes(tmp_path: Path) -> None:
    facts = scenario("server_dies", tmp_path)
    assert sorted(facts["rows"]) == sorted(CELLS)
    assert "error_llm" not in facts["stops"]  # the runs it failed ran again on the other server
    assert facts["dropped"] == [facts["dead"]]
    # It answers two requests and dies at its third: at most one run (both of whose requests it answered)
    # finished there; a run that still needed a request failed there and ran again on the other server.
    assert facts["endpoints"].count(facts["dead"]) <= 1


def test_ctrl_c_stops_every_run_cleanly_and_a_new_driver_resumes_on_the_same_cluster(tmp_path: Path) -> None:
    facts = scenario("interrupt_resume", tmp_path)
    assert facts["interrupted"] and len(facts["first"]) >= 2
    stops = facts["stops_after_ctrl_c"]
    interrupted = [run for run, reason in stops.items() if reason == "interrupted"]
    assert interrupted and set(stops.values()) <= {"interrupted", "first_turn_done", "budget_spent"}
    assert facts["rows"] == CELLS  # canonical order, each cell once
    starts = {f"{entry}/{qid}": s for (entry, qid, _), s in zip(facts["rows"], facts["run_starts"])}
    for run in interrupted:  # resumed from its session, not run again from scratch
        # A run the Ctrl-C stopped as it started, before its first turn, has no session to resume from.
        assert starts[run] == [False, facts["turns_after_ctrl_c"][run] > 0], (run, facts["turns_after_ctrl_c"])
    assert any(facts["turns_after_ctrl_c"][run] > 0 for run in interrupted)  # one at least was resumed


@pytest.mark.real_model
def test_a_sweep_with_the_real_packaged_model_on_a_local_ray_cluster(tmp_path: Path) -> None:
    """Two entries x two questions through the CLI on --engine ray with no address (a local cluster
    started for the sweep): each run boots the built-in llama.cpp runtime in a Ray worker."""
    matrix = tmp_path / "matrix.json"
    matrix.write_text(json.dumps({"entries": [
        {"name": "keyword-b1", "overrides": {"SEARCHBOX_TOOLS": "keyword_search", "TURN_BUDGET": 1}},
        {"name": "none-b1", "overrides": {"SEARCHBOX_TOOLS": "", "TURN_BUDGET": 1}}]}))
    out = tmp_path / "sweep"
    knobs = {"LLM_GGUF": "packaged:gemma3-270m", "RETRIEVAL_PRESET": "packaged", "CONTEXT_WINDOW": "4096",
             "MAX_OUTPUT_TOKENS": "48", "MAX_STEPS_PER_TURN": "2", "FORCE_TOOL_STEPS": "1", "LLAMA_URL": "",
             "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "searchbox", "ablate", "--engine", "ray", "--matrix", str(matrix),
               "--ids", "q001,q002", "--out", str(out), *(a for k, v in knobs.items() for a in ("--set", f"{k}={v}"))]
    started = time.monotonic()
    done = run_in_loopback(command, timeout=900)
    print(f"real-model Ray sweep took {time.monotonic() - started:.1f}s")
    assert "started a local cluster" in done.stdout and "[4/4]" in done.stdout, done.stdout[-3000:]
    rows = read_jsonl(out / "results.jsonl")
    assert [(r["entry"], r["question_id"]) for r in rows] == [
        (e, q) for e in ("keyword-b1", "none-b1") for q in ("q001", "q002")]
    for row in rows:
        assert row["endpoint"] is None and row["node"] and row["score"]["verdict"] in ("correct", "partial", "wrong")
        meta = read_json(out / row["job_dir"] / "run_meta.json")
        assert meta["model_id"].startswith("gemma-3-270m") and meta["backends"]["llm"] == "llamacpp"
        assert "shared prefix on its own" in meta["backends"]["llm_runtime"]["kv_reuse"]  # how the node kept its cache
    assert read_json(out / "sweep.json")["engine"] == "ray" and read_json(out / "summary.json")["runs"] == 4


def test_a_local_clusters_token_stays_in_the_sweeps_folder_0600_and_goes_with_the_cluster(tmp_path: Path) -> None:
    """Issue #32 item 6: Ray wrote a local cluster's token to ~/.ray/auth_token, mode 0644, and left it."""
    import os
    import stat

    home, sweep_dir = tmp_path / "home", tmp_path / "sweep"
    home.mkdir()
    (tmp_path / "room").mkdir()
    (tmp_path / "room" / "a.txt").write_text("a\n")
    script = f"""
import json, os, stat, sys
from pathlib import Path
from searchbox.evaluation.sweep_ray import RayEngine
engine = RayEngine(None, folder=Path({str(sweep_dir)!r}))
engine.open(Path({str(tmp_path / 'room')!r}), None)
tokens = [str(p) for p in (Path({str(home)!r}), Path({str(sweep_dir)!r})) for p in p.rglob('*token*')]
during = {{p: oct(stat.S_IMODE(os.stat(p).st_mode)) for p in tokens}}
engine.close()
print(json.dumps(during))
"""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}  # no operator token
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0")
    done = subprocess.run([*loopback_prefix(), sys.executable, "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    during = json.loads(done.stdout.strip().splitlines()[-1])
    assert during, "no auth token was written while the cluster ran"
    assert all(mode == oct(stat.S_IRUSR | stat.S_IWUSR) for mode in during.values()), during
    assert all(Path(path).is_relative_to(sweep_dir) for path in during), f"a token outside the sweep's folder: {during}"
    assert not list(home.rglob("*token*")) and not list(sweep_dir.rglob("*token*")), "the token outlived the cluster"
