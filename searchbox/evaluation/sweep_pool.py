"""The model servers a sweep runs on, each with its parallel slots, and which of them is free.

`--endpoints http://a:8080/v1=4,http://b:8080/v1` names two servers, the first with four slots (run
llama-server with `--parallel 4`), the second with one; `--endpoints @pool.txt` reads the same from a
file, one `url[=slots]` a line (`#` starts a comment). With no endpoint, runs use the built-in llama.cpp
runtime: one slot per machine that runs them (the runtime holds one model).

The driver, not the engine, keeps the count: a run is handed a slot before it starts and gives it
back when it ends, so no server ever has more runs in flight than its slots. A server that stops
answering is dropped; the runs it had go back to the queue for the others.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path


class PoolError(ValueError):
    """A pool spec or file that cannot be read, or a pool with nowhere left to run."""


@dataclass(frozen=True)
class Server:
    """Somewhere runs go: an endpoint URL; or, with url None, each run's own model (its LLAMA_URL, else the
    built-in runtime) here (node None), or the built-in runtime on one node of a cluster."""

    url: str | None
    slots: int = 1
    node: str | None = None

    @property
    def label(self) -> str:
        if self.url is not None:
            return self.url
        return "default model" if self.node is None else f"built-in@{self.node[:8]}"


def parse_endpoints(spec: str) -> list[Server]:
    """`url[=slots],...`, or `@FILE` holding one `url[=slots]` a line."""
    if spec.startswith("@"):
        path = Path(spec[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PoolError(f"cannot read the pool file {path}: {exc.strerror or exc}") from exc
        items = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    else:
        items = [item.strip() for item in spec.split(",")]
    servers = [_server(item) for item in items if item]
    if not servers:
        raise PoolError(f"no endpoint in {spec!r}")
    twice = [url for url, n in Counter(s.url for s in servers).items() if n > 1]
    if twice:
        raise PoolError(f"{twice[0]} is named twice: give it one entry with its number of slots")
    return servers


def _server(item: str) -> Server:
    url, sep, slots = item.rpartition("=")
    if not sep or "/" in slots:  # no slot count (an `=` inside a URL's query is not one)
        return Server(item)
    if not slots.isdigit() or int(slots) < 1:
        raise PoolError(f"{item!r}: the number of slots after '=' must be a whole number of at least 1")
    return Server(url, int(slots))


class Pool:
    """Free slots per server; servers dropped for not answering get no more runs."""

    def __init__(self, servers: list[Server]) -> None:
        self.servers = list(servers)
        self.busy: Counter[Server] = Counter()
        self.dropped: list[Server] = []

    def take(self) -> Server | None:
        """The live server with the most free slots (ties: pool order), its slot now taken; None when full."""
        free = [(s.slots - self.busy[s], -n, s) for n, s in enumerate(self.servers) if self.busy[s] < s.slots]
        if not free:
            return None
        server = max(free, key=lambda f: f[:2])[2]
        self.busy[server] += 1
        return server

    def give_back(self, server: Server) -> None:
        self.busy[server] -= 1

    def drop(self, server: Server) -> None:
        if server in self.servers:
            self.servers.remove(server)
            self.dropped.append(server)

    @property
    def slots(self) -> int:
        return sum(s.slots for s in self.servers)
