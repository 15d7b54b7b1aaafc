"""A prompt prefix's KV state taken out of a llama.cpp context and put back, for the prefix store.

Only the sequence's KV cells travel (llama.cpp's per-sequence state), not the logits or the sampler:
a prompt restored from a prefix always evaluates at least one token of its own after it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

SEQUENCE = 0  # llama-cpp-python runs one sequence per context


def setup_key(llama: Any, gguf_sha256: str, runtime: dict[str, Any]) -> dict[str, Any]:
    """What a prefix's KV state depends on besides its tokens: the weights, how the context was made and cut
    into micro-batches, and the build that computes it. Thread counts are left out: they share the work of a
    sum out, not its order."""
    import llama_cpp

    params = llama.context_params
    return {
        "gguf_sha256": gguf_sha256,
        "n_ctx": llama.n_ctx(),
        "n_batch": params.n_batch,
        "n_ubatch": params.n_ubatch,
        "kv_cache": runtime["kv_cache"],
        "flash_attn": runtime["flash_attn"],
        "gpu_offload": runtime["gpu_offload"],
        "llama_cpp": llama_cpp.__version__,
        "build": runtime["build"],  # the run record's: llama.cpp's system info, as backends.llm_runtime names it
    }


def sequence_state(llama: Any) -> bytes:
    import llama_cpp

    size = llama_cpp.llama_state_seq_get_size(llama.ctx, SEQUENCE)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(llama.ctx, buffer, size, SEQUENCE)
    return ctypes.string_at(buffer, written)


def restore_sequence(llama: Any, tokens: Sequence[int], state: bytes) -> bool:
    """Replace the context's KV cache with `state`, the cells of exactly `tokens`; False (and an empty
    cache) when llama.cpp refuses it or it holds other positions."""
    import llama_cpp

    memory = llama_cpp.llama_get_memory(llama.ctx)
    llama_cpp.llama_memory_clear(memory, True)
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    read = llama_cpp.llama_state_seq_set_data(llama.ctx, buffer, len(state), SEQUENCE)
    held = (llama_cpp.llama_memory_seq_pos_min(memory, SEQUENCE), llama_cpp.llama_memory_seq_pos_max(memory, SEQUENCE))
    if read != len(state) or held != (0, len(tokens) - 1):
        llama_cpp.llama_memory_clear(memory, True)
        llama.n_tokens = 0
        return False
    llama.input_ids[: len(tokens)] = tokens
    llama.n_tokens = len(tokens)
    return True
