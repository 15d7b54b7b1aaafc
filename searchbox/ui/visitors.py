"""The visitor policy: who a visitor is and what a visitor may set for a run. The run view builds its form from it and hands it what the form sent.

Who a visitor is, as the server sees it: the client address of a call, which an API caller cannot
change by sending another visitor id (the `owner` a page keeps is chosen by the client).

The address is the connection's peer (app.py stops uvicorn from rewriting it from X-Forwarded-For).
Behind reverse proxies the operator names (SEARCHBOX_TRUSTED_PROXIES), the rightmost X-Forwarded-For
hop none of them added is the client. On a Hugging Face Space (SPACE_ID set) every connection comes
from Hugging Face's own proxy, on another machine, which puts the address it saw at the end of
X-Forwarded-For: that last entry is taken. Entries to its left came from the client and are never
trusted. The header is one list across all its lines, in order (HAProxy's `option forwardfor` adds a line
of its own below the client's). The same rule serves the handlers (a gr.Request) and the file gate (an
ASGI scope).

What a visitor must not see of the operator's configuration is decided in llm.disclosure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import gradio as gr
from starlette.datastructures import Headers

from searchbox.agent.pi import install as pi_install
from searchbox.llm.choice.presets import PRESETS, find_preset
from searchbox.retrieval.models import uses_jina_api
from searchbox.settings import Settings, SettingsError
from searchbox.settings.bundles import EFFORT_PRESETS, RETRIEVAL_PRESETS
from searchbox.tools.catalog import CATALOG_TOOLS
from searchbox.ui.services import shares_operator_key
from searchbox.ui.uploads import NotYourUpload, UploadLedger

ENDPOINT_CHOICE = "an OpenAI-compatible endpoint"
OWN_MODEL = "the app's own model"  # an LLM_GGUF that is a path or a hub file, which the page does not show
BUDGET_RANGE = (1, 20)  # the turn budgets a visitor may ask for (the page's slider)
BACKENDS = ["local", "api"]


def client_address(request: gr.Request | None) -> str:
    """The address a call came from; empty when there is no request (a call from Python)."""
    if request is None:
        return ""
    client = request.client
    return address_of(client.host if client is not None and client.host else "", forwarded_for(request.headers))


def forwarded_for(headers: Headers) -> str:
    """X-Forwarded-For as one list: all its lines joined in order. Read as its first line alone, a client's
    own line above the one its proxy added picked the address, and uploads went past the per-address cap
    (docs/findings/2026-12-06-hostile-visitors.md)."""
    return ", ".join(headers.getlist("x-forwarded-for"))


def address_of(peer: str, forwarded: str) -> str:
    """The client's address, from the connection's peer and the X-Forwarded-For header it sent."""
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    if os.environ.get("SPACE_ID"):
        if hops:
            return hops[-1]  # HF's proxy appends the address it saw
    trusted = trusted_proxies()
    if peer not in trusted:
        return peer  # a header from anyone else is the client's own word
    for hop in reversed(hops):  # the rightmost hop no trusted proxy added is the client
        if hop not in trusted:
            return hop
    return peer


def take_upload(uploads: UploadLedger, path: str, request: gr.Request | None) -> None:
    """A handler takes an upload for the calling page session: a clear error when it is not the caller's
    (another address sent it, another page took it, or it was deleted). A call from Python (no request)
    names files of its own."""
    if request is None:
        return
    try:
        uploads.claim(path, client_address(request), request.session_hash)
    except NotYourUpload as exc:
        raise gr.Error(str(exc)) from exc


def trusted_proxies() -> set[str]:
    """SEARCHBOX_TRUSTED_PROXIES as a set (read per call: the app process sets it once at start)."""
    return {p.strip() for p in os.environ.get("SEARCHBOX_TRUSTED_PROXIES", "").split(",") if p.strip()}


def own_model_choice(settings: Settings) -> str:
    """The app's own model as a choice: its servers (SEARCHBOX_ENDPOINTS) or endpoint (LLAMA_URL), else its
    LLM_GGUF under a name that shows no path of the operator's."""
    if settings.llama_url or settings.searchbox_endpoints:
        return ENDPOINT_CHOICE
    gguf = settings.llm_gguf
    if gguf == "auto" or gguf.startswith("packaged:"):
        return gguf
    preset = find_preset(gguf)
    return preset.name if preset is not None else OWN_MODEL


def llm_choices(settings: Settings) -> list[str]:
    """What a visitor may pick: the app's own model, those SEARCHBOX_VISITOR_MODELS adds (an operator gets
    auto and every preset), and an endpoint of their own where allowed. Only the operator's consent lets a
    run download or boot another model: each one booted stays in memory. With a pool of servers
    (SEARCHBOX_ENDPOINTS) the pool is the app's model: a model booted here would hold a slot it does not use."""
    if settings.searchbox_endpoints:
        extra: list[str] = []
    elif settings.searchbox_operator:
        extra = ["auto", *(p.name for p in PRESETS)]
    else:
        extra = [name.strip() for name in settings.searchbox_visitor_models.split(",") if name.strip()]
    choices = dict.fromkeys([own_model_choice(settings), *extra])
    if settings.searchbox_visitor_endpoints:
        choices[ENDPOINT_CHOICE] = None
    return list(choices)


