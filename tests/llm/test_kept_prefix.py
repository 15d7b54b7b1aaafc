"""The prompt prefix a configuration shares, kept across processes (issue 33), for real: the packaged
Qwen2.5-Coder-0.5B, the README's question as a run's first step sends it (system prompt and the default
tools, described briefly as the packaged models' preset does), each step in a fresh process.

A fresh process with the prefix kept loads it instead of evaluating it (all but its last micro-batch, which
it evaluates again to check the state: kv_state.restore_checked), and gets the very logits a cold
process gets; one that finds a corrupt, foreign or malformed file, or the state of another text under the
prefix's key, evaluates the prefix again and keeps it anew.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from searchbox.llm.llamacpp.prefix_store import MAGIC

ROOT = Path(__file__).resolve().parents[2]
N_CTX = 4096

# One first step in a fresh process: argv = prefix store folder ("" for none), where to save the logits.
_FIRST_STEP = """
import json, sys
from pathlib import Path
import numpy as np
from searchbox.agent.run import run_prompt_head
from searchbox.llm.weights.gguf import resolve_gguf
from searchbox.llm.llamacpp.model import LlamaCppModel
from searchbox.llm.weights.packaged import PACKAGED_QWEN_05B
from searchbox.llm.llamacpp.prefix_store import PrefixStore
from searchbox.settings import Settings

store, logits_path, n_ctx = sys.argv[1], sys.argv[2], int(sys.argv[3])
system, tools = run_prompt_head(Settings.resolve(env={}, tool_descriptions="brief", prompt_date="2026-12-02"))
model = LlamaCppModel(resolve_gguf(PACKAGED_QWEN_05B), n_ctx, prefix_store=PrefixStore(Path(store), 2**30) if store else None)
messages = [system, {"role": "user", "content": "Who audited the FY2025 financial statements?"}]
response = model.complete(messages, tools, max_tokens=1, temperature=0)
llama = model._llama
np.save(logits_path, np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)))
print(json.dumps({**response.usage.as_dict(), "restored": response.timings.get("prefix_restored_tokens", 0),
                  "text": response.text, "n_ubatch": llama.context_params.n_ubatch,
                  "shared": len(llama.shared_prefix)}))
"""


def first_step(store: Path | None, logits: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _FIRST_STEP, str(store or ""), str(logits), str(N_CTX)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "logits": np.load(logits)}


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A cold process (no store), then the first process with an empty store, which keeps the prefix."""
    folder = tmp_path_factory.mktemp("kept-prefix")
    store = folder / "store"
    return {"cold": first_step(None, folder / "cold.npy"), "first": first_step(store, folder / "first.npy"),
            "store": store, "folder": folder}


def _only_file(store: Path) -> Path:
    [path] = store.glob("*.kv")
    return path


@pytest.mark.real_model
@pytest.mark.slow
def test_a_second_fresh_process_loads_the_kept_prefix_and_gets_a_cold_processs_logits(kept: dict[str, Any]) -> None:
    cold, first = kept["cold"], kept["first"]
    ubatch = first["n_ubatch"]
    # The default tools' prefix: all of it (cut on its own by every evaluation), not only its whole micro-batches.
    assert first["cacheRead"] == 0 and first["cacheWrite"] == first["shared"] > 2 * ubatch
    assert first["input"] - first["shared"] < 30  # the first step evaluates little more than its question
    assert cold["cacheWrite"] == 0 and cold["input"] == first["input"]
    second = first_step(kept["store"], kept["folder"] / "second.npy")
    last_cut = (first["shared"] - 1) // ubatch * ubatch  # the last micro-batch is evaluated again, as a check
    assert second["cacheRead"] == second["restored"] == last_cut and second["cacheWrite"] == 0
    for warm in (first, second):  # the prefix evaluated on its own, then loaded: the logits of a cold evaluation
        assert np.array_equal(warm["logits"], cold["logits"])
        assert warm["text"] == cold["text"]


def step_with_altered_file(kept: dict[str, Any], folder: Path, alter: Callable[[bytes], bytes]) -> Path:
    """A fresh process's first step with the kept file altered: evaluated again, as a cold process evaluates it,
    and kept anew. Returns the store."""
    store = folder / "store"
    shutil.copytree(kept["store"], store)
    path = _only_file(store)
    path.write_bytes(alter(path.read_bytes()))
    return step_evaluates_again(kept, store, folder)


