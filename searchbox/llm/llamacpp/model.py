"""The built-in runtime: a GGUF run in-process by llama-cpp-python, behind `ChatModel`.

One instance per (GGUF, context size, KV cache type, thread count), shared by every caller (`load_llamacpp`);
generation is serialized per instance because a llama.cpp context serves one sequence at a time. Generation
blocks the calling thread: callers run it in a worker thread. The context is made for speed where the build
allows (context.py), and keeps of the KV cache across calls only what a cold evaluation would have left
(kv_reuse.py), the prefix every conversation of a configuration shares kept on disk across processes.

The chat format is the GGUF's own template when it has one; a template-less (base) model gets plain chatml and
grammar-held JSON actions (see grammars/json_actions). A forced step (tool_choice "required" or a named tool)
of a template model is held by a grammar to one call in the template's own format (see grammars/tool_grammar).
While tools are on offer, a template model's system message ends with an example call in that format (see
dialects/call_format). llama-cpp-python streams OpenAI-style chunks, assembled as an endpoint's are
(clients/assemble).

THINKING reaches the model as the variables a chat template reads: `enable_thinking` (Qwen3's templates) and
`reasoning_effort` (gpt-oss's), passed to the GGUF's own template when it reads them; a template that reads
neither gets nothing, and `thinking_effect` says so for the run's feed and records. Reasoning tokens are
counted with the model's tokenizer.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from searchbox.cancel import CancelToken
from searchbox.llm.clients.assemble import ResponseBuilder
from searchbox.llm.dialects.call_format import call_format, example_call
from searchbox.llm.dialects.jsonfix import loads_lenient
from searchbox.llm.errors import ContextOverflow, LLMError
from searchbox.llm.grammars import json_actions
from searchbox.llm.grammars.schema_grammar import json_grammar
from searchbox.llm.grammars.tool_grammar import call_grammar
from searchbox.llm.llamacpp.context import kv_cache_type, load_context
from searchbox.llm.llamacpp.kv_reuse import KeptPrefixes, Meter, PromptCaptured, kv_reuse_rule
from searchbox.llm.llamacpp.kv_state import setup_key
from searchbox.llm.llamacpp.prefix_store import PrefixStore
from searchbox.llm.llamacpp.speed import ReplayTime, Speed, StepShape, llama_replay, llama_speed
from searchbox.llm.types import ChatModel, ChatResponse, Message, StreamEvent, Tool, ToolChoice, Usage
from searchbox.llm.weights.gguf import gguf_digest

PLAIN_FORMAT = "chatml"
# Two first questions that differ from their first character: what their prompts share is the configuration's.
PROBE_QUESTIONS = ("A?", "B?")
_PREFIXES_REMEMBERED = 8
# The chat format llama-cpp-python names a GGUF's own template by: the only one that can read THINKING's variables.
GGUF_TEMPLATE = "chat_template.default"
THINKING_VARIABLES = ("enable_thinking", "reasoning_effort")

_registry: dict[tuple[str, int, str, int], LlamaCppModel] = {}
_registry_lock = threading.Lock()
T = TypeVar("T")
_live: weakref.WeakSet[LlamaCppModel] = weakref.WeakSet()


@atexit.register
def _free_at_exit() -> None:
    """Free models before interpreter shutdown: llama.cpp's own finalizer fails once its module is gone."""
    for model in list(_live):
        if model._lock.acquire(blocking=False):  # one busy in a daemon thread is left to the OS
            try:
                if model._llama is not None:
                    model._llama.close()
                    model._llama = None
            finally:
                model._lock.release()


def load_llamacpp(gguf_path: str | Path, n_ctx: int, prefix_store: PrefixStore | None = None,
                  kv_cache: str = "auto", threads: int = 0) -> LlamaCppModel:
    """The shared model for this GGUF, context size, KV cache type and thread count (0: decided per token,
    decode_threads), loaded on first use; with a prefix store, prompt prefixes are kept in it across processes."""
    key = (str(Path(gguf_path).resolve()), n_ctx, kv_cache_type(kv_cache), threads)
    with _registry_lock:
        model = _registry.get(key)
        if model is None or model.closed:
            model = _registry[key] = LlamaCppModel(gguf_path, n_ctx, n_threads=threads or None,
                                                   prefix_store=prefix_store, kv_cache=kv_cache)
        elif prefix_store is not None:
            model.keep_prefixes_in(prefix_store)
        return model


