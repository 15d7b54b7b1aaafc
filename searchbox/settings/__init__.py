"""Every knob of searchbox (design §2.1), in sections by concern, one module each, each knob's meaning beside it:

    llm.py        the model: LLAMA_URL or the built-in runtime's GGUF, its context and output cap
    retrieval.py  the embedder and reranker, chunking, how search_dataroom ranks
    loop.py       turns, budget and time limits, the harness and Pi's compaction, the assists, the prompt's day
    tools.py      the tools a run offers, how much of a result the model sees, the bash sandbox
    answers.py    quotes in citations, the premise check, the citation judge
    storage.py    the shared disk cache and the app's jobs folder
    app.py        the operator or a public app's visitors: login, queue, model slots, pool, choices
    uploads.py    the app's uploads, their quotas and lifetimes, runs' retention, the explorer's disk

`Settings` (resolved.py) is all of them in one frozen value, resolved default < retrieval preset <
environment < override; bundles.py holds the named bundles (RETRIEVAL_PRESETS, EFFORT_PRESETS), knob.py what
a knob is, docs.py docs/knobs.md and .env.example, environ.py the names that look like knobs and are not, urls.py
endpoint URLs as a run may record them. What a run really uses is
fitted from its settings once, as it starts, by agent/run_settings.py (the bottom layer cannot know the model).
"""

from searchbox.settings.knob import SettingsError
from searchbox.settings.resolved import Settings

__all__ = ["Settings", "SettingsError"]
