"""TOOL_CALL_PARSING: a lenient run's model reads the calls a reply writes outside its template's tags;
a strict run's model does not. Against the scripted endpoint and a real run."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel, Said
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.llm.dialects.call_parsing import LenientCalls, with_call_parsing
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.records.files import read_json
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings

TOOLS = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}}}}}]
WRITTEN = 'I will list the files.\n```json\n{"function": "ls", "arguments": {"path": "dataroom"}}\n```'
MESSAGES = [{"role": "user", "content": "What is in the dataroom?"}]


def test_a_lenient_model_turns_a_written_call_into_a_call() -> None:
    model = with_call_parsing(FakeChatModel([Said(WRITTEN)]), "lenient")
    events = list(model.stream(MESSAGES, TOOLS, max_tokens=100))
    response = events[-1].response
    assert response is not None and [(c.name, c.arguments) for c in response.tool_calls] == [("ls", {"path": "dataroom"})]
    assert response.text == "I will list the files." and response.finish_reason == "tool_calls"
    assert [e.tool_call for e in events if e.kind == "tool_call"] == response.tool_calls


@pytest.mark.parametrize("tools, tool_choice", [(TOOLS, "none"), (None, "auto")])
def test_with_no_tool_on_offer_a_written_call_stays_the_answer(tools: list | None, tool_choice: str) -> None:
    model = with_call_parsing(FakeChatModel([Said(WRITTEN)]), "lenient")
    response = model.complete(MESSAGES, tools, max_tokens=100, tool_choice=tool_choice)
    assert response.tool_calls == [] and response.text == WRITTEN


def test_a_strict_model_is_the_backend_itself() -> None:
    fake = FakeChatModel([])
    assert with_call_parsing(fake, "strict") is fake
    wrapped = with_call_parsing(fake, "lenient")
    assert isinstance(wrapped, LenientCalls) and wrapped.model_id == fake.model_id


@pytest.mark.parametrize("mode, ran", [("lenient", {"ls": 1}), ("strict", {})])
def test_a_run_calls_what_the_model_wrote_only_when_lenient(tmp_path: Path, mode: str, ran: dict) -> None:
    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    job_dir = tmp_path / "job"
    script = [Reply(text='ls(path="dataroom")'), Reply(text="The dataroom holds five files.")]
    with ScriptedEndpoint(script) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                                    searchbox_cache_dir=str(tmp_path / "cache"), tool_call_parsing=mode)
        create_job(job_dir, "What is in the dataroom?", source, settings)
        run_job(job_dir, settings, OpenAIClient(endpoint.url, "scripted", max_attempts=1))
    meta = read_json(job_dir / "run_meta.json")
    assert meta["tool_counts"] == ran and meta["config"]["TOOL_CALL_PARSING"] == mode
    answer = JobFolder(job_dir).answer.read_text(encoding="utf-8")
    assert answer.strip() == ("The dataroom holds five files." if mode == "lenient" else 'ls(path="dataroom")')