@dataclass(frozen=True)
class KeptPrefix:
    tokens: int
    how: str  # none (no prefix shared, or no store), held (already in the cache), loaded (from the store), evaluated
    seconds: float = 0.0


class LlamaCppModel(ChatModel):
    def __init__(self, gguf_path: str | Path, n_ctx: int, *, n_threads: int | None = None,
                 prefix_store: PrefixStore | None = None, prompt_lookup: int = 0, kv_cache: str = "auto",
                 n_ubatch: int | None = None, flash_attn: bool | None = None) -> None:
        self.path = Path(gguf_path)
        self.model_id = self.path.name
        self.context_window = n_ctx
        self._lock = threading.Lock()
        self._llama, self.runtime = load_context(self.path, n_ctx, n_threads, prompt_lookup, kv_cache, n_ubatch,
                                                  flash_attn)
        self._prefixes: dict[str, tuple[int, ...]] = {}  # configuration (system messages, tools) -> its shared prefix
        # A model with no template of its own has no tool-call format either: JSON actions instead.
        self.json_actions = "tokenizer.chat_template" not in self._llama.metadata
        if self.json_actions:
            self._llama.chat_format = PLAIN_FORMAT  # instead of llama-cpp-python's llama-2 guess
        self.chat_format: str = self._llama.chat_format
        self.runtime["chat_format"] = self.chat_format
        template = self._llama.metadata.get("tokenizer.chat_template", "") if self.chat_format == GGUF_TEMPLATE else ""
        self.template_reads = tuple(name for name in THINKING_VARIABLES if name in template)
        self.runtime["thinking_variables"] = list(self.template_reads)
        self._opens_think: dict[str, bool] = {}  # per THINKING level: whether the generation prompt opens <think>
        self.call_format = call_format(self._llama.metadata.get("tokenizer.chat_template", ""))
        self.example_calls = True  # bench/tool_calls.py turns it off to measure what it brings
        if prefix_store is not None:
            self.keep_prefixes_in(prefix_store)
        _live.add(self)

    @property
    def closed(self) -> bool:
        return self._llama is None

    def keep_prefixes_in(self, store: PrefixStore) -> None:
        """Keep the prompt prefixes conversations share in `store`, keyed by this model's file and context."""
        kept = getattr(self._llama, "kept", None)
        if kept is not None and kept.store == store:  # each run's connect: no wait for a run using the model
            return
        with self._lock:
            if self._llama is None:
                return
            setup = setup_key(self._llama, gguf_digest(self.path), self.runtime)
            self._llama.kept = KeptPrefixes(store, setup)
            self.runtime["kv_reuse"] = (f"{kv_reuse_rule(self._llama)}; shared prefixes kept on disk across "
                                        "processes")

    def stream(
        self,
        messages: list[Message],
        tools: list[Tool] | None,
        *,
        max_tokens: int,
        temperature: float = 0.6,
        tool_choice: ToolChoice = "auto",
        seed: int | None = None,
        thinking: str = "auto",
        cancel: CancelToken | None = None,
    ) -> Iterator[StreamEvent]:
        import jinja2
        import llama_cpp

        with self._lock:
            llama = self._llama
            if llama is None:
                raise LLMError(f"{self.model_id} was closed")
            self._use_thinking(llama, thinking)
            starts_in_reasoning = self._starts_in_reasoning(llama, thinking)
            json_mode = self.json_actions
            kwargs: dict[str, Any] = {**self._request(messages, tools, tool_choice), "max_tokens": max_tokens,
                                      "temperature": temperature}
            if seed is not None:  # else llama-cpp-python draws one from its own generator
                kwargs["seed"] = seed
            if (grammar := self._grammar(tools, tool_choice, starts_in_reasoning)) is not None:
                kwargs["grammar"] = llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)
            llama.shared_prefix = self._shared_prefix(messages, tools, tool_choice, thinking)
            builder = ResponseBuilder(tools, starts_in_reasoning=starts_in_reasoning,
                                      count_tokens=lambda text: len(llama.tokenize(text.encode("utf-8"), add_bos=False)))
            llama.meter = Meter()
            llama.cancel = cancel  # looked at between two batches of the prompt and between two tokens
            llama_cpp.llama_perf_context_reset(llama.ctx)
            started = time.monotonic()
            try:
                result = llama.create_chat_completion(stream=not json_mode, **kwargs)
                if json_mode:
                    choice = result["choices"][0]
                else:
                    for chunk in result:
                        yield from builder.add_chunk(chunk)
            except ValueError as exc:
                if "exceed context window" in str(exc):
                    raise ContextOverflow(f"{self.model_id}: {exc}") from exc
                raise LLMError(f"{self.model_id}: {exc}") from exc
            except jinja2.TemplateError as exc:
                raise LLMError(f"{self.model_id}: the chat template cannot render these messages: {exc}") from exc
            except RuntimeError as exc:
                raise LLMError(f"{self.model_id}: llama.cpp failed: {exc}") from exc
            finally:
                llama.cancel = None
            ended = time.monotonic()
            meter: Meter = llama.meter
            usage = Usage(input=meter.prompt_tokens, output=meter.sampled, cache_read=meter.reused,
                          cache_write=meter.written)
            timings = _timings(meter, llama_cpp.llama_perf_context(llama.ctx), started, ended)
            if not json_mode:
                yield from builder.finish(usage, timings)
                return
            content = choice["message"].get("content") or ""
            text, calls = json_actions.parse_action(content)
            if text:
                yield StreamEvent("text", text)
            yield from (StreamEvent("tool_call", tool_call=call) for call in calls)
            finish = "tool_calls" if calls else choice.get("finish_reason")
            unread = content if content.strip() and not (text or calls) else ""
            yield StreamEvent("done", response=ChatResponse(text, "", calls, usage, finish, timings, unread))

    def thinking_effect(self, thinking: str) -> str | None:
        if thinking == "auto" or (thinking != "off" and "reasoning_effort" in self.template_reads):
            return None
        if thinking == "off" and "enable_thinking" in self.template_reads:
            return None
        if "enable_thinking" in self.template_reads:
            return (f"THINKING={thinking} turns thinking on in {self.model_id}'s chat template (enable_thinking), which "
                    "reads no reasoning_effort: low, medium and high are the same there")
        return (f"THINKING={thinking} has no effect on {self.model_id} in the built-in runtime: its chat template reads "
                f"neither enable_thinking nor reasoning_effort")

    def close(self) -> None:
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None
        with _registry_lock:
            for key, model in list(_registry.items()):
                if model is self:
                    del _registry[key]

    def keep_prefix(self, messages: list[Message], tools: list[Tool] | None) -> KeptPrefix:
        """Have the KV cache hold the prefix every conversation that opens with these system messages and
        tools starts with, from the prefix store or evaluated now and kept there: what the app does at
        start-up, so that its first visitor's run does not pay for it."""
        with self._lock:
            llama = self._llama
            if llama is None:
                raise LLMError(f"{self.model_id} was closed")
            self._use_thinking(llama, "auto")
            prefix = self._shared_prefix(messages, tools, "auto", "auto") if llama.kept else ()
            if not prefix:
                return KeptPrefix(0, "none")
            started = time.monotonic()
            llama.meter = Meter()
            if llama.holds(prefix):
                return KeptPrefix(len(prefix), "held")
            llama.take_prefix(prefix, 0)
            # The next prompt starts a conversation; the cache holds the prefix as a cold evaluation cuts it.
            llama.previous_prompt, llama.clean, llama.clean_prefix = 0, len(prefix), len(prefix)
            how = "loaded" if llama.meter.restored else "evaluated"
            return KeptPrefix(len(prefix), how, time.monotonic() - started)

    def measure_speed(self, prompt_tokens: int = 512, decoded: int = 32) -> Speed:
        """llama.cpp's own prefill and decode speed for this model here (speed.llama_speed); empties the cache."""
        return self._raw(lambda llama: llama_speed(llama, prompt_tokens, decoded))

    def replay_time(self, steps: list[StepShape]) -> ReplayTime:
        """llama.cpp's own time for a run's new tokens at the depth they sit at (speed.llama_replay); empties
        the cache."""
        return self._raw(lambda llama: llama_replay(llama, steps))

    def _raw(self, measure: Callable[[Any], T]) -> T:
        """A measurement on the bare llama.cpp context, under the lock; the cache is empty afterwards."""
        with self._lock:
            if self._llama is None:
                raise LLMError(f"{self.model_id} was closed")
            result = measure(self._llama)
            self._llama.clean = self._llama.clean_prefix = self._llama.previous_prompt = 0
            return result

    def _request(self, messages: list[Message], tools: list[Tool] | None, tool_choice: ToolChoice) -> dict[str, Any]:
        """What decides the prompt: messages, tools, tool_choice."""
        if self.json_actions:
            return {"messages": json_actions.render_history(messages, _offered(tools, tool_choice))}
        request: dict[str, Any] = {"messages": self._prepare(messages, tools)}
        if not tools:
            return request
        # All the tools even when one is forced: the prompt (and its cache) stays put.
        return {**request, "tools": tools, "tool_choice": tool_choice if tool_choice in ("auto", "none") else "required"}

    def _template_variables(self, thinking: str) -> dict[str, Any]:
        """THINKING as the variables this model's chat template reads (none for auto)."""
        if thinking == "auto":
            return {}
        wanted = {"enable_thinking": thinking != "off", **({"reasoning_effort": thinking} if thinking != "off" else {})}
        return {name: value for name, value in wanted.items() if name in self.template_reads}

    def _use_thinking(self, llama: Any, thinking: str) -> None:
        """Have the next chat completions render the template with THINKING's variables. llama-cpp-python's
        create_chat_completion passes no template variables of its own, but the GGUF template's handler hands
        its extra keyword arguments to the template: it is called with them bound."""
        variables = self._template_variables(thinking)
        llama.chat_handler = functools.partial(llama._chat_handlers[GGUF_TEMPLATE], **variables) if variables else None

    def _starts_in_reasoning(self, llama: Any, thinking: str) -> bool:
        """Whether the generation prompt opens a <think> block at this THINKING level (Qwen3.6's does unless
        enable_thinking is false)."""
        if thinking not in self._opens_think:
            self._opens_think[thinking] = _template_opens_think(llama, self._template_variables(thinking))
        return self._opens_think[thinking]

    def _grammar(self, tools: list[Tool] | None, tool_choice: ToolChoice, in_reasoning: bool) -> str | None:
        """The grammar a reply is held to, if any."""
        if self.json_actions:
            # With no tools on offer (a wrap-up) the only action left is the answer, in the same
            # format the model has followed all along.
            offered = _offered(tools, tool_choice)
            allow_answer = tool_choice == "auto" or not offered  # "required" or a named tool: a call it must be
            # Our own grammar, not response_format: llama-cpp-python's converter cannot bound lists and strings.
            return json_grammar(json_actions.action_schema(offered, allow_answer))
        if not tools or tool_choice in ("auto", "none"):
            return None
        # Never llama-cpp-python's own forcing: it ignores "required", and a named tool gets
        # bare arguments outside the model's format. A dict tool_choice would replace this grammar.
        return call_grammar(_chosen(tools, tool_choice), self.call_format, in_reasoning=in_reasoning)

    def _shared_prefix(self, messages: list[Message], tools: list[Tool] | None,
                       tool_choice: ToolChoice, thinking: str) -> tuple[int, ...]:
        """The prompt tokens that every conversation opening with these system messages and tools starts
        with, whatever its question: what two prompts with different questions share. Remembered for the
        configurations a run alternates between (a forced step and a free one)."""
        head = list(itertools.takewhile(lambda message: message.get("role") == "system", messages))
        if not head:
            return ()
        configuration = json.dumps([head, tools, tool_choice, thinking], sort_keys=True, default=str)
        if configuration not in self._prefixes:
            prompts = [self._prompt_tokens(self._request([*head, {"role": "user", "content": question}], tools,
                                                         tool_choice)) for question in PROBE_QUESTIONS]
            shared = _common_length(*prompts) if all(prompts) else 0
            if len(self._prefixes) >= _PREFIXES_REMEMBERED:
                self._prefixes.clear()
            self._prefixes[configuration] = tuple(prompts[0][:shared])
        return self._prefixes[configuration]

    def _prompt_tokens(self, request: dict[str, Any]) -> list[int]:
        """The prompt llama-cpp-python would evaluate for this request, rendered and tokenized by its own
        chat handler but not evaluated; empty when it cannot be rendered (the real call will say why)."""
        import jinja2

        llama = self._llama
        llama.capturing = True
        try:
            llama.create_chat_completion(**request, max_tokens=1)
        except PromptCaptured as captured:
            return captured.tokens
        except (ValueError, jinja2.TemplateError):
            return []
        finally:
            llama.capturing = False
        return []

    def _prepare(self, messages: list[Message], tools: list[Tool] | None) -> list[Message]:
        """Messages as the chat template can render them, the system message with an example call."""
        example = example_call(self.call_format, tools) if tools and self.example_calls else None
        prepared = []
        for position, message in enumerate(messages):
            # Templates test `'tool_calls' in message` and read `message.content` strictly.
            message = {k: v for k, v in message.items() if v is not None}
            if message.get("tool_calls"):
                message["tool_calls"] = [_with_argument_object(part) for part in message["tool_calls"]]
            else:
                message.pop("tool_calls", None)
            message.setdefault("content", "")
            if example and position == 0 and message.get("role") == "system":
                message["content"] = f"{message['content']}\n\n{example}"
            prepared.append(message)
        return prepared


