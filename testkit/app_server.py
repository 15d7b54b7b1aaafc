"""Launch the real app (python app.py) in a subprocess for tests, on a free port, with the packaged
models and its own jobs and cache folders.

`as_user=True` starts it the way a user does: no SEARCHBOX_* variables at all, so the jobs and the
caches go to their defaults under HOME, and HOME is a throw-away folder outside the system temp
folder (Gradio serves files from the temp folder, which once hid a bug that blanked every run).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Outside the system temp folder and the app's working folder on purpose: Gradio serves files from both.
HOMES = Path.home() / ".cache" / "searchbox-test-homes"

# A tiny model and few steps: tests check the plumbing, not the answers.
PACKAGED_KNOBS = {
    "LLM_GGUF": "packaged:gemma3-270m",
    "RETRIEVAL_PRESET": "packaged",
    "CONTEXT_WINDOW": "4096",
    "MAX_OUTPUT_TOKENS": "48",
    "MAX_STEPS_PER_TURN": "2",
    "FORCE_TOOL_STEPS": "1",
    # Two steps a turn keep the tiny model's runs short; the wrap-up assist then gives each turn its answer.
    "HARNESS_ASSISTS": "wrap_up",
    "HF_HUB_OFFLINE": "1",
    "PROMPT_DATE": "2026-12-02",  # the prompt names its day: the seeded runs of one day, every day
}

# The live view's outputs as gradio_client returns them (States and buttons left out), in
# RunView.live_outputs order.
LIVE_FIELDS = ("status", "feed", "answer", "sources", "plot-tokens", "plot-tools", "plot-time", "plot-context",
               "plot-budget", "empty_dashboard", "answer_file", "bundle")


def unwrap(value: Any) -> Any:
    """An output sent as an update (a value with its visibility) as its value; a skipped one as None."""
    if isinstance(value, dict) and value.get("__type__") == "update":
        return value.get("value")
    return value


# /search also returns the visitor's id (a BrowserState) when a browser's first run made it.
SEARCH_FIELDS = (*LIVE_FIELDS, "owner")


def live(update: tuple) -> dict[str, Any]:
    """One update of /search or /reattach by output name."""
    fields = SEARCH_FIELDS if len(update) == len(SEARCH_FIELDS) else LIVE_FIELDS
    assert len(update) == len(fields), [str(v)[:80] for v in update]
    return {name: unwrap(value) for name, value in zip(fields, update)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def throwaway_home(name: str) -> Iterator[Path]:
    """A HOME for one app started as a user would, not inside the system temp folder."""
    HOMES.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=HOMES))
    for served in (Path(tempfile.gettempdir()), ROOT):
        assert not home.resolve().is_relative_to(served.resolve()), f"{home} is inside {served}"
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def default_jobs_dir(home: Path) -> Path:
    """Where an app started with `as_user=True` keeps its jobs (the Settings defaults)."""
    return home / ".cache" / "searchbox" / "jobs"


@contextmanager
def running_app(home: Path, *, as_user: bool = False, **env: str) -> Iterator[str]:
    with app_process(home, as_user=as_user, **env) as (url, _):
        yield url


@contextmanager
def app_process(home: Path, *, as_user: bool = False, **env: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """The app's URL and its process, for tests that kill it; started again on the same home it finds
    the same jobs. Its output is appended to home/app.log, so every start's output is kept."""
    port = free_port()
    if as_user:
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHBOX_")}
        full_env = {**inherited, **PACKAGED_KNOBS, "HOME": str(home), **env}
    else:
        full_env = {**os.environ, **PACKAGED_KNOBS, "SEARCHBOX_JOBS_DIR": str(home / "jobs"),
                    "SEARCHBOX_CACHE_DIR": str(home / "cache"), **env}
    log = (home / "app.log").open("a")
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=full_env,
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"the app did not start:\n{(home / 'app.log').read_text()[-3000:]}") from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/", proc
    finally:
        stop_process(proc)
        log.close()


def stop_process(proc: subprocess.Popen) -> None:
    """Ask a server to stop, and kill it when it has not within 30 s."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


_CHAINED = ("The above exception was the direct cause", "During handling of the above exception")


def server_tracebacks(home: Path) -> list[str]:
    """The exceptions the app logged with a traceback, but for the clear errors it shows visitors on
    purpose (gr.Error: an empty question, a refused upload, with whatever caused them chained before):
    a run that looks fine may still have failed to show."""
    found = []
    blocks = (home / "app.log").read_text(errors="replace").split("Traceback (most recent call last):")[1:]
    for index, block in enumerate(blocks):
        if any(marker in block for marker in _CHAINED) and index + 1 < len(blocks):
            continue  # a cause: the chain is judged by the exception it ends in
        # The exception itself is the first line of the block that is not indented.
        raised = next((line for line in block.splitlines() if line and not line[0].isspace()), block[-300:])
        if not raised.startswith("gradio.exceptions.Error:"):
            found.append(raised)
    return found