def harness_choices() -> list[str]:
    """The harnesses a run may use here: Pi only where it can run (Node.js and the pinned Pi installed)."""
    return ["native", "pi"] if pi_install.pi_problem() is None else ["native"]


def catalog_group(group: str) -> list[str]:
    """The catalog tools of a group (high or low), in the catalog's order."""
    return [t.name for t in CATALOG_TOOLS if t.group == group]


def form_choices(settings: Settings) -> dict[str, list[str]]:
    """What each choice field of the Ask form may hold: the page's components offer these, the REST API
    refuses anything else."""
    return {"high": catalog_group("high"), "low": catalog_group("low"), "llm": llm_choices(settings),
            "retrieval": list(RETRIEVAL_PRESETS), "embed_backend": BACKENDS, "rerank_backend": BACKENDS,
            "harness": harness_choices()}


def form_defaults(settings: Settings) -> dict[str, Any]:
    """What the Ask form holds before a visitor changes anything (but the question and the upload): the page
    shows it, and an API caller's run takes it for each field it leaves out."""
    quick = EFFORT_PRESETS["Quick"]
    defaults = {t.name for t in CATALOG_TOOLS if t.default}
    harnesses = harness_choices()
    return {"budget": quick["turn_budget"], "force": quick["force_budget"],
            "high": [n for n in catalog_group("high") if n in defaults],
            "low": [n for n in catalog_group("low") if n in defaults],
            "llm": own_model_choice(settings), "endpoint": "", "model_id": "", "retrieval": settings.retrieval_preset,
            "embed_backend": settings.embed_backend, "rerank_backend": settings.rerank_backend, "jina_key": "",
            "harness": settings.harness if settings.harness in harnesses else "native"}


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What the Ask panel sends for one run: each field is a named parameter of the /search endpoint, in
    this order (the visitor's id comes last), so a page and an API caller send the same thing."""

    question: str
    upload: str | None = None
    budget: float
    force: bool
    high: list[str]
    low: list[str]
    llm: str
    endpoint: str
    model_id: str
    retrieval: str
    embed_backend: str
    rerank_backend: str
    jina_key: str = ""
    harness: str = ""  # empty: the app's own HARNESS

    def overrides(self, settings: Settings) -> dict[str, Any]:
        """The knobs a visitor sets for one run: a fixed list, each checked, so a page cannot point the
        server at arbitrary URLs or files, nor spend the operator's Jina key without consent."""
        overrides = self._knobs(settings)
        try:
            chosen = settings.with_overrides(**overrides)
        except SettingsError as exc:
            raise gr.Error(str(exc)) from exc
        if uses_jina_api(chosen) and not self.jina_key.strip() and not shares_operator_key(settings):
            raise gr.Error("The api backends need a Jina API key of your own on this app: type it in the Jina API "
                           "key field, or choose the local embedder and reranker.")
        return overrides

    def _knobs(self, settings: Settings) -> dict[str, Any]:
        if self.llm not in llm_choices(settings):
            raise gr.Error(f"Unknown model choice {self.llm!r}.")
        overrides: dict[str, Any] = {
            "turn_budget": int(self.budget),
            "force_budget": bool(self.force),
            "searchbox_tools": ",".join([*self.high, *self.low]),
        }
        # Retrieval choices left as the operator set them stay unchosen: the run may then fall back to
        # models it can load here (see retrieval.availability) instead of failing on its first search.
        chosen = {"retrieval_preset": self.retrieval, "embed_backend": self.embed_backend,
                  "rerank_backend": self.rerank_backend}
        overrides.update({k: v for k, v in chosen.items() if v != getattr(settings, k)})
        if self.harness:
            if self.harness not in harness_choices():
                raise gr.Error(f"The harness {self.harness!r} cannot run on this app: {pi_install.pi_problem() or 'unknown'}")
            overrides["harness"] = self.harness
        if self.llm != ENDPOINT_CHOICE:
            return {**overrides, "llm_gguf": settings.llm_gguf if self.llm == OWN_MODEL else self.llm, "llama_url": ""}
        endpoint, model_id = self.endpoint.strip(), self.model_id.strip()
        # The operator's endpoint, whatever the page sent, unless visitors may give one (and did).
        if not settings.searchbox_visitor_endpoints or not endpoint:
            if settings.searchbox_endpoints:
                return overrides  # the scheduler gives the run a slot of a pool server
            endpoint, model_id = settings.llama_url, settings.model_id
        if not endpoint:
            raise gr.Error("Give the endpoint's URL, e.g. http://localhost:8080/v1")
        return {**overrides, "llama_url": endpoint, "model_id": model_id}
