"""A llama.cpp context made for speed where the build allows, with the fallbacks it took.

Every layer on the GPU when llama.cpp was built with one, and the KV cache type LLM_KV_CACHE names (auto: q8_0,
half the memory, on a GPU; f16 on a CPU, where llama.cpp prefills a q8_0 cache more slowly); each falls back if
the context cannot be created with it. Flash attention on a GPU; on a CPU only where a q8_0 cache needs it: there
it decodes more slowly, and its one-token pass splits the KV cache among the threads, so the logits depend on the
thread count (docs/findings/2026-12-07-flash-attention-on-a-cpu.md). On a CPU, unless LLM_THREADS fixes a count,
tokens are decoded with the cores other work leaves idle (decode_threads), unless flash attention is on (a seed
must write the same tokens under any load), and prompts evaluated with every CPU this process may use. What was
made is said in the runtime record the run keeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from searchbox.llm.errors import LLMError
from searchbox.llm.llamacpp.cpu_load import cores, usable_cpus
from searchbox.llm.llamacpp.decode_threads import DecodeThreads
from searchbox.llm.llamacpp.kv_reuse import kv_reuse_rule, metered_llama_class


def load_context(path: Path, n_ctx: int, n_threads: int | None, prompt_lookup: int = 0,
               kv_cache: str = "auto", n_ubatch: int | None = None,
               flash_attn: bool | None = None) -> tuple[Any, dict[str, Any]]:
    """Load with the KV cache type asked for (auto: q8_0 with a GPU, f16 on a CPU) and flash attention where the
    module's docstring says, then with less as the build allows. `prompt_lookup` > 0 drafts that many tokens from the prompt's own n-grams
    (llama-cpp-python's prompt-lookup decoding; it keeps every position's logits): only bench/prompt_lookup.py
    sets it, to measure it. `n_ubatch` (None: llama.cpp's 512) only for bench/kv_cache.py: on 2 cores 128 prefilled
    0.89 x as fast at a depth of 1,000 as 512. `flash_attn` (None: on with a GPU, off on a CPU) only for
    bench/kv_cache.py."""
    import llama_cpp

    if not path.is_file():
        raise LLMError(f"no GGUF file at {path}")
    gpu = bool(llama_cpp.llama_supports_gpu_offload())
    # No count given, on a CPU: decode with the cores other work leaves idle (decode_threads), prompts with
    # every CPU this process may use (they batch, so they scale). On a GPU llama-cpp-python's defaults.
    governor = None
    if n_threads is None and not gpu:
        cpus = usable_cpus()
        governor = DecodeThreads(cpus, cores(cpus))
        if not governor.measured:
            governor = None
    base = {
        "model_path": str(path),
        "n_ctx": n_ctx,
        "n_batch": min(2048, n_ctx),
        "n_gpu_layers": -1 if gpu else 0,
        "n_threads": governor.most if governor else n_threads,
        "n_threads_batch": governor.cpus if governor else n_threads,
        "verbose": False,
        **({"n_ubatch": n_ubatch} if n_ubatch else {}),
    }
    if prompt_lookup:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        base["draft_model"] = LlamaPromptLookupDecoding(num_pred_tokens=prompt_lookup)
        base["logits_all"] = True  # llama-cpp-python sizes its logits array by this flag, not by the draft model
    q8 = llama_cpp.GGML_TYPE_Q8_0
    q8_attempt = ({"flash_attn": True, "type_k": q8, "type_v": q8}, "q8_0")  # a quantized V cache needs flash attention
    wanted = kv_cache_type(kv_cache)
    flash = gpu if flash_attn is None else flash_attn
    attempts = [
        *([q8_attempt] if wanted == "q8_0" else []),
        ({"flash_attn": flash}, "f16"),
        ({"flash_attn": not flash}, "f16"),
    ]
    errors = []
    for extra, cache_type in attempts:
        try:
            llama = metered_llama_class()(**base, **extra)
        except ValueError as exc:  # llama-cpp-python's "Failed to create llama_context"
            if "load model" in str(exc):
                raise LLMError(f"llama.cpp could not load {path.name}: {exc}") from exc
            errors.append(f"{extra}: {exc}")
            continue
        fixed_for_flash = bool(governor and extra["flash_attn"])  # its decode depends on the count: keep a seed's tokens
        if fixed_for_flash:
            governor = None
        llama.decode_threads = governor
        runtime = {
            "gpu_offload": gpu,
            "flash_attn": extra["flash_attn"],
            "kv_cache": cache_type,
            "n_threads": llama.context_params.n_threads,
            "n_threads_batch": llama.context_params.n_threads_batch,
            "decode_threads": (f"the cores other work leaves idle, 1 to {governor.most}, decided each second"
                               if governor else "fixed, for flash attention" if fixed_for_flash else "fixed"),
            "fallbacks": errors,
            "kv_reuse": kv_reuse_rule(llama),
            "prompt_lookup": prompt_lookup,
            # The same seed writes other tokens on a build with other vector kernels (their sums round
            # differently): 418 against 274 output tokens for one question on an AVX2 and an AVX-512 build.
            "build": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
        }
        return llama, runtime
    raise LLMError(f"llama.cpp could not create a context for {path.name} (n_ctx={n_ctx}): {'; '.join(errors)}")


def kv_cache_type(kv_cache: str) -> str:
    """LLM_KV_CACHE's type: auto is q8_0 (half the memory) where llama.cpp offloads to a GPU, else f16."""
    import llama_cpp

    if kv_cache != "auto":
        return kv_cache
    return "q8_0" if llama_cpp.llama_supports_gpu_offload() else "f16"
