"""Claim-level support (citations/claims.py, checker 4): a citation is supported only where the passage
states the claim, not where it merely holds its words (issue 31). Passages are the documents' own text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchbox.citations.check import check_answer

ROOT = Path(__file__).resolve().parents[2]
# The "Read me" sheet of 02_financials/financial_statements_FY2022-FY2025.xlsx, as `read` extracts it.
READ_ME = """[sheet Read me]
Quillmoor Hydrometrics, Inc. — consolidated financial statements FY2022–FY2025
All amounts in thousands of US dollars unless stated otherwise.
FY2023 and FY2024 are audited by Pellworth & Strand LLP (report dated 28 March 2025).
FY2022 was audited by the predecessor auditor, Halloway Brandt LLP.
FY2025 figures are preliminary and unaudited; they reflect the Veldhaven Phase 2 deferral described in the FY2025 management report (FINAL).
FY2022 revenue was $17.5 million; FY2023 $23.7 million; FY2024 $29.9 million; FY2025 $36.2 million.

[sheet Income Statement]
USD thousands | FY2022 | FY2023 | FY2024 | FY2025
Total revenue | 17500 | 23720 | 29880 | 36200
"""
REPORT = ("Status: FINAL — 23 January 2026. Figures are preliminary and unaudited; the FY2025 audit by Pellworth & "
          "Strand LLP begins in February 2026.")


def verdict(sentence: str, passage: str) -> tuple[str, str]:
    [check] = check_answer(sentence + " [s1]", {"s1"}, lambda _id: passage, None)
    return check.verdict, check.reason


def test_the_readme_question_s_wrong_answer_is_contradicted_by_its_source() -> None:
    answer = "The FY2025 financial statements were audited by Pellworth & Strand LLP (report dated 28 March 2025)."
    got, why = verdict(answer, READ_ME)
    assert got == "contradicted" and '"unaudited"' in why and "FY2025 figures are preliminary" in why
    got, why = verdict("The FY2025 financial statements were audited by Pellworth & Strand LLP.", REPORT)
    assert got == "contradicted" and "not done yet" in why and "begins" in why
    # What the sheet does say is supported, with the words that tie it.
    got, why = verdict("Pellworth & Strand LLP audited FY2023 and FY2024 (report dated 28 March 2025).", READ_ME)
    assert got == "supported" and "FY2023 and FY2024 are audited" in why
    assert verdict("The FY2025 figures are preliminary and unaudited.", READ_ME)[0] == "supported"
    assert verdict("The FY2025 audit by Pellworth & Strand LLP begins in February 2026.", REPORT)[0] == "supported"


@pytest.mark.parametrize(("sentence", "expected", "words"), [
    ("FY2024 revenue was $29.9 million.", "supported", "FY2024 $29.9 million"),
    ("FY2024 revenue was $23.7 million.", "unsupported", "ties $23.7 million to FY2023, not FY2024"),
    ("Total revenue was $29.9 million in FY2023.", "unsupported", "not FY2023"),
    ("Revenue was $23.7 million in FY2023 and $29.9 million in FY2024.", "supported", ""),  # each figure its own year
])
def test_a_figure_is_held_to_the_year_the_source_ties_it_to(sentence: str, expected: str, words: str) -> None:
    got, why = verdict(sentence, READ_ME)
    assert got == expected and words in why


def test_a_table_cell_is_read_under_its_column_header() -> None:
    table = "All amounts in thousands of US dollars.\n" + READ_ME.split("[sheet Income Statement]")[1]
    assert verdict("FY2024 total revenue was $29.9 million.", table)[0] == "supported"
    got, why = verdict("FY2025 total revenue was $29.9 million.", table)
    assert got == "unsupported" and "Total revenue FY2024: 29880" in why


def test_a_denial_must_deny_what_the_claim_says() -> None:
    passage = "19 North American customers had delayed alarms. No alarm was lost."
    assert verdict("Alarms were delayed for 19 North American customers.", passage)[0] == "supported"
    assert verdict("Alarms were lost for 19 North American customers.", passage)[0] == "contradicted"
    exposure = ("Counsel estimates the range of reasonably possible loss at $0 to $2.5 million. "
                "No amount has been accrued.")
    assert verdict("Quillmoor has accrued $2.5 million for the case.", exposure)[0] == "contradicted"
    # An exception ends a negation's reach.
    pytz = "pytz offers no advantages beyond backwards compatibility with code written for earlier versions of Python."
    assert verdict("On Python 3.9, pytz only adds backwards compatibility.", pytz)[0] != "contradicted"
    # "No. 1" is a number, not a denial (checker 6 called a stored run's citation of it contradicted).
    amendment = ("Quintanilla-Moss summarised Amendment No. 1 to the Master Subscription and Hardware Agreement "
                 "with the City of Harwick Falls. The Initial Term of the Agreement ends on 31 March 2025.")
    assert verdict("The initial term of the Master Subscription and Hardware Agreement with the City of Harwick "
                   "Falls ends on 31 March 2025.", amendment)[0] == "supported"


def test_a_source_that_holds_only_the_years_a_sentence_is_about_does_not_support_it() -> None:
    """A README run cited the cash-flow sheet, which holds FY2022 to FY2025 and no auditor, for who audited
    those years; checker 4 called it supported ("found: FY2022, FY2025, FY2023")."""
    cash_flow = ("USD thousands | FY2022 | FY2023 | FY2024 | FY2025\nNet income (loss) | -3975 | -1925 | -870 | 670\n"
                 "Net cash from operating activities | -3380 | -2640 | -1980 | 1240")
    sentence = ("Pellworth & Strand LLP audited the financial statements for FY2022 to FY2025, and Halloway Brandt LLP "
                "audited FY2022 and FY2023.")
    got, why = verdict(sentence, cash_flow)
    assert got == "unsupported" and "not in this source: Pellworth & Strand LLP, Halloway Brandt LLP" in why
    # Where the source says what the sentence says of those years, the years do not stand in the way.
    assert verdict("Net income was -870 in FY2024.", cash_flow)[0] == "supported"
    assert verdict("FY2022 was audited by Halloway Brandt LLP.", READ_ME)[0] == "supported"


def test_no_pair_a_reader_labelled_supported_is_called_contradicted() -> None:
    """The calibration pairs (bench/data/support_pairs.jsonl, labelled by reading): the rule may miss near
    misses, but it must not call a passage's own statement contradicted."""
    pairs = [json.loads(line) for line in (ROOT / "bench/data/support_pairs.jsonl").read_text().splitlines() if line]
    wrong = [p["id"] for p in pairs if p["label"] == "supported" and verdict(p["sentence"].removesuffix("[s1]").strip(),
                                                                            p["passage"])[0] == "contradicted"]
    assert wrong == []
    caught = [p["id"] for p in pairs if p["label"] != "supported"
              and verdict(p["sentence"].removesuffix("[s1]").strip(), p["passage"])[0] != "supported"]
    assert len(caught) >= 15  # checker 3 caught 9 of 77 near misses; this one 20 (bench/support_calibration.py)
