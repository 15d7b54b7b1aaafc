"""The must-fact matcher that reads claims (grading/fact_match.py): a fact's numbers exact, its words
stemmed and in any order within one passage of the answer, a different number in the fact's slot or a
negation marked as a contradiction, and every verdict with the passage it rests on."""

from __future__ import annotations

import pytest

from searchbox.grading.fact_match import match_fact
from searchbox.grading.lexical import answer_verdict, fact_verdict
from searchbox.citations.facts import span_present

# Issue 22's answer: the first matcher found only "1 April 2022" in it.
MSA = ("The Master Subscription Agreement runs for an initial three-year term that began on 1 April 2022, and it "
       "renews for successive twelve-month periods unless either party gives 90 days notice.")


@pytest.mark.parametrize("fact", ["the initial term lasts three years", "the term began on 1 April 2022",
                                  "renewals are for twelve months", "notice of 90 days is needed to stop renewal",
                                  "three (3) years", "1 April 2022"])
def test_the_issues_answer_holds_each_of_its_claims(fact: str) -> None:
    match = match_fact(fact, MSA)
    assert match.status == "present", match.explain()
    assert match.passage and match.passage in MSA


@pytest.mark.parametrize(("fact", "answer"), [
    ("the network has six layers", "It is a six-layer network."),  # hyphenation and inflection
    ("renewals are for twelve months", "It renews every twelve months."),
    ("notice of 90 days is needed", "either party gives 90 days' notice"),  # word order
    ("broken object-level authorisation", "a broken object level authorization flaw"),  # spelling variant
    ("h11 contains no I/O code", "h11 contains no IO code whatsoever"),  # letters run together
    ("Rich requires Python 3.8 or later", "It needs Python 3.8 or later to run Rich."),
])
def test_wording_is_tolerated(fact: str, answer: str) -> None:
    assert match_fact(fact, answer).present, match_fact(fact, answer).explain()


@pytest.mark.parametrize(("fact", "answer", "expected", "found"), [
    ("three (3) years", "The MSA has an initial two-year term.", "3", "2"),
    ("prime rate plus 1.25%", "prime rate plus 1.5%, with a floor of 1.25%", "1.25%", "1.5%"),
    ("renewals are for twelve months", "The initial term is twelve months, and renewals are for two years.", "12", "2"),
    ("1 April 2022", "It began on 1 May 2022.", "april", "may"),
    ("the initial term lasts three years", "The initial term is two years.", "3", "2"),
])
def test_a_different_number_in_the_facts_slot_is_a_contradiction(fact: str, answer: str, expected: str,
                                                                 found: str) -> None:
    match = match_fact(fact, answer)
    assert match.status == "contradicted"
    assert (match.conflict["expected"], match.conflict["found"]) == (expected, found)
    assert f"{found} where the fact has {expected}" in match.explain()


@pytest.mark.parametrize(("fact", "answer"), [
    ("the opinion was modified", "The opinion was not modified."),
    ("not modified", "The opinion was modified."),
    ("Quillmoor holds no patents in Japan", "Quillmoor holds patents in Japan and the US."),
])
def test_a_fact_of_the_other_polarity_is_contradicted(fact: str, answer: str) -> None:
    match = match_fact(fact, answer)
    assert match.status == "contradicted" and "polarity" in match.conflict


def test_a_fuzzy_match_of_the_other_polarity_is_no_longer_present() -> None:
    fact, answer = "Quillmoor holds no patents in Japan", "Quillmoor holds patents in Japan and the US."
    assert span_present(fact, answer)  # partial_ratio >= 90 with the numbers: the first matcher said present
    assert not match_fact(fact, answer).present


@pytest.mark.parametrize(("fact", "answer"), [
    ("The opinion was not modified", "No: the opinion was unmodified."),
    ("Sorted Containers needs no C compiler", "No. You never need a C compiler for Sorted Containers."),
])
def test_a_denial_in_other_words_holds_a_fact_that_denies(fact: str, answer: str) -> None:
    assert match_fact(fact, answer).present, match_fact(fact, answer).explain()


@pytest.mark.parametrize(("fact", "answer"), [
    ("$118.40", "$118.00 per unit, or 118 dollars and 40 cents"),
    ("1 April 2022", "On 1 site, installation began in April 2022."),  # the numbers, but not as one date
    ("20640", "20,460 instances"),
    ("5.9%", "churn of 5.9 points"),
    ("2,187,500 shares", "2,187,600 shares were issued, and 500 later"),
    ("three exercise and three physiological variables", "three exercise variables and a physiological one"),
])
def test_short_spans_and_numbers_stay_exact(fact: str, answer: str) -> None:
    assert not match_fact(fact, answer).present


def test_an_approximate_figure_is_no_contradiction_of_one_it_rounds() -> None:
    rounded = match_fact("RCV1 has 804414 samples", "RCV1 has about 800,000 samples.")
    assert rounded.status == "absent" and "804414" in rounded.missing
    assert match_fact("RCV1 has 804414 samples", "RCV1 has about 600,000 samples.").status == "contradicted"