def _with_argument_object(part: dict[str, Any]) -> dict[str, Any]:
    """A history tool call with its arguments as an object, as chat templates expect: Qwen2.5's
    `arguments | tojson` would show the model a JSON string where it wrote an object."""
    function = part.get("function") or {}
    if not isinstance(function.get("arguments"), str):
        return part
    try:
        arguments = loads_lenient(function["arguments"] or "{}")
    except ValueError:
        return part
    if not isinstance(arguments, dict):
        return part
    return {**part, "function": {**function, "arguments": arguments}}


def _offered(tools: list[Tool] | None, tool_choice: ToolChoice) -> list[Tool]:
    """The tools a template-less model's JSON actions may call."""
    return _chosen(tools, tool_choice) if tools else []


def _chosen(tools: list[Tool], tool_choice: ToolChoice) -> list[Tool]:
    """The tools a tool_choice leaves on offer (all of them for "auto" and "required")."""
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        return [t for t in tools if t["function"]["name"] == name] or tools
    return tools


def _common_length(first: list[int], second: list[int]) -> int:
    return next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))


def _template_opens_think(llama: Any, variables: dict[str, Any]) -> bool:
    """Whether the chat template, given these variables, ends its generation prompt with <think> (Qwen3.6 with
    thinking on)."""
    template = llama.metadata.get("tokenizer.chat_template", "")
    if "<think>" not in template:
        return False
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    try:
        formatter = Jinja2ChatFormatter(template, eos_token="", bos_token="")
        prompt = formatter(messages=[{"role": "user", "content": "hi"}], **variables).prompt
    except Exception:  # a template this renderer cannot run: assume the model opens its own block
        return False
    return prompt.rstrip().endswith("<think>")


