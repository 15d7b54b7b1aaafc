"""A full agent run through LLAMA_URL against a real OpenAI-compatible server: llama-cpp-python's own
(`python -m llama_cpp.server`) serving the packaged Qwen2.5-Coder-0.5B-Instruct on 127.0.0.1.

The server runs with the GGUF's own chat template (no --chat_format). With llama-cpp-python 0.3.x
that is the only format under which a streamed agent run works: Qwen's template puts the tools in
the prompt and the model answers with `<tool_call>` markup in the streamed text, which the client
parses. `chatml-function-calling` cannot stream a call the model picks under tool_choice auto (the
server drops the connection: "Automatic streaming tool choice is not supported") and fails on
tool_choice required. This server also sends no token usage in a stream, so the run's token counts
are the client's estimate. The scripted endpoint stays for faults a real server cannot be made to show.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.llama_server import ALIAS, llama_server as serving, missing_server_modules
from searchbox.records.events import Event
from searchbox.agent.run import run_job
from searchbox.assets import BUILTIN_DATAROOM
from searchbox.jobs.job import create_job
from searchbox.llm.choice.connect import connect
from searchbox.records.files import read_json, read_jsonl
from searchbox.settings import Settings

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

QUESTION = "Read dataroom/03_legal/duluth_lease_abstract.txt and tell me when the lease of the Duluth headquarters expires."


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's base URL (as LLAMA_URL takes it), serving the packaged 0.5B model."""
    missing = missing_server_modules()
    if missing:
        pytest.skip(f"llama-cpp-python's server extra is not installed (no {', '.join(missing)}): "
                    "pip install -r requirements-dev.txt")
    with serving(tmp_path_factory.mktemp("llama-server")) as url:
        yield url


def test_a_full_run_through_llama_url_against_llama_cpp_server(llama_server: str, tmp_path: Path) -> None:
    # The prompt names its day, so seeded sampling would change daily: one day for every run of the test.
    settings = Settings.resolve(env={}, prompt_date="2026-12-01", llama_url=llama_server, model_id=ALIAS,
                                retrieval_preset="packaged",
                                turn_budget=1, max_steps_per_turn=2, max_output_tokens=256, llm_attempts=1,
                                searchbox_cache_dir=str(tmp_path / "cache"))
    job = tmp_path / "job"
    create_job(job, QUESTION, BUILTIN_DATAROOM, settings)
    deltas: dict[int, int] = {}

    def count_deltas(event: Event) -> None:
        if event.type == "delta":
            deltas[event.step] = deltas.get(event.step, 0) + 1

    model = connect(settings)
    try:
        reason = run_job(job, settings, model, [count_deltas])
    finally:
        model.close()

    meta = read_json(job / "run_meta.json", {})
    assert reason == meta["stop_reason"] == "first_turn_done" and meta["done"], meta
    assert meta["model_id"] == ALIAS and meta["backends"]["llm"] == "openai"
    # Streamed: some response arrived in many pieces while it was generated.
    assert max(deltas.values(), default=0) >= 2, deltas
    # The calls the server returned were run as tools, and the model saw their results.
    session = [row["message"] for row in read_jsonl(job / "session.jsonl") if row.get("type") == "message"]
    called = [part["function"]["name"] for m in session if m["role"] == "assistant" for part in m.get("tool_calls") or []]
    ran = [e for e in read_jsonl(job / "events.jsonl") if e["type"] == "tool_end"]
    assert called and meta["tool_calls"] == len(ran) == len(called), (called, ran)
    assert [e["name"] for e in ran] == called and sum(m["role"] == "tool" for m in session) == len(called)
    assert any(not e["is_error"] for e in ran), ran
    # Token usage was recorded for every response (estimated: this server reports none in a stream).
    assert meta["tokens"]["input"] > 0 and meta["tokens"]["output"] > 0
    usages = [row["usage"] for row in read_jsonl(job / "session.jsonl") if row.get("usage")]
    assert usages and all(u["input"] > 0 for u in usages)
    answer = job / "work" / "ANSWER.md"
    assert answer.exists() and answer.read_text(encoding="utf-8").strip()
    assert json.loads((job / "turns.jsonl").read_text().splitlines()[-1])["turn"] == 1
