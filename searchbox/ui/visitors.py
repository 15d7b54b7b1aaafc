"""Who a visitor is, as the server sees it: the client address of a call, which an API caller cannot
change by sending another visitor id (the `owner` a page keeps is chosen by the client).

The address is the connection's peer, as uvicorn gives it: uvicorn already replaces it with the
X-Forwarded-For address when the connection comes from a proxy on this machine (127.0.0.1), and
ignores that header from anywhere else. On a Hugging Face Space (SPACE_ID set) every connection comes
from Hugging Face's own proxy, on another machine, which puts the address it saw at the end of
X-Forwarded-For: that last entry is taken. Entries to its left came from the client and are never
trusted.
"""

from __future__ import annotations

import os

import gradio as gr

from searchbox.settings import Settings, without_userinfo


def client_address(request: gr.Request | None) -> str:
    """The address a call came from; empty when there is no request (a call from Python)."""
    if request is None:
        return ""
    if os.environ.get("SPACE_ID"):
        hops = [hop.strip() for hop in (request.headers.get("x-forwarded-for") or "").split(",") if hop.strip()]
        if hops:
            return hops[-1]
    client = request.client
    return client.host if client is not None and client.host else ""


def operator_details(settings: Settings) -> tuple[str, ...]:
    """What a visitor's downloads must not show: the operator's endpoint and the server's folders (a run's
    config.json and run_meta.json record them). Nothing for an operator's own app."""
    if settings.searchbox_operator:
        return ()
    values = {settings.llama_url, without_userinfo(settings.llama_url), settings.cache_dir, settings.jobs_dir,
              os.path.expanduser("~")}
    if os.path.isabs(settings.llm_gguf):
        values.add(settings.llm_gguf)
    return tuple(sorted(v for v in values if v and v != "/"))
