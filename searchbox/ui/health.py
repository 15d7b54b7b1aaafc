"""GET /health: whether the app can run a job now, for a load balancer, an uptime check or an operator.

    {"ok": true, "model": "packaged:qwen2.5-coder-1.5b", "slots": {"busy": 1, "free": 0}, "queue": 2,
     "warm": {"state": "ready", "steps": [...]}, "reason": ""}

200 while the app can run a job, 503 with the reason while it cannot: the built-in runtime's model could not
be prepared at start-up (warm_start), LLAMA_URL's server does not answer, or no server of the pool
(SEARCHBOX_ENDPOINTS) answers. A run queued meanwhile waits; it is not lost. While the warm start prepares,
the app can run a job (the first one waits for what is not ready yet): 200, with `warm` saying how far it got.

The route sits in front of Gradio's (an ASGI middleware, as the file gate), so it answers without the app's
login: a health check logs in to nothing. So nothing in it is a secret or a visitor's: the model under the
name the page gives it, counts of slots and runs, and reasons that name no URL or folder. However often it is
asked, a model server is asked whether it answers at most once every PROBE_TTL_S seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from starlette.responses import JSONResponse, PlainTextResponse

from searchbox.jobs.scheduler import Scheduler
from searchbox.llm.endpoints import endpoint_answers, pool_servers
from searchbox.settings import Settings
from searchbox.ui.visitors import own_model_choice
from searchbox.ui.warm_start import MODEL, WarmStart, WarmState

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PATHS = ("/health", "/health/")
PROBE_TTL_S = 5.0  # how long a server's answer (or silence) stands for
PROBE_TIMEOUT_S = 2.0  # a health check must answer quicker than a run's probe (endpoints.PROBE_TIMEOUT_S) waits


@dataclass(frozen=True)
class HealthReport:
    ok: bool
    model: str
    busy: int
    free: int
    queue: int
    warm: WarmState
    reason: str  # why the app cannot run a job now; empty when it can

    @property
    def status(self) -> int:
        return 200 if self.ok else 503

    def body(self) -> dict[str, Any]:
        return {"ok": self.ok, "model": self.model, "slots": {"busy": self.busy, "free": self.free},
                "queue": self.queue, "warm": self.warm.as_dict(), "reason": self.reason}


class Health:
    def __init__(self, settings: Settings, scheduler: Scheduler, warm: WarmStart,
                 answers: Callable[[str, float], bool] = endpoint_answers, probe_ttl_s: float = PROBE_TTL_S) -> None:
        self.settings = settings
        self.scheduler = scheduler
        self.warm = warm
        self._answers = answers
        self._ttl = probe_ttl_s
        self._heard: dict[str, tuple[float, bool]] = {}  # url -> (when asked, monotonic; whether it answered)
        self._probing = threading.Lock()  # one probe at a time: a burst of checks waits for it, then reads it

    def report(self) -> HealthReport:
        standing = self.scheduler.occupancy()
        warm = self.warm.state()
        reason = self._why_not(warm)
        free = max(0, standing.slots - standing.busy) if not reason else 0  # a slot no run could take now is not free
        return HealthReport(not reason, self._model(), standing.busy, free, standing.waiting, warm, reason)

    def _model(self) -> str:
        """The page's name for the app's own model (no URL or path), with the preset LLM_GGUF=auto picked."""
        name = own_model_choice(self.settings)
        return f"auto ({self.warm.preset})" if name == "auto" and self.warm.preset else name

    def _why_not(self, warm: WarmState) -> str:
        settings = self.settings
        if settings.searchbox_endpoints:
            urls = [server.url for server in pool_servers(settings) if server.url]
            if not any(self._answering(urls)):
                return f"no model server of the pool answers (0 of {len(urls)})"
            return ""
        if settings.llama_url:
            return "" if self._answering([settings.llama_url])[0] else "the model server does not answer"
        model = warm.step(MODEL)
        return f"the model could not be loaded at start-up: {model.detail}" if model.state == "failed" else ""

    def _answering(self, urls: list[str]) -> list[bool]:
        with self._probing:
            now = time.monotonic()
            stale = [url for url in urls if url not in self._heard or now - self._heard[url][0] >= self._ttl]
            if stale:
                with ThreadPoolExecutor(max_workers=min(8, len(stale))) as pool:
                    heard = list(pool.map(lambda url: self._answers(url, PROBE_TIMEOUT_S), stale))
                asked = time.monotonic()
                self._heard.update({url: (asked, up) for url, up in zip(stale, heard)})
            return [self._heard[url][1] for url in urls]


class HealthRoute:
    """The ASGI middleware that answers GET /health (under a path prefix too) and hands on everything else."""

    def __init__(self, app: ASGIApp, health: Health) -> None:
        self.app = app
        self.health = health

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _route_path(scope) not in PATHS:
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await PlainTextResponse("GET /health only", 405, headers={"Allow": "GET, HEAD"})(scope, receive, send)
            return
        report = await anyio.to_thread.run_sync(self.health.report)  # a probe may take seconds: off the event loop
        await JSONResponse(report.body(), report.status, headers={"Cache-Control": "no-store"})(scope, receive, send)


def _route_path(scope: Scope) -> str:
    """The path without the prefix the server was told it is mounted under (ASGI's root_path), as Starlette
    routes it: a proxy that strips its prefix and one that does not reach the same route."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path
