"""The app's knobs: who uses it (an operator, or a public app's visitors), how many runs each may have
waiting and how the model slots are shared among them, and which models and endpoints they may choose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from searchbox.settings.knob import at_least, knob


@dataclass(frozen=True)
class AppSettings:
    """The operator or a public app's visitors: their login, their runs' queue and share of the model slots, the
    pool of model servers and the models and keys visitors may use."""

    TITLE: ClassVar[str] = "The app: visitors, their runs and its models"

    searchbox_operator: bool = knob(
        False, "the person using searchbox is its operator, not a public app's visitor: the app's jobs table lists "
        "every run, its page shows the machine report, offers every LLM choice and bash in the explorer, shares "
        "JINA_API_KEY, and a new run preempts the running one at once; BASH_SANDBOX=off is honoured", deploy=True
    )
    searchbox_auth: str = knob(
        "", "user:password that the app asks for (no login when empty)", secret=True, deploy=True
    )
    searchbox_trusted_proxies: str = knob(
        "", "comma-separated addresses of the reverse proxies in front of the app whose X-Forwarded-For is "
        "believed (the rightmost hop that is not one of them is the client); empty: none, the peer's own "
        "address counts (on a Hugging Face Space the last hop its proxy adds)", deploy=True
    )
    searchbox_max_queued_runs: int = knob(
        5, "runs one visitor of the app may have queued, running or preempted at once (0 = no limit)", deploy=True
    )
    searchbox_max_queued_per_address: int = knob(
        10, "runs one client address may have queued, running or preempted at once, whatever visitor ids its calls "
        "send (on a Hugging Face Space: the address its proxy forwards); 0 = no limit"
    )
    searchbox_max_queued_total: int = knob(
        50, "runs all visitors of the app together may have queued, running or preempted at once (0 = no limit)"
    )
    searchbox_fair_share_seconds: int = knob(
        120, "a visitor's run keeps its model slot this long each time it gets it before another visitor's new run "
        "preempts it when every slot is busy (a backfill, the visitor's own new run, or SEARCHBOX_OPERATOR=1: at once; 0 = always at once)"
    )
    searchbox_endpoints: str = knob(
        "", "the app's pool of model servers, as ablate --endpoints takes it: url=slots,... (llama-server "
        "--parallel N serves N runs at once) or @FILE with one url=slots a line; the app runs as many visitors' runs "
        "at once as the pool has slots, takes a server that stops answering out until GET /v1/models answers "
        "again, and offers visitors no other model; empty: one slot, LLAMA_URL or the built-in runtime "
        "(recorded only as set: its URLs are the operator's)", secret=True, deploy=True
    )
    searchbox_visitor_endpoints: bool = knob(
        False, "visitors of the app may point a run at an LLM endpoint URL of their own (keep off on a public demo)"
    )
    searchbox_visitor_models: str = knob(
        "", "LLM choices the app's visitors get besides its own model (LLAMA_URL when set, else LLM_GGUF): LLM_GGUF "
        "values, comma-separated (auto, preset names, packaged:...); empty = its own only (a choice may download up "
        "to 22 GB, and every model booted stays in memory)", deploy=True
    )
    searchbox_warm_start: bool = knob(
        True, "prepare at start-up what a first run needs (the app's model and the prompt prefix its runs start with, "
        "the retrieval models, the built-in dataroom's text and vectors in the caches runs read), off any "
        "visitor's clock, with its progress on the page and in GET /health; off: the first run does it"
    )
    searchbox_visitor_keys: bool = knob(
        False, "runs of the app's visitors may use the operator's JINA_API_KEY for the api backends (off: a "
        "visitor's run with an api backend needs a key of its own)"
    )


def check(settings: AppSettings) -> None:
    """SettingsError for a value of this section's knobs that cannot be used."""
    at_least(settings, 0, ("searchbox_max_queued_runs", "searchbox_max_queued_per_address", "searchbox_max_queued_total",
                           "searchbox_fair_share_seconds"))
