"""The optional support judge (CITATION_JUDGE, citations/judge.py): a model reads the citations the checker's
words leave open, must quote the passage it rests on, and each verdict says who gave it (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchbox.citations.check import CHECKER_VERSION, check_answer, citation_record
from searchbox.citations.judge import ChatReply, JudgeUnavailable, SupportJudge, judge_messages, parse_reading
from searchbox.settings import Settings, SettingsError

PASSAGE = ("Orbis Ltd's 2024 accounts were reviewed by the board in March. Halden Ltd's 2024 accounts were audited "
           "by Crane & Lowe LLP.")


def scripted(*replies: str) -> tuple[SupportJudge, list[list[dict[str, str]]]]:
    """A judge whose model answers with these replies in turn; the prompts it was sent are kept."""
    sent: list[list[dict[str, str]]] = []

    def chat(messages: list[dict[str, str]], max_tokens: int) -> ChatReply:
        sent.append(messages)
        if not replies[len(sent) - 1]:
            raise JudgeUnavailable("connection refused")
        return ChatReply(replies[len(sent) - 1], 300, 20)
    return SupportJudge("scripted-judge", chat), sent


def check(sentence: str, judge: SupportJudge, passage: str = PASSAGE):
    [result] = check_answer(sentence + " [s1]", {"s1"}, lambda _id: passage, None, judge=judge)
    return result


def test_the_judge_decides_what_the_words_left_open_and_says_so() -> None:
    judge, sent = scripted('{"quote": "Halden Ltd\'s 2024 accounts were audited by Crane & Lowe LLP", '
                           '"verdict": "unsupported"}')
    claim = "Crane & Lowe LLP audited the 2024 accounts of Orbis Ltd."  # another company's auditor: words all there
    result = check(claim, judge)
    assert result.verdict == "unsupported" and result.verdict_by == "judge scripted-judge"
    assert "audited by Crane & Lowe LLP" in result.reason and "scripted-judge" in result.reason
    assert result.judge is not None and result.judge["words"] == "supported"  # what the words alone said
    assert result.judge["prompt_tokens"] == 300 and result.judge["raw"].startswith('{"quote"')
    # The claim is sent without its marker, the passage whole, after the fixed instructions and examples.
    assert sent[0][-1]["content"].startswith(f"Passage:\n{PASSAGE}\n\nClaim:\n{claim[:-1]}")
    assert sent[0][:-1] == judge_messages("x", "y")[:-1]


def test_a_reading_whose_quote_the_passage_lacks_or_that_cannot_be_read_leaves_the_words_verdict() -> None:
    for reply, why in (('{"quote": "the audit was completed in March", "verdict": "supported"}', "not in the source"),
                       ("I think it is fine.", "no valid verdict"),
                       ("", "the judge failed: connection refused")):
        judge, _ = scripted(reply)
        result = check("The board of Orbis Ltd reviewed the 2024 accounts in March.", judge)
        assert result.verdict == "supported" and result.verdict_by == f"checker {CHECKER_VERSION}"
        assert why in result.reason and "the words' verdict stands" in result.reason


def test_what_the_words_rule_out_is_never_sent_to_the_judge() -> None:
    judge, sent = scripted('{"quote": "Orbis Ltd", "verdict": "supported"}')
    assert check("Orbis Ltd's 2024 revenue was $40.1 million.", judge).verdict == "unsupported"  # a figure it lacks
    [quoted] = check_answer('The board reviewed them [s1 "in January"].', {"s1"}, lambda _id: PASSAGE, None, judge=judge)
    assert quoted.verdict == "unsupported"  # a quote the source lacks
    assert sent == []


def test_the_record_names_the_judge() -> None:
    judge, _ = scripted('{"quote": "reviewed by the board in March", "verdict": "supported"}')
    answer = "The board of Orbis Ltd reviewed the 2024 accounts in March [s1]."
    checks = check_answer(answer, {"s1"}, lambda _id: PASSAGE, None, judge=judge)
    record = citation_record(answer, ["s1"], [], checks, None, judge.name)
    assert record["judge"] == "scripted-judge" and record["checks"][0]["verdict_by"] == "judge scripted-judge"
    assert record["supported"] == 1


@pytest.mark.parametrize(("raw", "verdict", "quote"), [
    ('{"quote": "is planned", "verdict": "contradicted"}', "contradicted", "is planned"),
    ("```json\n{'quote': 'is planned', 'verdict': 'Supported'}\n```", "supported", "is planned"),
    ('Here: {"verdict": "unsupported"}', "unsupported", None),
    ('{"quote": "is planned", "verdict": "maybe"}', "unknown", "is planned"),
    ('{"quote": "is pla', "unknown", None),
])
def test_replies_are_read_leniently(raw: str, verdict: str, quote: str | None) -> None:
    got, got_quote, _ = parse_reading(raw)
    assert (got, got_quote) == (verdict, quote)


def test_the_knob_takes_off_self_or_an_endpoint() -> None:
    assert Settings.resolve(env={}).citation_judge == "off"
    assert Settings.resolve(env={"CITATION_JUDGE": "self"}).citation_judge == "self"
    assert Settings.resolve(env={}, citation_judge="http://127.0.0.1:8080/v1").citation_judge.startswith("http")
    with pytest.raises(SettingsError, match="CITATION_JUDGE must be off, self or an http"):
        Settings.resolve(env={"CITATION_JUDGE": "gpt"})


def test_a_run_with_an_endpoint_judge_records_its_verdicts_and_hides_its_url(tmp_path: Path) -> None:
    """CITATION_JUDGE=URL in a real run: the run's model reads the lease and answers; a second endpoint judges
    the citation the words call supported; run_meta.json names it, and a visitor's view of the record has no URL."""
    from conftest import SMALL_DATAROOM, write_tree
    from testkit.scripted_endpoint import Reply, ScriptedEndpoint

    from searchbox.agent.run import run_job
    from searchbox.jobs.job import create_job
    from searchbox.llm.clients.openai_client import OpenAIClient
    from searchbox.records.files import read_json
    from searchbox.llm.disclosure import operator_details

    answer = "The office lease at 14 Harbour Street runs until 31 March 2029 [s1]."
    script = [Reply(tool_calls=[{"name": "read", "arguments": {"path": "dataroom/legal/lease.txt"}}]), Reply(text=answer)]
    reading = Reply(text='{"quote": "runs until 31 March 2029", "verdict": "supported"}')
    with ScriptedEndpoint(script) as endpoint, ScriptedEndpoint([reading]) as judge:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                                    retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"),
                                    citation_judge=judge.url, citation_judge_model="judge-model")
        job_dir = tmp_path / "job"
        create_job(job_dir, "When does the office lease end?", write_tree(tmp_path / "room", SMALL_DATAROOM), settings)
        run_job(job_dir, settings, OpenAIClient(endpoint.url, "scripted", max_attempts=2, backoff_s=0.01))
        sent, judge_url = judge.requests[0].body["messages"], judge.url
    citations = read_json(job_dir / "run_meta.json")["citations"]
    [check] = citations["checks"]
    assert citations["judge"] == "judge-model" and check["verdict_by"] == "judge judge-model"
    assert check["judge"]["quote"] == "runs until 31 March 2029" and check["judge"]["words"] == "supported"
    assert sent[-1]["content"].endswith("Claim:\nThe office lease at 14 Harbour Street runs until 31 March 2029")
    assert judge_url.rstrip("/").removesuffix("/v1") in " ".join(operator_details(settings))


@pytest.mark.real_model
@pytest.mark.slow
def test_the_packaged_model_reads_a_citation(packaged_settings: Settings) -> None:
    """The real loading path: the packaged 0.5B judges a claim about another company's auditor that the words
    call supported. Its reading must be readable and recorded; whether it is right is the bench's measurement."""
    from searchbox.llm.choice.connect import connect
    from searchbox.agent.support_judge import support_judge

    model = connect(packaged_settings.with_overrides(llm_gguf="packaged:qwen2.5-coder-0.5b"))
    result = check("Crane & Lowe LLP audited the 2024 accounts of Orbis Ltd.", support_judge(model))
    assert result.judge is not None and result.judge["model"] == model.model_id
    assert result.judge["verdict"] in ("supported", "contradicted", "unsupported")
    assert result.judge["prompt_tokens"] > 300 and result.judge["output_tokens"] > 0
