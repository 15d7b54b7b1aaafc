"""llama-cpp-python's own OpenAI-compatible server (`python -m llama_cpp.server`) on 127.0.0.1, serving
the packaged Qwen2.5-Coder-0.5B-Instruct, for tests that need a real model behind a URL.

It runs with the GGUF's own chat template (no --chat_format): with llama-cpp-python 0.3.x that is the
only format under which a streamed agent run works (see tests/llm/test_llama_server.py).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from testkit.app_server import free_port, stop_process
from searchbox.llm.weights.gguf import resolve_gguf

MODEL = "packaged:qwen2.5-coder-0.5b"
ALIAS = "qwen2.5-coder-0.5b"
# What llama-cpp-python's `server` extra adds (requirements-dev.txt installs it).
SERVER_MODULES = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")


def missing_server_modules() -> list[str]:
    return [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]


def _wait_until_serving(url: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"llama_cpp.server did not answer within {timeout_s:.0f}s:\n{log.read_text()[-3000:]}")


@contextmanager
def llama_server(folder: Path, n_ctx: int = 8192, threads: int | None = None) -> Iterator[str]:
    """The server's base URL (as LLAMA_URL takes it) while it runs; its output goes to folder/server.log."""
    port = free_port()
    log = folder / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(resolve_gguf(MODEL)), "--model_alias", ALIAS,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
               "--seed", "7",  # the same sampling every run: the server seeds each request from this
               *(["--n_threads", str(threads)] if threads else []), "--verbose", "False"]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_serving(url, process, log)
        yield url
    finally:
        stop_process(process)
