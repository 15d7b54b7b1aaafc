"""A prompt prefix's KV state taken out of a llama.cpp context and put back, for the prefix store.

Only the sequence's KV cells travel (llama.cpp's per-sequence state), not the logits or the sampler:
a prompt restored from a prefix always evaluates at least one token of its own after it.

A state holds no tokens, so one of another text of as many tokens, saved under a prefix's key, would load as
that prefix. restore_checked evaluates the prefix's last micro-batch again over the cells before it and
requires the very bytes the state holds for it: that micro-batch's cells depend on its own tokens (the first
layer's on nothing else), so a state whose text differs there fails; it costs evaluating that micro-batch
(1 to n_ubatch tokens). What it cannot catch: a text that differs only before the last cut (those cells are
taken as they are: checking them costs what evaluating them does), or a state crafted to pass. Only this
user's processes may write the store's folder (0700); bash at a confining level cannot reach it, and at `off`
it could as well rewrite the app's code.
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


def restore_checked(llama: Any, tokens: Sequence[int], state: bytes, last_cut: int) -> str:
    """Restore `state` as the cells of `tokens`, then evaluate `tokens[last_cut:]` (the last micro-batch a cold
    evaluation cuts) again over the cells before it; "" when that gives the state's own bytes, else why not
    (and an empty cache)."""
    import llama_cpp

    if not restore_sequence(llama, tokens, state):
        return "llama.cpp refused it, or it holds other positions"
    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llama.ctx), SEQUENCE, last_cut, -1)
    llama.n_tokens = last_cut
    llama.eval(list(tokens[last_cut:]))
    if sequence_state(llama) == state:
        return ""
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llama.ctx), True)
    llama.n_tokens = 0
    return "it is not the state of these tokens (their last micro-batch evaluated again differs)"


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