def _timings(meter: Meter, perf: Any, started: float, ended: float) -> dict[str, float]:
    """Wall-clock prefill/decode split at the first sampled token, and llama.cpp's own counters.

    Prefill speed counts only the prompt tokens evaluated (not those reused from the KV cache). The
    wall figures include template rendering, tokenization and, when streaming, the time the caller
    spends between tokens; llama.cpp's counters time only the model.
    """
    timings: dict[str, float] = {"wall_ms": (ended - started) * 1000}
    if meter.restored:
        timings["prefix_restored_tokens"] = meter.restored
    if meter.first_token_at is not None:
        prefill_s, decode_s = meter.first_token_at - started, ended - meter.first_token_at
        timings.update(prefill_ms=prefill_s * 1000, decode_ms=decode_s * 1000, first_token_ms=prefill_s * 1000)
        if prefill_s > 0:
            timings["prefill_tokens_per_s"] = (meter.prompt_tokens - meter.reused) / prefill_s
        if decode_s > 0 and meter.sampled > 1:
            timings["decode_tokens_per_s"] = (meter.sampled - 1) / decode_s
    timings.update(
        llama_prefill_ms=perf.t_p_eval_ms,
        llama_prefill_tokens=perf.n_p_eval,
        llama_decode_ms=perf.t_eval_ms,
        llama_decode_tokens=perf.n_eval,
    )
    if perf.t_p_eval_ms > 0:
        timings["llama_prefill_tokens_per_s"] = perf.n_p_eval / perf.t_p_eval_ms * 1000
    if perf.t_eval_ms > 0:
        timings["llama_decode_tokens_per_s"] = perf.n_eval / perf.t_eval_ms * 1000
    if meter.decoded:
        timings["decode_threads"] = meter.decode_thread_sum / meter.decoded
    return timings
