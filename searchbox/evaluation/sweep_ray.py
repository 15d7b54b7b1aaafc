"""The Ray engine (ablate --engine ray, docs/sweeps.md): each cell is one Ray task that runs the whole
run (agent loop, tools, retrieval, sandbox) on a node of the cluster, in a job folder of its own there.

What travels:
- the dataroom, once per node: the driver puts it in Ray's object store once; a task reads it from
  there only when its node's content-addressed cache (<cache dir>/sweep-datarooms/<sha256>) lacks it;
- the job folder, both ways, without the dataroom: to the task the driver's prepared folder (its
  question, and a resumed run's config, session and records); back, every record of the run, laid
  over the driver's folder, which keeps its own dataroom copy and input.zip. Only regular files
  travel (a link or a FIFO that confined code left in work/ stays behind on the node);
- the embedding and extraction caches stay on each node, under its cache dir: warm across runs.

Where a task runs: with endpoints, on the live node with the fewest of this sweep's runs in flight
(soft affinity: a node gone meanwhile lets Ray place it elsewhere); with no endpoint, each node runs
the built-in llama.cpp runtime itself, one run at a time (hard affinity, one slot per node). Each run
asks for RUN_CPUS of a CPU, so nodes with no CPU (a head started with --num-cpus 0) run nothing.

Faults: a task whose node or worker dies raises a Ray system error: CellLost, so the driver runs the
cell again elsewhere (Ray's own retries are off, so the driver alone decides and counts it once).
Stop: the driver sets a flag held by a small actor; each task waits on it beside its run and asks the
run to stop cleanly, so its interrupted records come back and resume later.

Ray is imported here only, when the engine opens: the thread engine needs none of it.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import shutil
import socket
import tarfile
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchbox.agent.control import RunControl
from searchbox.agent.run import connect_and_run
from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.records.removal import remove_job_folder
from searchbox.evaluation.sweep_cell import CellLost, CellOutcome, Dispatch, run_cell
from searchbox.llm.endpoints import Server
from searchbox.jobs.bundle import FILE_MAX_BYTES
from searchbox.jobs.scheduler import RunFn
from searchbox.records.job_folder import DATAROOM_NAME, JobFolder
from searchbox.records.tree import MAX_DEPTH, walk
from searchbox.records.work_files import open_regular_in
from searchbox.settings import Settings

DATAROOM_CACHE = "sweep-datarooms"
# A run mostly waits on its model server, but each run in flight is a Ray worker process of its own
# (a few hundred MB with searchbox imported): a node takes up to 8 runs per CPU, and a node with no
# CPU (a head started with --num-cpus 0) takes none.
RUN_CPUS = 0.125
STOP_POLL_S = 1.0  # how long a task's watcher waits on the stop flag per call
TOKEN_PATH_VAR = "RAY_AUTH_TOKEN_PATH"  # where Ray reads a cluster's auth token from
TOKEN_FILE = ".ray_auth_token"  # in the sweep's folder, while a local cluster of the sweep runs
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # what a local cluster's workers import searchbox from


class RayEngine:
    name = "ray"

    def __init__(self, address: str | None = None, run_fn: RunFn = connect_and_run,
                 on_note: Callable[[str], None] | None = None, folder: Path | None = None) -> None:
        self.address, self.run_fn, self.on_note = address, run_fn, on_note or (lambda note: None)
        self.folder = folder  # the sweep's own folder: where a local cluster's auth token is kept
        self.token_file: Path | None = None
        self.in_flight: Counter[str] = Counter()  # this sweep's runs per node id
        self.lost = 0  # cells whose node went away (each ran again)
        self.fetches: Counter[str] = Counter()  # dataroom fetches from the object store, per node id
        self.lock = threading.Lock()
        self.started_cluster = False

    def open(self, dataroom: Path, endpoints: list[Server] | None) -> list[Server]:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if self.address:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            self.on_note(f"ray: attached to the cluster at {self.address}")
        else:  # "local": never attach to a cluster some earlier `ray start` left recorded
            self._private_token()
            ray.init(address="local", include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": str(PACKAGE_ROOT)}})
            self.started_cluster = True
            self.on_note("ray: started a local cluster for this sweep (give --ray-address to use another)")
        self.digest, kind, payload = pack_dataroom(dataroom)
        self.dataroom = [ray.put(payload), kind]  # in a list: a task resolves it only on a cache miss
        # On the driver's own node: the flag must outlive any worker node the sweep loses.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        # Restarted if its process dies (Ray's memory monitor may pick it): a lost flag must not fail the runs.
        self.flag = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)(
            StopFlag).options(scheduling_strategy=here).remote()
        self.task = ray.remote(num_cpus=RUN_CPUS, max_retries=0)(run_remote)
        nodes = self._nodes()
        if not nodes:
            raise RuntimeError("the Ray cluster has no node with a CPU to run on")
        self.on_note(f"ray: {len(nodes)} node(s) run cells")
        return endpoints or [Server(None, 1, node) for node in nodes]

    def execute(self, dispatch: Dispatch) -> CellOutcome:
        import ray
        from ray.exceptions import RayError, RayTaskError
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        builtin = dispatch.server.node
        with self.lock:
            node = builtin or min(self._nodes(), key=lambda n: self.in_flight[n], default=None)
            if node is None:
                raise CellLost("no live node to run on")
            self.in_flight[node] += 1
        try:
            strategy = NodeAffinitySchedulingStrategy(node, soft=builtin is None)
            ref = self.task.options(scheduling_strategy=strategy).remote(
                pack_job(dispatch.job_dir), self.dataroom, self.digest, dispatch.settings, self.run_fn, self.flag)
            result = ray.get(ref)
        except RayTaskError as exc:  # the run itself raised: a failure, as it would be on the driver
            raise exc.as_instanceof_cause() from None
        except RayError as exc:  # the worker or its node went away: nothing came back
            with self.lock:
                self.lost += 1
            raise CellLost(f"{type(exc).__name__}: {exc}"[:500]) from exc
        finally:
            with self.lock:
                self.in_flight[node] -= 1
        if result.fetched:
            with self.lock:
                self.fetches[result.node_id] += 1
        unpack_job(dispatch.job_dir, result.state)
        return result.outcome

    def live(self, servers: list[Server]) -> list[Server]:
        nodes = set(self._nodes())
        return [s for s in servers if s.node is None or s.node in nodes]

    def stop(self) -> None:
        import ray

        ray.get(self.flag.set.remote())

    def close(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()  # a local cluster ends with it; a remote one only loses this driver
        if self.token_file is not None:  # the cluster it opened is gone: so is its token
            self.token_file.unlink(missing_ok=True)
            if os.environ.get(TOKEN_PATH_VAR) == str(self.token_file):
                del os.environ[TOKEN_PATH_VAR]
            if self.folder is None:
                shutil.rmtree(self.token_file.parent, ignore_errors=True)  # the private folder made for it
            self.token_file = None

    def _private_token(self) -> None:
        """A local cluster's auth token in the sweep's folder, mode 0600, named by RAY_AUTH_TOKEN_PATH.

        Left to itself, Ray writes a new local cluster's token to ~/.ray/auth_token with mode 0644
        (readable by every user of the machine) and never removes it. An operator's own token
        (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH) or RAY_AUTH_MODE=disabled is left as it is.
        """
        if TOKEN_PATH_VAR in os.environ or "RAY_AUTH_TOKEN" in os.environ:
            return
        if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
            return
        from ray._private.authentication.authentication_token_generator import generate_new_authentication_token

        folder = Path(self.folder) if self.folder is not None else Path(tempfile.mkdtemp(prefix="searchbox-ray-"))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / TOKEN_FILE
        path.unlink(missing_ok=True)  # one left by a sweep that was killed: a fresh cluster, a fresh token
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(generate_new_authentication_token())
        os.environ[TOKEN_PATH_VAR] = str(path)  # read by this driver and inherited by the cluster it starts
        self.token_file = path

    @staticmethod
    def _nodes() -> list[str]:
        import ray

        return [n["NodeID"] for n in ray.nodes() if n["Alive"] and n.get("Resources", {}).get("CPU", 0) > 0]


class StopFlag:
    """The sweep's stop, as a Ray actor: tasks wait on it, the driver sets it. An async actor: every
    run in flight holds one wait, a coroutine each (a threaded actor would hold a thread each, and
    Ray starts all of a threaded actor's max_concurrency threads at once)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def set(self) -> None:
        self.event.set()

    async def wait(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self.event.wait(), timeout)
        except TimeoutError:
            return False
        return True


@dataclass(frozen=True)
class RemoteResult:
    outcome: CellOutcome
    state: bytes  # the job folder's records, without the dataroom
    node_id: str
    fetched: bool  # whether this task fetched the dataroom from the object store


def run_remote(state: bytes, dataroom: list[Any], digest: str, settings: Settings, run_fn: RunFn,
               flag: Any) -> RemoteResult:
    """One cell, on a worker node: lay out the job from the node's dataroom copy and the driver's
    records, run it while watching the sweep's stop flag, hand back the records."""
    import ray  # a worker imports it anyway: it runs this task

    node_id = ray.get_runtime_context().get_node_id()
    source, fetched = node_dataroom(Path(settings.cache_dir), digest, dataroom)
    with tempfile.TemporaryDirectory(prefix="searchbox-cell-") as scratch:
        job_dir = Path(scratch) / "job"
        prepare_work_dir(job_dir, source)
        _extract(state, job_dir)
        control, ended = RunControl(), threading.Event()

        def watch() -> None:
            while not ended.is_set():
                if ray.get(flag.wait.remote(STOP_POLL_S)):
                    control.request("interrupted")
                    return

        watcher = threading.Thread(target=watch, name="sweep-stop-watch", daemon=True)
        if ray.get(flag.wait.remote(0)):
            control.request("interrupted")  # stopped before it started: the run is skipped
        else:
            watcher.start()
        try:
            outcome = run_cell(job_dir, settings, run_fn, control, f"{socket.gethostname()}/{node_id[:8]}")
        finally:
            ended.set()
        result = RemoteResult(outcome, pack_job(job_dir), node_id, fetched)  # the watcher ends on its own
        remove_job_folder(job_dir)  # the read-only dataroom copy too
        return result


def pack_dataroom(source: Path) -> tuple[str, str, bytes]:
    """(sha256, kind, bytes): a zip as it is, a folder as a tar of its regular files in name order."""
    if source.is_file():
        payload, kind = source.read_bytes(), "zip"
    else:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for path in sorted(source.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    info = archive.gettarinfo(str(path), path.relative_to(source).as_posix())
                    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""  # content only
                    with path.open("rb") as handle:
                        archive.addfile(info, handle)
        payload, kind = buffer.getvalue(), "tree"
    return hashlib.sha256(payload).hexdigest(), kind, payload


def node_dataroom(cache_dir: Path, digest: str, dataroom: list[Any]) -> tuple[Path, bool]:
    """The dataroom on this node, from its cache, else fetched once and cached; (path, fetched)."""
    ref, kind = dataroom
    target = cache_dir / DATAROOM_CACHE / (f"{digest}.zip" if kind == "zip" else digest)
    if target.exists():
        return target, False
    import ray

    payload: bytes = ray.get(ref)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}.", dir=target.parent))
    try:
        if kind == "zip":
            (staging / "dataroom.zip").write_bytes(payload)
            os.replace(staging / "dataroom.zip", target)
        else:
            _extract(payload, staging / "tree")
            try:
                os.rename(staging / "tree", target)
            except OSError:  # another task on this node cached it first: theirs is the same bytes
                if not target.exists():
                    raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target, True


def pack_job(job_dir: Path) -> bytes:
    """The job folder's folders and regular files as a tar, without the dataroom and the kept input.
    Files are opened as the app opens anything under work/ (records.work_files: no link followed, one
    name per file, no more than the bundle's per-file cap); what it refuses stays on the node."""
    folder = JobFolder(job_dir)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for here, dirs, files in walk(job_dir, 1 + MAX_DEPTH):  # as the bundle: never below what work/ may hold
            dirs[:] = sorted(d for d in dirs if here / d != folder.dataroom)
            if here != job_dir:
                archive.add(str(here), here.relative_to(job_dir).as_posix(), recursive=False)
            for name in sorted(files):
                if here / name == folder.input_zip:
                    continue
                rel = (here / name).relative_to(job_dir).as_posix()
                try:
                    fd = open_regular_in(job_dir, rel, FILE_MAX_BYTES)
                except OSError:  # gone, a link, a FIFO or socket, a hard link, or too large
                    continue
                with os.fdopen(fd, "rb") as handle:
                    archive.addfile(archive.gettarinfo(arcname=rel, fileobj=handle), handle)
    return buffer.getvalue()


def unpack_job(job_dir: Path, state: bytes) -> None:
    """Replace the driver's records of the run with the ones that came back (its dataroom and input stay)."""
    folder = JobFolder(job_dir)
    for path in job_dir.iterdir():
        if path == folder.work:
            for inner in path.iterdir():
                if inner.name != DATAROOM_NAME:
                    _remove(inner)
        elif path != folder.input_zip:
            _remove(path)
    _extract(state, job_dir)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        remove_job_folder(path)
    else:
        path.unlink()


def _extract(data: bytes, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        # Only what pack_job and pack_dataroom put in: nothing absolute, no links, nothing outside.
        archive.extractall(target, filter="data")

