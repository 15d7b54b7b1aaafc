"""Tool-call conformance: the probe situations are the loop's, and the scoring is right.

A scripted endpoint plays a model whose every reply the test chooses, per probe, so each verdict
(a right call, a wrong tool, invalid or unparseable arguments, the answer when it is due) is
checked; then the whole command runs for real against the packaged Gemma 3 270M.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from testkit.scripted_endpoint import Fault, Reply, ScriptedEndpoint
from searchbox.agent.assists.wrap_up import WRAP_UP
from searchbox.agent.prompts import HARNESS
from searchbox.cli.main import main
from searchbox.evaluation.conformance import ModelReport, check_models, run_probes
from searchbox.evaluation.probes import Situation, build_situations, load_probes
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.settings import Settings

AUDITOR = "The FY2025 auditor is Pellworth & Strand LLP [s1]."
# What a model that does everything right replies to each built-in probe.
RIGHT = {
    "first-step": Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": "audit", "ignoreCase": True}}]),
    "first-step-forced": Reply(tool_calls=[{"name": "search_dataroom", "arguments": {"query": "FY2025 auditor"}}],
                               usage={"prompt_tokens": 900, "completion_tokens": 21}),
    "named-tool-forced": Reply(tool_calls=[{"name": "search_dataroom", "arguments": {"query": "Cobalt Ridge interest rate"}}],
                               usage={"prompt_tokens": 900, "completion_tokens": 27}),
    "read-named-file": Reply(tool_calls=[{"name": "read", "arguments": {"path": "./dataroom/03_legal/duluth_lease_abstract.txt"}}]),
    "read-found-file": Reply(tool_calls=[{"name": "read", "arguments": {
        "path": "dataroom/03_legal/brannock_manufacturing_and_supply_agreement_2023.pdf"}}]),
    "search-again": Reply(tool_calls=[{"name": "search_dataroom", "arguments": {"query": "Cistern outage root cause"}}]),
    "answer-after-evidence": Reply(text=AUDITOR),
    "wrap-up": Reply(text="The lease expires on 31 May 2028 [s1]."),
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def situations(settings: Settings) -> list[Situation]:
    built, skipped = build_situations(load_probes(), settings)
    assert not skipped
    return built


def by_probe(situations: list[Situation], replies: dict[str, Reply | Fault]):
    """A script item that answers each request with the reply chosen for the probe it poses."""

    def reply(body: dict[str, Any]) -> Reply | Fault:
        for situation in situations:
            choice = situation.probe.tool_choice if situation.tools else None
            if body["messages"] == json.loads(json.dumps(situation.messages)) and body.get("tool_choice") == choice:
                return replies.get(situation.probe.id, RIGHT[situation.probe.id])
        raise AssertionError("a request that poses no probe")

    return reply


def run_scripted(situations: list[Situation], replies: dict[str, Reply | Fault] | None = None) -> tuple[ModelReport, ScriptedEndpoint]:
    with ScriptedEndpoint(default=by_probe(situations, replies or {})) as endpoint:
        model = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
        report = ModelReport(model.model_id, run_probes(model, situations))
        model.close()
    return report, endpoint


def test_probes_are_the_loops_own_situations(situations: list[Situation]) -> None:
    report, endpoint = run_scripted(situations)
    requests = {s.probe.id: r.body for s, r in zip(situations, endpoint.requests)}
    assert len(requests) == 8
    for body in requests.values():
        assert body["messages"][0]["role"] == "system" and body["messages"][0]["content"].startswith(HARNESS)
        assert body["stream"] is True
    names = [tool["function"]["name"] for tool in requests["first-step"]["tools"]]
    assert names == ["read", "bash", "edit", "write", "grep", "find", "ls", "search_dataroom", "answer_question"]
    assert requests["first-step"]["tool_choice"] == "auto"
    assert requests["first-step-forced"]["tool_choice"] == "required"
    assert requests["named-tool-forced"]["tool_choice"] == {"type": "function", "function": {"name": "search_dataroom"}}
    # A wrap-up is sent as the loop sends it: its message last, and no tools.
    assert "tools" not in requests["wrap-up"] and requests["wrap-up"]["messages"][-1] == {"role": "user", "content": WRAP_UP}
    # Earlier steps were replayed with the real tools on the built-in dataroom: real results, real source ids.
    evidence = requests["answer-after-evidence"]["messages"]
    assert [m["role"] for m in evidence] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert "[s1] dataroom/01_corporate/officers_and_directors.md:" in evidence[3]["content"]  # grep's match is a source
    assert evidence[5]["content"].startswith("[source s2: dataroom/01_corporate/officers_and_directors.md")
    assert "Pellworth & Strand LLP" in evidence[5]["content"]
    assert evidence[4]["tool_calls"][0]["function"]["name"] == "read"
    assert "brannock_manufacturing_and_supply_agreement_2023.pdf" in requests["read-found-file"]["messages"][-1]["content"]
    assert requests["search-again"]["messages"][-1]["content"] == "No matches found"


def test_a_model_that_does_everything_right_passes_every_probe(situations: list[Situation]) -> None:
    report, _ = run_scripted(situations)
    summary = report.summary()
    assert [o.problem for o in report.outcomes] == [""] * 8
    assert summary["passed"] == 8 and summary["responses"] == 8
    assert summary["parseable"] == (6, 6) and summary["right_tool"] == (6, 6) and summary["valid_args"] == (6, 6)
    assert summary["forced_call"] == (2, 2) and summary["answers"] == (2, 2) and summary["errors"] == 0
    assert summary["forced_tokens"] == 24  # the forced probes' output tokens, on average
    assert summary["mean_latency_s"] > 0


def test_each_way_of_failing_is_scored_as_that_failure(situations: list[Situation]) -> None:
    replies: dict[str, Reply | Fault] = {
        # A parseable call of a tool the situation does not call for.
        "first-step": Reply(tool_calls=[{"name": "ls", "arguments": {"path": "dataroom"}}]),
        # The right tool with arguments its schema refuses (an empty pattern).
        "first-step-forced": Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": " "}}]),
        # Forced, and still no call: prose instead.
        "named-tool-forced": Reply(text="I would use search_dataroom to look for the loan."),
        # The right tool on another file than the one the user named.
        "read-named-file": Reply(tool_calls=[{"name": "read", "arguments": {"path": "dataroom/03_legal/patent_portfolio.csv"}}]),
        # Arguments that are not JSON at all.
        "read-found-file": Reply(tool_calls=[{"name": "read", "arguments": "<<path>>"}]),
        # A tool that does not exist.
        "search-again": Reply(tool_calls=[{"name": "web_search", "arguments": {"query": "Cistern outage"}}]),
        # The answer was in the last result, and the model searches again.
        "answer-after-evidence": Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": "Pellworth"}}]),
        # An empty wrap-up.
        "wrap-up": Reply(text="  "),
    }
    report, _ = run_scripted(situations, replies)
    outcomes = {o.probe: o for o in report.outcomes}
    assert {k: (o.parseable, o.right, o.valid) for k, o in outcomes.items() if o.expects_call} == {
        "first-step": (True, False, True),
        "first-step-forced": (True, True, False),
        "named-tool-forced": (False, False, None),
        "read-named-file": (True, False, True),
        "read-found-file": (False, False, False),
        "search-again": (True, False, False),
    }
    assert outcomes["first-step"].problem.startswith("wrong call: ls(")
    assert "is empty" in outcomes["first-step-forced"].problem
    assert outcomes["named-tool-forced"].problem.startswith("no call: I would use")
    assert outcomes["search-again"].problem.startswith("wrong call: web_search(")
    assert not outcomes["answer-after-evidence"].right and outcomes["answer-after-evidence"].valid
    assert outcomes["answer-after-evidence"].problem.startswith("called grep(")
    assert (outcomes["wrap-up"].right, outcomes["wrap-up"].problem) == (False, "empty answer")
    summary = report.summary()
    assert summary["passed"] == 0
    assert summary["parseable"] == (4, 6) and summary["right_tool"] == (1, 6) and summary["valid_args"] == (3, 6)
    assert summary["forced_call"] == (1, 2) and summary["answers"] == (0, 2)


def test_writing_answer_md_counts_as_the_answer_only_where_a_tool_may_be_called(situations: list[Situation]) -> None:
    write = Reply(tool_calls=[{"name": "write", "arguments": {"path": "ANSWER.md", "content": AUDITOR}}])
    report, _ = run_scripted(situations, {"answer-after-evidence": write, "wrap-up": write})
    outcomes = {o.probe: o for o in report.outcomes}
    assert outcomes["answer-after-evidence"].right and outcomes["answer-after-evidence"].passed
    # The wrap-up offered no tools: a call there is not the answer, and runs no tool.
    assert not outcomes["wrap-up"].right and outcomes["wrap-up"].valid is False


def test_a_call_written_as_text_where_no_tools_are_offered_is_no_answer(situations: list[Situation]) -> None:
    text = '{"name": "write", "arguments": {"path": "ANSWER.md", "content": "31 May 2028"}}'
    report, _ = run_scripted(situations, {"wrap-up": Reply(text=text)})
    wrap_up = report.outcomes[-1]
    assert (wrap_up.probe, wrap_up.right, wrap_up.valid, wrap_up.calls) == ("wrap-up", False, None, [])
    assert wrap_up.problem.startswith("wrote a call as text: write(")


def test_a_model_that_fails_is_an_error_outcome_not_a_crash(situations: list[Situation]) -> None:
    report, _ = run_scripted(situations, {"first-step": Fault.http(400, "bad request")})
    failed = report.outcomes[0]
    assert failed.error and "400" in failed.error and not failed.passed
    assert report.summary()["errors"] == 1 and report.summary()["passed"] == 7


def test_probes_need_tools_the_run_offers(settings: Settings) -> None:
    built, skipped = build_situations(load_probes(), settings.with_overrides(searchbox_tools=""))
    assert skipped == {"named-tool-forced": "tool_choice names search_dataroom, not on offer"}
    assert len(built) == 7 and all("search_dataroom" not in json.dumps(s.tools) for s in built)


def test_a_probe_whose_history_no_longer_replays_is_refused(tmp_path: Path, settings: Settings) -> None:
    probes = {"probes": [{"id": "gone", "question": "?", "history": [{"call": {"name": "read", "arguments": {"path": "dataroom/nope.md"}}}],
                          "expect": {"answer": {}}}]}
    (tmp_path / "probes.json").write_text(json.dumps(probes))
    with pytest.raises(ValueError, match="replaying read"):
        build_situations(load_probes(tmp_path / "probes.json"), settings)


def test_the_command_prints_a_table_per_model_and_writes_every_response(
        situations: list[Situation], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "conformance.json"
    with ScriptedEndpoint(default=by_probe(situations, {"first-step": RIGHT["wrap-up"]})) as endpoint:
        code = main(["conformance", "--set", f"LLAMA_URL={endpoint.url}", "--set", "MODEL_ID=scripted-1",
                     "--model", endpoint.url, "--repeat", "2", "--markdown", "--out", str(out),
                     "--set", f"SEARCHBOX_CACHE_DIR={tmp_path / 'cache'}"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "| model | passed | parseable call | right tool | valid args | forced -> call | tokens per forced call |" in printed
    assert "| scripted-1 | 14/16 | 10/12 (83%) | 10/12 (83%) | 10/10 (100%) | 4/4 (100%) | 24 | 4/4 (100%) |" in printed
    assert "FAIL first-step" in printed
    saved = json.loads(out.read_text())
    assert saved["repeat"] == 2 and len(saved["models"][0]["outcomes"]) == 16
    assert saved["models"][0]["summary"]["right_tool"] == [10, 12]


@pytest.mark.real_model
@pytest.mark.slow
def test_the_packaged_gemma_answers_every_probe(tmp_path: Path) -> None:
    settings = Settings.resolve(env={}, llm_gguf="packaged:gemma3-270m", context_window=4096, max_output_tokens=160,
                                searchbox_cache_dir=str(tmp_path / "cache"))
    lines: list[str] = []
    [report] = check_models([settings], load_probes(), on_line=lines.append)
    summary = report.summary()
    assert report.model.startswith("gemma-3-270m") and summary["responses"] == 8 and summary["errors"] == 0
    assert len([line for line in lines if line.lstrip().startswith(("ok", "FAIL"))]) == 8
    # A model with no template answers in grammar-held JSON actions: a forced step is always a call.
    assert summary["forced_call"] == (2, 2)
    assert summary["mean_latency_s"] > 0
    assert summary["parseable"][1] == 6 and summary["answers"][1] == 2
