"""Checked citations (issue 14): each [sN] of an answer judged against its source's text on the
built-in dataroom, the normalisation of figures, quoted citations, the records a real run writes, the
score output and the answer panel's marks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.run import run_job
from searchbox.assets import BUILTIN_DATAROOM
from searchbox.evaluation.report import results_frame, summary_table
from searchbox.grading.score import format_score, score_run
from searchbox.jobs.job import create_job
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.citations.check import CHECKER_VERSION, SUPPORT_SCORE, answer_digest, Fact, fact_in, quote_in, sentence_facts
from searchbox.citations.markers import cited_ids, citing_sentences
from searchbox.records.files import read_json
from searchbox.settings import Settings
from searchbox.ui.answer import render_answer
from searchbox.ui.panels import read_answer
from searchbox.workspace import Workspace

AMENDMENT = "dataroom/03_legal/harwick_falls_amendment_1_2025.docx"  # extracted through the DOCX reader
LEASE = "dataroom/03_legal/duluth_lease_abstract.txt"
AUDIT = "dataroom/02_financials/audit_report_FY2024.pdf"


@pytest.fixture(scope="module")
def builtin_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    job_dir = tmp_path_factory.mktemp("builtin") / "job"
    settings = Settings.resolve(env={}, retrieval_preset="packaged",
                                searchbox_cache_dir=str(tmp_path_factory.mktemp("cache")))
    create_job(job_dir, "About the Harwick Falls renewal?", BUILTIN_DATAROOM, settings)
    return job_dir


def workspace(job_dir: Path, **ranges: tuple[str, int, int]) -> Workspace:
    """A workspace whose ledger holds these ranges, as `read` would have recorded them (s1, s2, ...)."""
    ws = Workspace.open(job_dir, Settings.resolve(env={}, retrieval_preset="packaged"))
    for path, first, last in ranges.values():
        ws.ledger.cite_range(path, first, last, "")
    return ws


def verdicts(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["id"], c["verdict"]) for c in record["checks"]]


def test_supported_unsupported_and_unchecked_on_the_builtin_dataroom(builtin_job: Path) -> None:
    ws = workspace(builtin_job, s1=(AMENDMENT, 1, 40), s2=(LEASE, 1, 30), s3=(AUDIT, 1, 60))
    answer = "\n".join([
        "The Agreement renews for a Renewal Term from 1 April 2025 to 31 March 2027 [s1].",  # both dates in s1
        "The Duluth lease expires on May 31, 2028, with base rent of $23.50 per RSF [s2].",  # dates written another way
        "The Initial Term ended on 31 March 2026 [s1].",  # a year the source does not hold
        "The FY2024 accounts were audited by Halloway Brandt LLP [s3].",  # a firm in no document
        "The lease expires on 31 May 2028 [s1].",  # true, but not what s1 says
        "This is worth keeping in mind [s2].",  # nothing to look up, and not what the lease is about
        "See also the board's view [s9].",  # no such source
    ])
    record = ws.check_citations(answer)
    assert verdicts(record) == [("s1", "supported"), ("s2", "supported"), ("s1", "unsupported"),
                                ("s3", "unsupported"), ("s1", "unsupported"), ("s2", "unchecked"),
                                ("s9", "unsupported")]
    checks = record["checks"]
    assert checks[0]["matched"] == ["1 April 2025", "31 March 2027", "Agreement", "Renewal Term"]
    assert checks[0]["score"] >= SUPPORT_SCORE and checks[5]["score"] < SUPPORT_SCORE
    assert checks[2]["missing"] == ["31 March 2026"] and "31 March 2026" in checks[2]["reason"]
    assert "Halloway Brandt LLP" in checks[3]["missing"] and "not in the source ledger" in checks[6]["reason"]
    assert (record["supported"], record["unsupported"], record["unchecked"]) == (2, 4, 1)
    assert record["supported_rate"] == round(2 / 7, 4) and record["score_model"] == "packaged:minilm"


def test_a_source_cited_beside_others_must_hold_a_figure_not_only_their_names(builtin_job: Path) -> None:
    """The 1.5B cited a loan summary's covenant page beside two pages stating the rate: it holds the
    bank's name, as they do, and no rate (hand-labelled unsupported; checker 1 called it supported)."""
    ws = workspace(builtin_job, s1=(AUDIT, 1, 60), s2=(AUDIT, 1, 2), s3=(AMENDMENT, 1, 40))
    answer = "\n".join([
        "Quillmoor Hydrometrics, Inc. renewed the Agreement from 1 April 2025 [s3][s2].",  # s2: the name only
        "Quillmoor Hydrometrics, Inc. renewed the Agreement [s3][s2].",  # no figure: the name is the claim
    ])
    record = ws.check_citations(answer)
    assert verdicts(record) == [("s3", "supported"), ("s2", "unsupported"), ("s3", "supported"), ("s2", "supported")]
    assert "none of the figures: 1 April 2025" in record["checks"][1]["reason"]
    assert record["checker"] == CHECKER_VERSION


