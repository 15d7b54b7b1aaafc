"""Launch the real app (python app.py) in a subprocess for tests, on a free port, with the packaged
models and its own jobs and cache folders."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A tiny model and few steps: tests check the plumbing, not the answers.
PACKAGED_KNOBS = {
    "LLM_GGUF": "packaged:gemma3-270m",
    "RETRIEVAL_PRESET": "packaged",
    "CONTEXT_WINDOW": "4096",
    "MAX_OUTPUT_TOKENS": "48",
    "MAX_STEPS_PER_TURN": "2",
    "FORCE_TOOL_STEPS": "1",
    "HF_HUB_OFFLINE": "1",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_app(home: Path, **env: str) -> Iterator[str]:
    with app_process(home, **env) as (url, _):
        yield url


@contextmanager
def app_process(home: Path, **env: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """The app's URL and its process, for tests that kill it; started again on the same home it finds
    the same jobs. Its output is appended to home/app.log, so every start's output is kept."""
    port = free_port()
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
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