def step_evaluates_again(kept: dict[str, Any], store: Path, folder: Path) -> Path:
    again = first_step(store, folder / "again.npy")
    assert again["cacheRead"] == 0 and again["cacheWrite"] == kept["first"]["cacheWrite"]
    assert np.array_equal(again["logits"], kept["cold"]["logits"])
    assert _only_file(store).read_bytes() == _only_file(kept["store"]).read_bytes()  # kept anew, whole
    return store


@pytest.mark.real_model
@pytest.mark.slow
def test_a_corrupt_kept_prefix_is_evaluated_again_and_kept_anew(kept: dict[str, Any], tmp_path: Path) -> None:
    def flip_a_bit(data: bytes) -> bytes:
        altered = bytearray(data)
        altered[len(altered) // 2] ^= 0x01  # one bit of the KV state
        return bytes(altered)

    step_with_altered_file(kept, tmp_path, flip_a_bit)


@pytest.mark.real_model
@pytest.mark.slow
def test_a_kept_prefix_of_another_setup_is_never_loaded(kept: dict[str, Any], tmp_path: Path) -> None:
    """A file whose bytes match its own checksum, but whose header says it was kept for another context."""
    setup = f'"n_ctx": {N_CTX},'.encode()

    def for_another_context(data: bytes) -> bytes:
        assert data.count(setup) == 1
        return data.replace(setup, f'"n_ctx": {N_CTX * 2},'.encode())

    step_with_altered_file(kept, tmp_path, for_another_context)


@pytest.mark.real_model
@pytest.mark.slow
def test_a_kept_prefix_with_a_deeply_nested_header_is_evaluated_again(kept: dict[str, Any], tmp_path: Path) -> None:
    """A header of nested JSON under the prefix's name (issue 43): no run fails on it, and it is replaced."""
    nested = b"[" * 200_000

    def nested_header(data: bytes) -> bytes:
        return MAGIC + len(nested).to_bytes(8, "little") + nested + data[-4096:]

    step_with_altered_file(kept, tmp_path, nested_header)


# Argv: a prefix store folder, n_ctx. Saves there, under the key of the prefix the first step shares, the KV state
# of another text of as many tokens: the prefix with one token of its last tool changed, evaluated as a cold one is.
_SWAP_STATE = """
import sys
from pathlib import Path
import llama_cpp
from searchbox.agent.run import run_prompt_head
from searchbox.llm.weights.gguf import resolve_gguf
from searchbox.llm.llamacpp.model import LlamaCppModel
from searchbox.llm.llamacpp.kv_state import sequence_state
from searchbox.llm.weights.packaged import PACKAGED_QWEN_05B
from searchbox.llm.llamacpp.prefix_store import PrefixKey, PrefixStore
from searchbox.settings import Settings

store = PrefixStore(Path(sys.argv[1]), 2**30)
system, tools = run_prompt_head(Settings.resolve(env={}, tool_descriptions="brief", prompt_date="2026-12-02"))
model = LlamaCppModel(resolve_gguf(PACKAGED_QWEN_05B), int(sys.argv[2]), prefix_store=store)
messages = [system, {"role": "user", "content": "Who audited the FY2025 financial statements?"}]
prefix = model._shared_prefix(messages, tools, "auto", "auto")
other = list(prefix)
other[-10] += 1
llama = model._llama
llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llama.ctx), True)
llama.n_tokens = 0
llama.eval(other)
store.save(PrefixKey(llama.kept.setup, prefix), sequence_state(llama))
print(len(prefix))
"""


@pytest.mark.real_model
@pytest.mark.slow
def test_the_state_of_another_text_under_the_prefixs_key_is_never_loaded(kept: dict[str, Any],
                                                                          tmp_path: Path) -> None:
    """A file whose header and checksum are right, holding the KV state of another text as long as the prefix
    (issue 43): the model would hold that text while the run believes it holds its prefix. Caught where the
    texts differ in the prefix's last micro-batch (kv_state.restore_checked says what is not)."""
    store = tmp_path / "store"
    shutil.copytree(kept["store"], store)
    true_file = _only_file(store).read_bytes()
    done = subprocess.run([sys.executable, "-c", _SWAP_STATE, str(store), str(N_CTX)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) == kept["first"]["shared"]
    assert _only_file(store).read_bytes() != true_file  # swapped
    step_evaluates_again(kept, store, tmp_path)
