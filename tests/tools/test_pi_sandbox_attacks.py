"""Under HARNESS=pi the sandbox attacks the native bash is held to get nowhere either (issue 23): each
command is what a model tells Pi's own bash tool to run, in a real Pi run, and so goes through the
extension and the tool socket to searchbox's confined bash."""

from __future__ import annotations

import pytest

from testkit.sandbox_attacks import PI_ATTACKS, Scene, run_pi_suite
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.pi.install import pi_problem
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.records.files import read_jsonl
from searchbox.settings import Settings
from searchbox.tools.sandbox import choose
from searchbox.tools.tool import ToolResult

pytestmark = [pytest.mark.slow, pytest.mark.skipif(pi_problem() is not None, reason=str(pi_problem()))]


def _through_pi(scene: Scene, command: str) -> ToolResult:
    """One Pi run in the scene's job folder whose model asks Pi's bash tool for `command`."""
    room = scene.base / "room"
    room.mkdir()
    (room / "a.md").write_text("the original document")
    script = [Reply(tool_calls=[{"name": "bash", "arguments": {"command": command, "timeout": 30}}]), Reply(text="done")]
    with ScriptedEndpoint(script) as endpoint:
        settings = Settings.resolve(env={}, harness="pi", llama_url=endpoint.url, model_id="scripted",
                                    searchbox_tools="", bash_sandbox=scene.level, turn_budget=1,
                                    searchbox_cache_dir=str(scene.base / "cache"))
        job = scene.base / "job"
        create_job(job, "attack", room, settings)
        assert run_job(job, settings, OpenAIClient(endpoint.url, "scripted", max_attempts=1)) == "first_turn_done"
    ran = [row for row in read_jsonl(job / "events.jsonl") if row["type"] == "tool_end"]
    assert [row["name"] for row in ran] == ["bash"], ran
    tool_rows = [row["message"] for row in read_jsonl(job / "session.jsonl")
                 if row.get("type") == "message" and row["message"]["role"] == "tool"]
    return ToolResult(str(tool_rows[0]["content"]))


@pytest.mark.parametrize("level", ["namespaces", "landlock"])
def test_nothing_gets_through_pis_bash_at_a_confining_level(level: str) -> None:
    if choose(level).name != level:
        pytest.skip(f"this host has no {level} level: {choose(level).reason}")
    outcomes = run_pi_suite(level, _through_pi)
    assert set(outcomes) == set(PI_ATTACKS)
    through = [name for name, got in outcomes.items() if got]
    print(f"\nRELIABILITY sandbox attacks through Pi at {level}: {len(outcomes)} tried, {len(through)} got through")
    assert through == []