def test_the_question_may_give_the_subject_the_answer_leaves_out() -> None:
    question = "How big is scikit-learn's California Housing dataset?"
    assert match_fact("The dataset has 20,640 instances", "20,640 instances.", question).present
    assert not match_fact("The dataset has 20,640 instances", "20,640 instances.").present
    # A subject the answer names elsewhere is not given: it must stand in the passage.
    asked = "What are the initial term and the renewal period?"
    answer = "The initial term is two years; renewals are for twelve months."
    match = match_fact("renewals are for two years", answer, asked)
    assert match.status == "contradicted" and match.conflict["beside"] == "renewals"
    # And what the question gives is never enough alone.
    assert not match_fact("max_body_size limits the total request body", "Use a dependency.",
                          "How do I limit the total request body?").present


def test_every_verdict_says_what_it_rests_on() -> None:
    answer = "Pellworth & Strand LLP audited FY2024. Its report is dated 28 March 2025; the fee was $196,000."
    found = match_fact("the audit report is dated 28 March 2025", answer)
    assert found.status == "present" and found.passage == "Its report is dated 28 March 2025"
    assert found.explain() == 'claim: "Its report is dated 28 March 2025"'
    missing = match_fact("Pellworth & Strand LLP is based in Minneapolis", answer)
    assert missing.status == "absent" and missing.missing == ["based", "minneapolis"]
    assert missing.explain() == 'missing based, minneapolis; closest "Pellworth & Strand LLP audited FY2024."'
    contradicted = match_fact("the audit fee for FY2025 was $214,000", answer)
    assert contradicted.explain() == ("2024 where the fact has 2025 (beside 'fy') in "
                                      '"Pellworth & Strand LLP audited FY2024."')
    nothing = match_fact("Gwendolyn Ostrowski chairs the committee", answer)
    assert nothing.status == "absent" and nothing.passage is None and nothing.explain().startswith("missing ")
    assert set(found.as_dict()) == {"status", "rule", "style", "passage", "missing", "conflict"}


@pytest.mark.parametrize(("fact", "answer", "status"), [
    ("3x", "It is three times faster.", "present"),
    ("three times faster", "It runs 3x faster.", "present"),
    ("a 3-fold gain", "a three times gain", "present"),
    ("181K", "The corpus holds 181,000 documents.", "present"),
    ("15%", "Churn rose 15 percent.", "present"),
    ("4.6M parameters", "It has 4.6 million parameters.", "present"),
    ("dataset name: Linnaeus-Clean", "The dataset is called Linnaeus-Clean.", "present"),
    ("dataset name: Linnaeus-Clean", "Linnaeus-Clean is the tokenizer.", "absent"),  # the value under another label
    ("Missing Attribute Values: None", "None of the values are missing.", "absent"),  # a plain word is no value
    ("37.8 million parameters", "It has a total of 500,000 parameters.", "contradicted"),
])
def test_number_forms_and_labelled_facts(fact: str, answer: str, status: str) -> None:
    assert match_fact(fact, answer).status == status


def test_a_wrong_figure_makes_the_answer_wrong_not_partial() -> None:
    assert answer_verdict(["present", "contradicted"]) == "wrong"
    assert answer_verdict(["present", "absent"]) == "partial"
    assert answer_verdict(["present", "present"]) == "correct" and answer_verdict(["absent"]) == "wrong"


# Three answers of the 2026-12-05 hits-shown sweep whose grader-3 labels a reading overturned.
ROOTMODEL = ("The FastAPI agent skill recommends Pydantic RootModel for list responses because it allows FastAPI to "
             "automatically create a Pydantic `TypeAdapter` for the type annotations, making the types work normally "
             "without the need for custom wrapper models.")
THREADPOOLCTL = ("The command to describe the thread pools loaded when importing numpy and scipy.linalg is python3 -c "
                 "\"import threadpoolctl; print(threadpoolctl.threadpool_info())\" [s1].")


def test_a_denial_of_something_else_does_not_hold_a_fact_that_denies() -> None:
    match = match_fact("Do not use Pydantic RootModels", ROOTMODEL)
    assert match.status == "contradicted" and match.conflict == {"polarity": "asserted where the fact denies"}
    assert match_fact("Do not use Pydantic RootModels", "Pydantic RootModels are not recommended here.").present


def test_a_command_is_found_as_written_not_by_the_words_another_command_shares() -> None:
    fact = "python -m threadpoolctl -i numpy scipy.linalg"
    assert match_fact(fact, THREADPOOLCTL).status == "absent"
    assert match_fact(fact, THREADPOOLCTL).style == "code"
    assert match_fact(fact, "Run `python -m threadpoolctl -i numpy scipy.linalg` [s1].").present


def test_facts_the_question_itself_states_earn_no_partial_credit() -> None:
    question = "What is the default ping interval of sse-starlette's EventSourceResponse?"
    echo = "The ping interval used by default by sse-starlette's EventSourceResponse is 10 seconds."
    facts = [fact_verdict(fact, "must", echo, question) for fact in ("15", "ping")]
    assert [f.status for f in facts] == ["absent", "present"] and [f.asked for f in facts] == [False, True]
    assert answer_verdict([f.status for f in facts], [f.asked for f in facts]) == "wrong"
    right = [fact_verdict(fact, "must", "It pings every 15 seconds.", question) for fact in ("15", "ping")]
    assert answer_verdict([f.status for f in right], [f.asked for f in right]) == "correct"
    assert answer_verdict(["present", "absent"], [False, True]) == "partial"  # a fact of its own: partial
