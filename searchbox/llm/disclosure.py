"""What a visitor may see of the operator's configuration: the one place that decides.

A public app (no SEARCHBOX_OPERATOR) shows every visitor the feed, the job record, the downloads and the
API's answers; none of them may name the operator's model servers (LLAMA_URL, SEARCHBOX_ENDPOINTS,
CITATION_JUDGE) or the server's folders. Messages name a server as `the model server` (or `model server 2
of 3` of a pool), and what a run wrote down anyway (Pi's records, a server's own error text) has every
form of those values replaced, in any letter case. An operator's app shows them as before; the app's log
names the URL for the operator either way."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from searchbox.llm.endpoints import PoolError, pool_servers
from searchbox.settings import Settings
from searchbox.settings.urls import endpoint_forms

MODEL_SERVER = "the model server"
HIDDEN = "(the app's own)"


def endpoint_name(settings: Settings, url: str) -> str | None:
    """How messages a visitor may read name the endpoint at `url`: None (by its URL, credentials left out)
    in an operator's app; `model server N of M` for a server of the pool; else `the model server`."""
    if settings.searchbox_operator:
        return None
    pool = _pool_urls(settings)
    if url in pool:
        return f"model server {pool.index(url) + 1} of {len(pool)}"
    return MODEL_SERVER


def operator_details(settings: Settings) -> tuple[str, ...]:
    """What a visitor must not see written down: every form of the operator's endpoints (the run's model,
    the pool's servers, the citation judge) and the server's folders (a run's config.json and
    run_meta.json record them). Nothing for an operator's own app."""
    if settings.searchbox_operator:
        return ()
    judge = settings.citation_judge if "://" in settings.citation_judge else ""
    urls = [settings.llama_url, judge, *_pool_urls(settings)]
    values = {*(form for url in urls for form in url_forms(url)), settings.cache_dir, settings.jobs_dir,
              os.path.expanduser("~")}
    if os.path.isabs(settings.llm_gguf):
        values.add(settings.llm_gguf)
    return tuple(sorted(v for v in values if v and v != "/"))


def url_forms(url: str) -> set[str]:
    """Every form of an endpoint URL a message may hold (settings.endpoint_forms), and its `user:password@host`."""
    return endpoint_forms(url) | ({urlsplit(url).netloc} - {""})


def hidden(text: str, details: Iterable[str]) -> str:
    """`text` with each of `details` replaced by HIDDEN, in any letter case (a URL's host may come back
    lower-cased: httpx, Node and the server all write it so)."""
    values = sorted(filter(None, details), key=len, reverse=True)  # a folder after the paths inside it
    if not values:
        return text
    return re.sub("|".join(map(re.escape, values)), HIDDEN, text, flags=re.IGNORECASE)


def _pool_urls(settings: Settings) -> list[str]:
    try:
        return [server.url for server in pool_servers(settings) if server.url]
    except PoolError:  # the app refuses to start with it; a CLI run has no pool to name
        return []


def hidden_from_anyone(settings: Settings, text: str) -> str:
    """`text` as anyone may read it, in an operator's app too: what a route without a login answers (GET
    /health) and what the page says before anyone logs in."""
    return hidden(text, operator_details(settings.with_overrides(searchbox_operator=False)))
