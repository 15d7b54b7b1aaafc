"""Environment names that look like knobs but are not: named once at start-up (the app, the CLI, sweeps), each with
the knob meant where one is, so that a misspelt or an old name is not silently ignored.

A name looks like a knob when it starts as knobs do (SEARCHBOX_, LLAMA_, LLM_, EMBED_, RERANK_, PI_) or is one the
seed (hanxiao/searchbox) read, as its deployers' .env files still set them. The knob meant is the seed's
counterpart from a table, else the closest knob name (rapidfuzz), else none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from searchbox.settings.resolved import knob_fields

KNOB_PREFIXES = ("SEARCHBOX_", "LLAMA_", "LLM_", "EMBED_", "RERANK_", "PI_")

# Names with a knob's prefix that are not knobs and are still read: by searchbox (app.py's --share, Pi's
# environment, which searchbox sets itself, the tests' and benches' own), or by llama.cpp and llama-cpp-python,
# which run inside this process and read their own.
READ_ELSEWHERE = frozenset({"SEARCHBOX_SHARE", "SEARCHBOX_TOOL_SOCKET", "SEARCHBOX_TOOL_TOKEN", "SEARCHBOX_LLM_KEY",
                            "SEARCHBOX_SCREENSHOTS", "SEARCHBOX_RELIABILITY_TALLIES", "LLAMA_CACHE"})
READ_ELSEWHERE_PREFIXES = ("LLAMA_ARG_", "LLAMA_CPP_", "LLAMA_LOG_")

_NO_WEB = "searchbox's runs have no web tools (a run is airgapped)"
_NO_ANSWER_TOOL = "searchbox has no answer tool; search_dataroom's k is the model's choice"

# The seed's names (its .env.example, server/ and DEPLOYMENT.md): the knob that does the same, or why there is none.
SEED_NAMES: dict[str, tuple[str, str]] = {
    "CTX_SIZE": ("CONTEXT_WINDOW", ""),
    "JOBS_DIR": ("SEARCHBOX_JOBS_DIR", ""),
    "MAX_SECONDS": ("CEILING_SECONDS", ""),
    "TURN_TIMEOUT": ("TURN_TIMEOUT_SECONDS", ""),
    "COMPACTION_RESERVE_TOKENS": ("PI_COMPACTION_RESERVE_TOKENS", ""),
    "COMPACTION_KEEP_RECENT_TOKENS": ("PI_COMPACTION_KEEP_RECENT_TOKENS", ""),
    "JINA_API_BASE": ("JINA_API_URL", ""),
    "API_EMBED_MODEL": ("EMBED_MODEL", "one name for both backends: the hub id, which the API is sent without its owner"),
    "API_RERANK_MODEL": ("RERANK_MODEL", "one name for both backends: the hub id, which the API is sent without its owner"),
    "SEARCH_MAX_EMBED_CHUNKS": ("DENSE_PREFILTER", "BM25 candidates embedded per query"),
    "PI_OPENAI_COMPLETIONS_NONSTREAM": ("LLM_STREAM", "LLM_STREAM=off sends plain requests, Pi's through a relay"),
    "PREEMPT_FOREGROUND": ("SEARCHBOX_FAIR_SHARE_SECONDS", "0: a new run preempts another visitor's at once"),
    "SEARCHBOX_TZ": ("PROMPT_DATE", "the day the system prompt names, as a date"),
    "PORT": ("", "the app's port is `python app.py --port N` (or GRADIO_SERVER_PORT)"),
    "PI_BIN": ("", "searchbox runs the Pi pinned in pi/ (npm ci --prefix pi) with the Node.js of its own package"),
    "THINKING_LEVEL": ("THINKING", "off, low, medium or high; Pi's minimal, xhigh and max have no counterpart"),
    "MODEL_REASONING": ("THINKING", "auto sends nothing; off or a level sends the server's thinking switch"),
    "MODEL_API": ("", "searchbox talks Chat Completions to every endpoint"),
    "PI_OPENAI_RESPONSES_NONSTREAM": ("", "searchbox talks Chat Completions to every endpoint"),
    "AUTO_BACKFILL": ("", "paused runs are always picked up when nothing waits; a user's pause holds"),
    "DATAROOM_BOOT_TIMEOUT": ("", "searchbox has no retrieval sidecar to wait for"),
    "EMBED_TASK": ("", "searchbox picks the embedder's query and document prompts itself"),
    "ANSWER_MAX_EMBED_CHUNKS": ("", _NO_ANSWER_TOOL),
    "ANSWER_FETCH_K_MAX": ("", _NO_ANSWER_TOOL),
    "LINKUP_API_KEY": ("", _NO_WEB),
    "LINKUP_SEARCH_URL": ("", _NO_WEB),
    "LINKUP_FETCH_URL": ("", _NO_WEB),
}

# rapidfuzz's ratio (0-100) of two names, past their shared prefix, from which one is taken for the other: a
# letter or a plural off (SEARCHBOX_JOB_DIR), never another word (SEARCHBOX_FOO is not SEARCHBOX_TOOLS).
_CLOSE = 80


@dataclass(frozen=True)
class UnknownName:
    """A name in the environment that looks like a knob but is not one."""

    name: str
    meant: str  # the knob meant, or "" when none is close
    why: str  # the seed's name: what searchbox does instead; "" otherwise

    def message(self) -> str:
        if self.name in SEED_NAMES:
            said = f"{self.name} is not a knob of searchbox (hanxiao/searchbox read it)"
            if self.meant:
                return said + f": set {self.meant} instead" + (f" ({self.why})" if self.why else "")
            return f"{said}; {self.why}"
        if self.meant:
            return f"{self.name} is not a knob of searchbox: did you mean {self.meant}? (nothing reads {self.name})"
        return f"{self.name} is not a knob of searchbox and nothing reads it (python -m searchbox knobs lists them)"


def unknown_names(env: Mapping[str, str]) -> list[UnknownName]:
    """The names in `env` that look like knobs and are not, in order of name."""
    knobs = {f.name.upper() for f in knob_fields()}
    found = []
    for name in sorted(env):
        if name in knobs or name in READ_ELSEWHERE or name.startswith(READ_ELSEWHERE_PREFIXES):
            continue
        if name in SEED_NAMES:
            meant, why = SEED_NAMES[name]
            found.append(UnknownName(name, meant, why))
        elif name.startswith(KNOB_PREFIXES):
            found.append(UnknownName(name, closest_knob(name, knobs), ""))
    return found


def closest_knob(name: str, knobs: Iterable[str]) -> str:
    """The knob `name` most likely means (a misspelling, a missing unit, another prefix), or ""."""
    best = process.extractOne(name, list(knobs), scorer=_likeness, score_cutoff=_CLOSE)
    return best[0] if best else ""


def _likeness(name: str, knob: str, **_: object) -> float:
    """How alike two names are, past a prefix both have; a knob that is the name with a unit added is alike."""
    for prefix in KNOB_PREFIXES:
        if name.startswith(prefix) and knob.startswith(prefix):
            name, knob = name[len(prefix):], knob[len(prefix):]
            break
    if knob.startswith(name + "_"):  # LLM_TIMEOUT for LLM_TIMEOUT_SECONDS
        return 90.0
    return fuzz.ratio(name, knob)

