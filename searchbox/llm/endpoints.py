"""The model servers a pool names: OpenAI-compatible endpoints, each with its parallel slots. Sweeps
(`ablate --endpoints`) and the app's scheduler (`SEARCHBOX_ENDPOINTS`) read them here, and what a visitor may
see of them (disclosure) names a server by its place here.

`http://a:8080/v1=4,http://b:8080/v1` names two servers, the first with four slots (run llama-server
with `--parallel 4`), the second with one; `@pool.txt` reads the same from a file, one `url[=slots]` a
line (`#` starts a comment). With no pool, runs use one `Server(None)`: each run's own model (its
LLAMA_URL, else the built-in llama.cpp runtime, which holds one model: one slot). Which slot is free is
jobs/pool.py's; whether a server answers, `endpoint_answers`.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from searchbox.settings import Settings

PROBE_TIMEOUT_S = 5.0


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


def pool_servers(settings: Settings) -> list[Server]:
    """The app's servers: SEARCHBOX_ENDPOINTS, else one slot of the app's own model."""
    if not settings.searchbox_endpoints:
        return [Server(None)]
    try:
        return parse_endpoints(settings.searchbox_endpoints)
    except PoolError as exc:
        raise PoolError(f"SEARCHBOX_ENDPOINTS: {exc}") from None


def _server(item: str) -> Server:
    url, sep, slots = item.rpartition("=")
    if not sep or "/" in slots:  # no slot count (an `=` inside a URL's query is not one)
        return _checked(item, item, 1)
    if not slots.isdigit() or int(slots) < 1:
        raise PoolError(f"{item!r}: the number of slots after '=' must be a whole number of at least 1")
    return _checked(item, url, int(slots))


def _checked(item: str, url: str, slots: int) -> Server:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PoolError(f"{item!r}: not an http(s) URL of an OpenAI-compatible server (e.g. http://gpu1:8080/v1=4)")
    return Server(url, slots)


def endpoint_answers(url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether anything answers HTTP at the endpoint's GET /models (any status will do: a server that
    refuses it is still up); a refused connection or silence until the timeout is a server gone."""
    parts = urllib.parse.urlsplit(url)
    bare = parts._replace(netloc=parts.netloc.rpartition("@")[2])  # credentials are not needed to see it is up
    try:
        with urllib.request.urlopen(bare.geturl().rstrip("/") + "/models", timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):  # URLError, a reset, a timeout; ValueError: not an http URL
        return False
