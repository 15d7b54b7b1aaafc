"""The settings a run really uses, fitted once, when it starts, from the settings it asked for.

A run asks for its settings (the environment, the app's form, a sweep's matrix entry, `--set`); what it
uses also depends on the model that answers and on this machine. `fit_run_settings` fits them, in this one
place, for every run (agent/run.py's `run_job`, however the run was reached), and for what must match what a
run would send (the app's kept prompt prefix, the conformance check's output cap), in this order:

1. the limits of the model's catalog preset (llm/choice/presets.py, `fit_limits`): context window, output
   cap, steps per turn, assists, tool output and descriptions, each only where the user left it alone;
2. the context window the runtime gave the model, where that is less;
3. retrieval models this machine can load (retrieval/availability.py, `fit_retrieval`), unless the user chose
   them;
4. the day the prompt names (PROMPT_DATE, unless set): the day the run first started, which a resumed run reads
   back from its config.json.

Each knob changed is recorded as derived (run_meta.json's `derived`). The result is frozen, and is what the run
records in config.json, before anything of the run itself is written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from searchbox.llm.choice.presets import Preset, fit_limits
from searchbox.llm.types import ChatModel
from searchbox.retrieval.availability import fit_retrieval
from searchbox.settings import Settings


def fit_run_settings(requested: Settings, model: ChatModel, *, preset: Preset | None = None,
                     recorded: Mapping[str, Any] | None = None) -> tuple[Settings, list[str]]:
    """The settings a run of `model` uses, and a note for each change the user should hear of (a capped
    window, a retrieval model this machine cannot load). `preset`: the catalog entry of the built-in model that
    runs (None for an endpoint or a GGUF outside the catalog); `recorded`: the run's config.json from an earlier
    start, when it resumes."""
    settings, notes = fit_limits(requested, preset) if preset is not None else (requested, [])
    window = getattr(model, "context_window", None)
    if window and window < settings.context_window:
        # The runtime capped the window for this model: compaction and the records use the real one.
        settings = settings.with_derived(context_window=window)
    settings, unavailable = fit_retrieval(settings)
    if not settings.prompt_date:  # the prompt names today: the day the run started, also when it resumes
        started_on = (recorded or {}).get("PROMPT_DATE") or dt.date.today().isoformat()
        settings = settings.with_derived(prompt_date=started_on)
    return settings, [*notes, *unavailable]