def test_the_texts_of_shown_sources_are_read_in_the_order_asked(builtin_job: Path) -> None:
    """What the source_hint assist looks in: each readable source's text; an id not in the ledger is left out."""
    ws = workspace(builtin_job, s1=(AUDIT, 1, 60), s2=(AMENDMENT, 1, 40))
    texts = ws.source_texts(["s2", "s7", "s1"])
    assert list(texts) == ["s2", "s1"]
    assert "21 March 2025" in texts["s2"] and "Quillmoor Hydrometrics" in texts["s1"]


def test_a_source_that_cannot_be_read_is_unchecked(builtin_job: Path, tmp_path: Path) -> None:
    ws = workspace(builtin_job, s1=(LEASE, 1, 30))
    ws.ledger.cite_range("notes.md", 1, 3, "")  # s2: a file of the agent's own, gone since
    record = ws.check_citations("The lease expires on 31 May 2028 [s1]. It ends in 2028 [s2].")
    assert verdicts(record) == [("s1", "supported"), ("s2", "unchecked")]
    assert "could not be read" in record["checks"][1]["reason"]


def test_a_chunk_source_is_its_characters_of_the_extracted_text(builtin_job: Path) -> None:
    ws = workspace(builtin_job)
    chunk = next(c for c in ws.corpus.chunks if c.path == AMENDMENT.removeprefix("dataroom/") and "31 March 2027" in c.text)
    ws.ledger.cite_chunk(AMENDMENT, chunk.index, chunk.start, chunk.end, chunk.label, chunk.text)
    record = ws.check_citations("The Renewal Term runs to 31 March 2027 [s1]. It runs to 31 March 2031 [s1].")
    assert verdicts(record) == [("s1", "supported"), ("s1", "unsupported")]


@pytest.mark.parametrize(("fact", "kind", "source", "found"), [
    ("$1.2 million", "amount", "a fee of 1,200,000 dollars", True),
    ("1,200,000", "number", "a fee of $1.2 million", True),
    ("$1.2M", "amount", "USD 1,200,000", True),
    ("$48.2 million", "amount", "revenue of $48,213,442", True),  # rounded in the answer
    ("$48.3 million", "amount", "revenue of $48,213,442", False),
    ("17%", "percent", "up 17.3 percent", True),
    ("17%", "percent", "17 customers", False),  # a percentage is not any 17
    ("4.7%", "percent", "restated from 6.8% to 5.9%", False),
    ("$118.40", "amount", "US$118.4 per unit", True),
    ("$118", "amount", "$118.40 per unit", False),  # written without a scale or decimals: exact
    ("€22,400", "amount", "EUR 22400", True),
    ("$25.9 million", "amount", "(In thousands of US dollars)\nCash | 25,870 | 24,310", True),
    ("$25.9 million", "amount", "Cash | 25,870 | 24,310", False),  # not said to be in thousands
    ("May 31, 2028", "date", "Expiration: 31 May 2028", True),
    ("2028-05-31", "date", "Expiration: 31 May 2028", True),
    ("31 May 2029", "date", "Expiration: 31 May 2028", False),
    ("Harwick Falls", "name", "the CITY OF HARWICK FALLS, Wisconsin", True),
])
def test_figures_are_compared_after_normalisation(fact: str, kind: str, source: str, found: bool) -> None:
    assert fact_in(Fact(fact, kind), source) is found


def test_a_sentence_yields_its_dates_amounts_percentages_numbers_and_names() -> None:
    facts = sentence_facts("Revenue grew 17% to $48.2 million in FY2025 at Quillmoor Hydrometrics, "
                           "from 2022–2024 (3 sites), per the Board on March 31, 2025")
    assert [(f.text, f.kind) for f in facts] == [
        ("March 31, 2025", "date"), ("$48.2 million", "amount"), ("17%", "percent"), ("2022", "number"),
        ("2024", "number"), ("FY2025", "name"), ("Quillmoor Hydrometrics", "name"), ("Board", "name")]
    # A period is a fact of its own: a README answer's "Pellworth & Strand LLP for FY2025" was one name,
    # which no source holds.
    facts = sentence_facts("The auditors were Pellworth & Strand LLP for FY2025 and Halloway Brandt LLP for Q3 2022.")
    assert [f.text for f in facts] == ["FY2025", "Q3 2022", "Pellworth & Strand LLP", "Halloway Brandt LLP"]


