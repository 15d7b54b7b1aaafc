"""No score the harness wrote (issue 21): text of an answer that only repeats what the harness sent the
model earns no citation, no support and no must-fact (searchbox/records/echoes.py), in the records a
run writes and when it is scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.fake_model import FakeChatModel, Said
from searchbox.agent.assists.ask_sources import ask_sources
from searchbox.agent.run import run_job
from searchbox.agent.session import Session
from searchbox.assets import BUILTIN_DATAROOM
from searchbox.grading.score import score_run
from searchbox.jobs.job import create_job
from searchbox.cli.run import summarize_run
from searchbox.jobs.bundle import answer_download
from searchbox.records.echoes import LEFT_OUT, HarnessMessage, find_echoes
from searchbox.records.files import read_json
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.ui.answer import render_answer
from searchbox.ui.panels import read_answer
from searchbox.workspace import Workspace

Q006 = {"id": "q006", "type": "literal", "question": "Which firm issued the independent auditor's report on the FY2024 "
        "consolidated financial statements, and on what date?", "must_facts": ["Pellworth & Strand LLP", "28 March 2025"],
        "gold_files": ["02_financials/audit_report_FY2024.pdf"]}
# What the loop sent before assists (agent/prompts.py cite_sources), and what the 1.5B made of it.
OLD_REQUEST = ("Your answer cites no source. The tool results above showed the sources [s1], [s2], [s3], [s4]; of these, "
               "[s3] shows “FY2024”; [s4] shows “FY2024”. Reply with the answer again, putting after each fact the id of "
               "the source that shows it, e.g. \"... [s1].\"")
ECHOED = ("Sorry, but I don't have enough information to provide a citation. The tool results above showed the sources "
          "[s1], [s2], [s3], [s4]; of these, [s3] shows “FY2024”; [s4] shows “FY2024”.")
FY2024_FILES = ["dataroom/01_corporate/board_minutes_2025-01-23.docx", "dataroom/01_corporate/board_minutes_2025-04-17.docx",
                "dataroom/02_financials/FY2025_management_report_DRAFT_v1.docx",
                "dataroom/02_financials/FY2025_management_report_FINAL.docx"]


def recorded_job(tmp_path: Path, answer: str) -> Path:
    """A job on the built-in dataroom whose session is the issue's transcript, ending in `answer`."""
    job_dir = tmp_path / "job"
    settings = Settings.resolve(env={}, retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"))
    create_job(job_dir, Q006["question"], BUILTIN_DATAROOM, settings)
    workspace = Workspace.open(job_dir, settings)
    for path in FY2024_FILES:  # s1..s4, each holding "FY2024"
        workspace.ledger.cite_range(path, 1, 400, "")
    workspace.save_ledger()
    session = Session.load(JobFolder(job_dir).session)
    session.append({"role": "user", "content": Q006["question"]})
    session.append({"role": "assistant", "content": "The auditor's report was issued for FY2024."})
    session.append({"role": "user", "content": OLD_REQUEST})
    session.append({"role": "assistant", "content": answer})
    JobFolder(job_dir).create_answer(answer + "\n")
    return job_dir


def test_the_echoed_request_for_sources_earns_no_citation(tmp_path: Path) -> None:
    job_dir = recorded_job(tmp_path, ECHOED)
    workspace = Workspace.open(job_dir, Settings.resolve(env={}, retrieval_preset="packaged"))
    assert all("FY2024" in text for text in workspace.source_texts(["s1", "s2", "s3", "s4"]).values())
    record = workspace.check_citations(ECHOED + "\n")
    assert (record["cited"], record["valid"], record["checked"], record["supported"]) == ([], 0, 0, 0)
    assert record["harness_echoes"] == ["The tool results above showed the sources [s1], [s2], [s3], [s4]; of these, "
                                        "[s3] shows “FY2024”; [s4] shows “FY2024"]
    score = score_run(job_dir, Q006)
    assert score["citations"]["cited"] == [] and score["citations"]["supported"] == 0
    assert score["citations"]["validity"] is None and score["verdict"] == "wrong"


def test_an_answer_s_own_citations_beside_an_echo_still_count(tmp_path: Path) -> None:
    answer = ("The tool results above showed the sources [s1], [s2], [s3], [s4]. The FY2025 management report "
              "compares with FY2024 [s4].")
    job_dir = recorded_job(tmp_path, answer)
    record = Workspace.open(job_dir, Settings.resolve(env={}, retrieval_preset="packaged")).check_citations(answer)
    assert record["cited"] == ["s4"] and record["valid"] == 1
    # Numbered as the answer's own markers: the panel marks its second [s4], not the echoed first.
    [check] = record["checks"]
    assert (check["id"], check["occurrence"]) == ("s4", 1)
    html = render_answer(answer, JobFolder(job_dir).read_sources(), record["checks"])
    assert html.count("cite-verdict") == 1


@pytest.mark.parametrize(("reply", "cited", "fact"), [
    # The hint echoed: no citation, and the fact it quoted is not the answer's.
    ("Sorry, I cannot cite. Of the sources shown, [s1] shows “31 March 2029”.", [], False),
    # The answer rewritten with the id: the date is the model's own (it wrote it before it was asked).
    ("The office lease runs until 31 March 2029 [s1].", ["s1"], True),
])
def test_a_run_that_echoes_the_source_hint_scores_nothing_for_it(tmp_path: Path, reply: str, cited: list[str],
                                                                 fact: bool) -> None:
    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    settings = Settings.resolve(env={}, searchbox_tools="", retrieval_preset="packaged",
                                searchbox_cache_dir=str(tmp_path / "cache"), harness_assists="ask_sources,source_hint")
    job_dir = tmp_path / "job"
    create_job(job_dir, "When does the office lease end?", source, settings)
    model = FakeChatModel([Said(calls=[("read", {"path": "dataroom/legal/lease.txt"})]),
                           Said("It ends on 31 March 2029."), Said(reply)])
    run_job(job_dir, settings, model)
    sent = model.requests[-1].messages[-1]["content"]
    assert sent == ask_sources(["s1"]) + " Of the sources shown, [s1] shows “31 March 2029”."
    citations = read_json(job_dir / "run_meta.json")["citations"]
    assert citations["cited"] == cited and citations["supported"] == len(cited)
    question = {"id": "q", "type": "literal", "question": "When does the office lease end?",
                "must_facts": ["31 March 2029"], "gold_files": ["legal/lease.txt"]}
    assert score_run(job_dir, question)["facts"][0]["present"] is fact


def test_what_counts_as_an_echo() -> None:
    sent = [HarnessMessage("Your answer cites no source. The tool results above showed the sources [s1], [s2], [s3]. "
                           "Of the sources shown, [s2] shows “Harbour Street”.", "It is on Harbour Street.")]
    # Citing every id shown, in the order shown, is how answers cite, not an echo.
    assert find_echoes("Rent is paid quarterly [s1], [s2], [s3].", sent).spans == []
    # Words the model wrote itself before it was asked are its own, even when the request quotes them.
    assert find_echoes("The office is on Harbour Street [s2].", sent).spans == []
    # Case and punctuation aside, three words of the request or more are an echo, with the markers they touch.
    echoes = find_echoes("the tool results ABOVE showed the sources: [s1]. The office is on Harbour Street [s2].", sent)
    assert echoes.record() == ["the tool results ABOVE showed the sources: [s1]"]
    assert echoes.scored == " … . The office is on Harbour Street [s2]."
    assert echoes.occurrences() == {"s2": [0]}
    assert find_echoes("Anything at all [s1].", []).spans == []  # no harness message: nothing is an echo


def test_what_a_reader_is_shown_is_the_model_s_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The answer panel, the ANSWER.md download and the CLI show an echo marked as the harness's, never as the
    model's words; the answer's own citation keeps its verdict mark (issue 31)."""
    answer = ("The tool results above showed the sources [s1], [s2], [s3], [s4]. The FY2025 management report "
              "compares with FY2024 [s4].")
    job_dir = recorded_job(tmp_path, answer)
    workspace = Workspace.open(job_dir, Settings.resolve(env={}, retrieval_preset="packaged"))
    folder = JobFolder(job_dir)
    folder.write_meta({**folder.read_meta(), "citations": workspace.check_citations(answer + "\n")})
    html, _ = read_answer(job_dir)
    assert "The tool results above" not in html and LEFT_OUT in html and html.count("cite-verdict") == 1
    assert "1 passage that only repeated the harness" in html
    download = Path(answer_download(job_dir) or "").read_text(encoding="utf-8")
    assert "The tool results above" not in download and LEFT_OUT in download and "compares with FY2024 [s4]" in download
    summarize_run(job_dir)
    printed = capsys.readouterr().out
    assert "The tool results above" not in printed and LEFT_OUT in printed
    # The model's file itself is kept as it wrote it: the record of what it did.
    assert JobFolder(job_dir).answer_text().startswith("The tool results above")
