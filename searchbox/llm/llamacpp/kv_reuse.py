"""What of the KV cache a llama.cpp call keeps, and the Llama that keeps only that.

A prompt that opens a conversation is evaluated in the same pieces every time: the prefix its configuration
shares with every other conversation (system prompt and tools) on its own, then the rest, each cut into
micro-batches from its start (cold_cuts). Across conversations the KV cache is kept only up to such a cut
(cache_to_keep), so a seeded run's logits never depend on what ran before it, and a new conversation
evaluates only its own question; with a prefix store, the shared prefix is kept on disk for the next process
(prefix_store, kv_state). `metered_llama_class` is llama-cpp-python's Llama with that rule, counting the
tokens a call evaluated, reused and sampled (Meter), decoding with the decode threads' count, and able to
capture a prompt without evaluating it (PromptCaptured).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from searchbox.cancel import CancelToken
from searchbox.llm.llamacpp.decode_threads import DecodeThreads
from searchbox.llm.llamacpp.kv_state import restore_checked, sequence_state
from searchbox.llm.llamacpp.prefix_store import PrefixKey, PrefixStore


def cold_cuts(length: int, prefix: int, ubatch: int) -> list[int]:
    """Where a cold evaluation cuts a prompt into micro-batches, up to `length`: from the start, and again
    from the end of the prefix its configuration shares (`prefix` tokens, 0 for none), which is evaluated on
    its own (llama-cpp-python cuts what it evaluates into micro-batches from where it starts)."""
    return [*range(0, prefix, ubatch), *range(prefix, length + 1, ubatch)]


def cache_to_keep(common: int, clean: int, previous_prompt: int, prompt: int, ubatch: int, prefix: int = 0,
                  clean_prefix: int = 0) -> tuple[int, int, int]:
    """(prompt tokens to keep from the KV cache, and the cache's `clean` positions and their `clean_prefix`
    after this call: the cache's first `clean` tokens are as a cold evaluation of a prompt sharing
    `clean_prefix` tokens with its configuration's other conversations leaves them).

    llama.cpp's logits depend, in their last bits, on how a prompt was cut into micro-batches, so
    keeping the longest prefix a prompt shares with the cache (llama-cpp-python's rule) would make a
    seeded run depend on the run before it: a cold model, a resumed sweep, another question.
    - The next step of the same conversation (this prompt extends the previous one) keeps the whole
      common prefix: how that was evaluated follows from this conversation alone.
    - Any other prompt keeps the cache up to a cut its own cold evaluation makes (cold_cuts, with the
      `prefix` it shares) where the cache was cut the same way up to there, never the whole prompt, so
      the rest is evaluated in the pieces a cold evaluation uses."""
    if 0 < previous_prompt <= common < prompt:
        return common, clean, clean_prefix
    limit, keep = min(common, clean, prompt - 1), 0
    for cut, cached in zip(cold_cuts(prompt, prefix, ubatch), cold_cuts(clean, clean_prefix, ubatch)):
        if cut != cached or cut > limit:
            break
        keep = cut
    return keep, prompt, prefix


def kv_reuse_rule(llama: Any) -> str:
    return (f"across conversations, up to where a cold evaluation cuts: the shared prefix on its own, then "
            f"{llama.context_params.n_ubatch}-token micro-batches")


class PromptCaptured(Exception):
    """What a capturing Llama's generate() raises instead of evaluating: the prompt's tokens."""

    def __init__(self, tokens: list[int]) -> None:
        super().__init__("prompt captured")
        self.tokens = tokens


@dataclass(frozen=True)
class KeptPrefixes:
    """Where a model keeps the prefixes conversations share, across processes."""

    store: PrefixStore
    setup: dict[str, Any]  # what a kept state depends on besides its tokens (kv_state.setup_key)


@dataclass
class Meter:
    """What llama-cpp-python's streaming API does not report: token counts and the first token's time."""

    prompt_tokens: int = 0
    reused: int = 0  # prompt tokens whose KV cache was kept from the previous call or loaded from the prefix store
    restored: int = 0  # of those, loaded from the prefix store
    written: int = 0  # prompt tokens whose KV state was saved to the prefix store
    sampled: int = 0
    first_token_at: float | None = None
    decoded: int = 0  # tokens evaluated one at a time, under the decode thread count
    decode_thread_sum: int = 0  # that count, summed over them


@functools.cache
def metered_llama_class() -> type:
    """A Llama whose generate() keeps of the KV cache what cache_to_keep allows and counts
    tokens into `self.meter` (built lazily: llama_cpp is heavy)."""
    import llama_cpp
    import numpy as np
    from llama_cpp import Llama

    class MeteredLlama(Llama):  # type: ignore[misc]
        meter = Meter()
        clean = 0  # cache positions in line with a cold evaluation (cache_to_keep)
        clean_prefix = 0  # the shared prefix that evaluation cut at
        previous_prompt = 0  # tokens of the last prompt evaluated
        kept: KeptPrefixes | None = None  # where shared prefixes are kept across processes
        shared_prefix: tuple[int, ...] = ()  # set for each call: the tokens its configuration's prompts share
        capturing = False  # a call only to learn its prompt: generate() raises PromptCaptured with it
        decode_threads: DecodeThreads | None = None  # None: the count the context was made with, always
        cancel: CancelToken | None = None  # set for each call: a cut ends it before the next batch or token

        def set_seed(self, seed: int) -> None:
            if not self.capturing:  # learning a prompt must not advance the unseeded generator
                super().set_seed(seed)

        def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Iterator[int]:
            tokens = list(tokens)
            if self.capturing:
                raise PromptCaptured(tokens)
            self.meter.prompt_tokens += len(tokens)
            prefix = self.shared_prefix
            if not (len(prefix) < len(tokens) and tuple(tokens[: len(prefix)]) == prefix):
                prefix = ()
            keep, self.clean, self.clean_prefix = cache_to_keep(
                self._common(tokens), self.clean, self.previous_prompt, len(tokens), self.context_params.n_ubatch,
                len(prefix), self.clean_prefix)
            self.previous_prompt = len(tokens)
            reused = keep
            if keep < len(prefix):  # the shared prefix on its own, as a cold evaluation takes it
                reused, keep = self.take_prefix(prefix, keep), len(prefix)
            # llama-cpp-python keeps the longest prefix it finds in the first n_tokens: this many.
            self.n_tokens = keep
            self.meter.reused += reused
            inner = super().generate(tokens, *args, **kwargs)
            sent = None
            while True:
                try:
                    token = inner.send(sent)
                except StopIteration:
                    return
                self.meter.sampled += 1
                if self.meter.first_token_at is None:
                    self.meter.first_token_at = time.monotonic()
                sent = yield token

        def eval(self, tokens: Any) -> None:
            piece = self.context_params.n_ubatch if self.n_batch % self.context_params.n_ubatch == 0 else self.n_batch
            if self.cancel is not None and len(tokens) > piece:
                # A long prompt in the micro-batches llama.cpp cuts it into anyway (the same cache, the same
                # logits), so that a stop waits for one of them, not the whole prompt; each leaves the cache
                # whole up to n_tokens.
                for start in range(0, len(tokens), piece):
                    self.eval(tokens[start:start + piece])
                return
            if self.cancel is not None:
                self.cancel.check()
            if len(tokens) == 1:  # one token: evaluated by llama.cpp's decode threads
                threads = self.decode_threads.choose() if self.decode_threads else self.context_params.n_threads
                if threads != self.context_params.n_threads:
                    self.context_params.n_threads = threads
                    llama_cpp.llama_set_n_threads(self.ctx, threads, self.context_params.n_threads_batch)
                self.meter.decode_thread_sum += threads
                self.meter.decoded += 1
            super().eval(tokens)

        def _common(self, tokens: list[int]) -> int:
            """How many of these tokens the KV cache holds, from the first."""
            previous = self.input_ids[: self.n_tokens]
            n = min(len(previous), len(tokens))
            same = previous[:n] == np.asarray(tokens[:n], dtype=previous.dtype)
            return n if same.all() else int(np.argmin(same))

        def holds(self, prefix: tuple[int, ...]) -> bool:
            """Whether the cache holds the prefix as a cold evaluation would leave it."""
            size, ubatch = len(prefix), self.context_params.n_ubatch
            return cache_to_keep(self._common(list(prefix)), self.clean, 0, size + 1, ubatch, size,
                                 self.clean_prefix)[0] >= size

        def take_prefix(self, prefix: tuple[int, ...], keep: int) -> int:
            """Make the KV cache hold exactly `prefix`, of which it holds the first `keep` tokens (a cut of
            cold_cuts): loaded from the store, if there is one, and checked by evaluating its last micro-batch
            again (a state that fails is removed), else its rest evaluated now, from there as a cold evaluation
            cuts it, and saved there. Returns how many of its tokens were not evaluated now."""
            key = PrefixKey(self.kept.setup, prefix) if self.kept else None
            state = self.kept.store.load(key) if self.kept and key else None
            if self.kept and key and state is not None:
                last_cut = cold_cuts(len(prefix) - 1, 0, self.context_params.n_ubatch)[-1]
                if not (refused := restore_checked(self, prefix, state, last_cut)):
                    self.meter.restored += last_cut
                    return last_cut
                self.kept.store.discard(key, refused)
                keep = 0  # the cache is empty now
            self.n_tokens = keep
            self.eval(list(prefix[keep:]))
            if self.kept and key:
                self.kept.store.save(key, sequence_state(self))
                self.meter.written += len(prefix)
            return keep

    return MeteredLlama