def test_citations_are_parsed_per_sentence_with_their_quotes() -> None:
    answer = ("# Findings\n- The term ends on 31 March 2025. [s1] It renews for two years.\n[s5]\n"
              "- Fees rose 3% (e.g. in Fig. 2) [s2, s3 \u201cincrease of 3%\u201d].\n\n"
              "| customer | ARR |\n|---|---|\n| Harwick | $1.2M [s4] |\n")
    sentences = citing_sentences(answer)
    assert [(s.text, [(c.id, c.quote, c.occurrence) for c in s.citations]) for s in sentences] == [
        ("The term ends on 31 March 2025", [("s1", None, 0)]),
        ("It renews for two years", [("s5", None, 0)]),
        ("Fees rose 3% (e.g. in Fig. 2)", [("s2", None, 0), ("s3", "increase of 3%", 0)]),
        ("Harwick ; $1.2M", [("s4", None, 0)]),
    ]
    assert cited_ids(answer) == ["s1", "s5", "s2", "s3", "s4"]


def test_a_quoted_citation_holds_only_when_the_quote_is_in_the_source(builtin_job: Path) -> None:
    assert quote_in("renews  under\nCLAUSE 9.2", "the Agreement renews under clause 9.2 for")
    assert quote_in("1 April 2025 \u2013 31 March 2027", "from 1 April 2025 - 31 March 2027")
    ws = workspace(builtin_job, s1=(AMENDMENT, 1, 40))
    record = ws.check_citations('The Agreement renewed [s1 "renews under clause 9.2"]. '
                                'It renewed for five years [s1 "renews for five years"].')
    assert verdicts(record) == [("s1", "supported"), ("s1", "unsupported")]
    assert [c["quote_found"] for c in record["checks"]] == [True, False]
    assert record["checks"][1]["reason"] == "the quoted words are not in the source"


def scripted_run(tmp_path: Path, answer: str, **knobs: Any) -> tuple[Path, dict[str, Any]]:
    """A real run over the small dataroom: the scripted model reads the lease, then answers."""
    from conftest import SMALL_DATAROOM, write_tree

    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    script = [Reply(tool_calls=[{"name": "read", "arguments": {"path": "dataroom/legal/lease.txt"}}]),
              Reply(text=answer)]
    with ScriptedEndpoint(script) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                                    retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"), **knobs)
        job_dir = tmp_path / "job"
        create_job(job_dir, "When does the office lease end?", source, settings)
        run_job(job_dir, settings, OpenAIClient(endpoint.url, "scripted", max_attempts=2, backoff_s=0.01))
        system = endpoint.requests[0].body["messages"][0]["content"]
    return job_dir, {"system": system}


def test_a_run_records_its_checked_citations_and_score_counts_them(tmp_path: Path) -> None:
    answer = ("The lease at 14 Harbour Street runs until 31 March 2029 [s1]. "
              'Rent is payable monthly [s1 "payable monthly"].')
    job_dir, seen = scripted_run(tmp_path, answer, citation_quotes=True)
    assert "[s3 \"" in seen["system"]  # CITATION_QUOTES=on: the prompt asks for quotes
    citations = read_json(job_dir / "run_meta.json")["citations"]
    assert citations["checked"] == 2 and (citations["supported"], citations["unsupported"]) == (1, 1)
    first, second = citations["checks"]
    assert first == {**first, "id": "s1", "verdict": "supported", "sentence": "The lease at 14 Harbour Street runs until "
                     "31 March 2029", "matched": ["31 March 2029", "14", "Harbour Street"], "missing": []}
    assert first["score"] is not None and second["quote"] == "payable monthly" and second["quote_found"] is False

    question = {"id": "q", "type": "literal", "question": "When does the office lease end?",
                "must_facts": ["31 March 2029"], "gold_files": ["legal/lease.txt"]}
    score = score_run(job_dir, question)
    assert score["citations"]["supported_rate"] == 0.5
    text = format_score(score)
    assert "checked against their sources: 1 supported, 0 contradicted, 1 unsupported, 0 unchecked; supported rate 0.50" in text
    assert "unsupported [s1] Rent is payable monthly: the quoted words are not in the source" in text

    row = {"entry": "e", "question_id": "q", "score": {"verdict": "correct", "citation_supported": 0.5,
                                                       "citation_validity": 1.0, "citation_precision": 1.0}}
    table = summary_table(results_frame([row]))
    assert table.loc[0, "supported citations"] == 0.5 and table.loc[0, "citation validity"] == 1.0


def test_a_run_recorded_before_checks_is_checked_when_scored(tmp_path: Path) -> None:
    job_dir, _ = scripted_run(tmp_path, "The lease runs until 31 March 2030 [s1].")
    meta_path = job_dir / "run_meta.json"
    meta = read_json(meta_path)
    meta["citations"] = {"cited": ["s1"], "valid": 1, "invalid": 0, "invalid_ids": []}  # as older runs wrote it
    meta_path.write_text(__import__("json").dumps(meta))
    question = {"id": "q", "type": "literal", "question": "?", "must_facts": [], "gold_files": []}
    assert score_run(job_dir, question)["citations"]["unsupported"] == 1
    answer = (job_dir / "work" / "ANSWER.md").read_text(encoding="utf-8")
    meta["citations"] = {"cited": ["s1"], "valid": 1, "invalid": 0, "invalid_ids": [], "checks": [], "unsupported": 0,
                         "answer_sha256": answer_digest(answer), "checker": CHECKER_VERSION - 1}  # an older checker's
    meta_path.write_text(__import__("json").dumps(meta))
    assert score_run(job_dir, question)["citations"]["unsupported"] == 1  # checked again, not taken as it was


def test_a_run_this_checker_checked_is_graded_as_recorded_not_checked_again(tmp_path: Path) -> None:
    job_dir, _ = scripted_run(tmp_path, "The lease at 14 Harbour Street runs until 31 March 2029 [s1].")
    (job_dir / "work" / "dataroom").rename(tmp_path / "gone")  # checked again, the source could not be read
    question = {"id": "q", "type": "literal", "question": "?", "must_facts": [], "gold_files": []}
    assert score_run(job_dir, question)["citations"]["supported"] == 1
    meta_path = job_dir / "run_meta.json"
    meta = read_json(meta_path)
    meta["citations"]["checker"] = CHECKER_VERSION + 1  # a newer checker's checks stand too
    meta_path.write_text(__import__("json").dumps(meta))
    assert score_run(job_dir, question)["citations"]["supported"] == 1
    meta["citations"]["checker"] = CHECKER_VERSION - 1
    meta_path.write_text(__import__("json").dumps(meta))
    assert score_run(job_dir, question)["citations"]["unchecked"] == 1


def test_the_answer_panel_marks_each_citation_with_its_verdict(tmp_path: Path) -> None:
    job_dir, _ = scripted_run(tmp_path, "Until 31 March 2029 [s1]. Until 2031 [s1]. Maybe <b>so</b> [s1].")
    answer_html, _ = read_answer(job_dir)
    assert answer_html.count('class="cite cite-supported"') == 1 and answer_html.count('class="cite cite-unsupported"') == 1
    assert 'title="unsupported: in none of the cited sources: 2031"' in answer_html
    assert "✓" in answer_html and "✗" in answer_html and "<b>" not in answer_html and "http" not in answer_html

    (job_dir / "work" / "ANSWER.md").write_text("Until 2031 [s1].")  # changed since the checks: no marks
    answer_html, _ = read_answer(job_dir)
    assert "cite-unsupported" not in answer_html and 'class="cite"' in answer_html


def test_a_reason_cannot_break_out_of_its_tooltip() -> None:
    checks = [{"id": "s1", "occurrence": 0, "verdict": "unsupported", "reason": 'in none: "><img src=x onerror=alert(1)>'}]
    html = render_answer('It was "><img src=x> [s1 "a <quote>"].', [{"id": "s1"}], checks)
    assert "<img" not in html and "&quot;&gt;&lt;img" in html and "“a &lt;quote&gt;”" in html


def test_a_huge_answer_or_source_is_checked_only_so_far(builtin_job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchbox.citations import check as citation_check
    from searchbox.tools import source_text

    monkeypatch.setattr(citation_check, "MAX_CHECKS", 2)
    record = workspace(builtin_job, s1=(LEASE, 1, 30)).check_citations(
        "It ends on 31 May 2028 [s1]. Rent is $23.50 [s1]. It ends in May 2028 [s1]. Again 31 May 2028 [s1].")
    assert verdicts(record)[:2] == [("s1", "supported"), ("s1", "supported")]
    assert [c["reason"] for c in record["checks"][2:]] == ["past the first 2 citations of the answer"] * 2

    monkeypatch.setattr(source_text, "MAX_TEXT_BYTES", 1000)
    (builtin_job / "work" / "notes.md").write_text("x" * 5000 + "\nThe lease ends on 31 May 2028.\n")
    ws = workspace(builtin_job)
    ws.ledger.cite_range("notes.md", 2, 2, "")  # a line past the part of the file that is read
    record = ws.check_citations("It ends on 31 May 2028 [s1].")
    assert record["checks"][0]["verdict"] == "unchecked" and "are not in its first" in record["checks"][0]["reason"]
