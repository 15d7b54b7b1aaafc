"""Does the cited source support the sentence that cites it? Each citation of an answer is checked
and given a verdict, `supported`, `contradicted`, `unsupported` or `unchecked`, with the reason.

Two readings, in turn: the words (below), then the claim held to the source's statements
(citations/claims.py): a figure the source ties to another year, figures standing apart, or a clause
that denies or defers the claim ("unaudited", "begins in February 2026") make a citation the words
supported unsupported or contradicted.

The check rests on what can be checked: the sentence's facts (dates, amounts, percentages, other
numbers, names) looked for in the source's text after the normalisation must-facts get (citations/facts.py:
case, thousands separators, currency symbols, scale words, dates written any way); an amount or a
percentage rounded in the answer ("$48.2 million" for 48,213,000) still matches. Beside that, a
support score: the embedder's cosine between the sentence and the source's passages most like it.

- A figure (date, amount, percentage, number) found in none of the sentence's cited sources makes
  the citation unsupported: the answer states a figure its sources do not hold.
- A source holding none of the sentence's facts is unsupported unless its score says it paraphrases.
- Without a figure found in the source, a name the cited sources lack makes it unsupported (a
  single common word only on a low score).
- A sentence with nothing checkable is supported on a high score, otherwise unchecked, as is a
  citation whose source cannot be read (or that has no score where one would decide).
- A quoted citation, [s3 "words"], is unsupported when the words are not in the source.

The source texts and the embedder come from the caller (the workspace), so this stays plain logic.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from searchbox.citations.claims import is_period, period_spans, read_claim
from searchbox.citations.judge import SupportJudge
from searchbox.citations.markers import citing_sentences
from searchbox.citations.facts import DATE_IN_TEXT, normalize, numbers, span_present

VERDICTS = ("supported", "contradicted", "unsupported", "unchecked")
# Raised when a rule changes a verdict: grading checks again a run an older rule checked (grading/citation_scores.py).
# 2: a source cited beside others that holds only what they hold and none of the figures is unsupported.
# 3: text the answer only echoed from the harness's messages is not checked (records/echoes.py).
# 4: the claim is held to the source's statements (citations/claims.py): a figure tied there to another year,
#    figures standing apart, or a clause that denies or defers the claim; `contradicted` is new.
# 5: a source that holds only the years or periods a sentence names, none of what it says of them, is unsupported.
# 6: a period ("FY2025", "Q3 2023") is a fact of its own, never part of a name or a figure; "No. 1" denies nothing.
CHECKER_VERSION = 6
# all-MiniLM cosine between a sentence and the built-in dataroom's passages: 0.46-0.60 where the passage
# states it, 0.15-0.38 where it is on another matter (bench/citation_checks.py prints them).
SUPPORT_SCORE = 0.45
MAX_CHECKS = 200  # an answer citing more is checked this far (the recorder checks each new answer)
_PASSAGE_CHARS = 900  # about the embedder's 256-token window
_PASSAGES_SCORED = 3

_AMOUNT = re.compile(r"(?:US\$|[$£€¥]|\b(?:USD|EUR|GBP)\s?)\s?\d[\d,]*(?:\.\d+)?"
                     r"(?:\s?(?:thousand|million|billion|mn|bn)\b|[kKmMbB]\b)?")
_PERCENT = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:%|percent\b|per cent\b)", re.I)
_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?:\s?(?:thousand|million|billion|mn|bn)\b)?(?![\w])")
_SCALE = {"thousand": 3, "k": 3, "million": 6, "mn": 6, "m": 6, "billion": 9, "bn": 9, "b": 9}
_WRITTEN = re.compile(r"(\d[\d,]*)(?:\.(\d+))?\s?(thousand|million|billion|mn|bn|[kmb])?\b", re.I)
# Statements that say their figures are in thousands or millions: "$25.9 million" holds their "25,870".
_IN_UNITS = (re.compile(r"\bin thousands\b|\$\s?000s?\b|\bUSD\s?000s?\b", re.I), re.compile(r"\bin millions\b", re.I))
_WORD = r"[A-Z][\w&'’\-]*"
_NAME = re.compile(rf"\b{_WORD}(?:(?:\s+(?:of|&|de|for|the))*\s+{_WORD})*")  # "and" parts two names
# Capitalised for grammar, not because they name something.
_NOT_NAMES = {"the", "a", "an", "in", "on", "at", "as", "by", "for", "per", "under", "according", "this", "that",
              "these", "those", "its", "their", "it", "they", "there", "i", "we", "yes", "no", "not", "note", "and",
              "or", "but", "if", "so", "both", "each", "all", "total", "source", "sources", "answer", "however",
              "also", "which", "after", "before", "from", "to", "with", "when", "since", "during", "between",
              "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
              "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
_WORDS = re.compile(r"[a-z0-9]+")


class UnreadableSource(Exception):
    """The cited source's text cannot be had (its file is gone or cannot be extracted): the reason."""


SourceText = Callable[[str], str]  # source id -> its text; raises UnreadableSource
Support = Callable[[str, list[str]], list[float]]  # (sentence, passages) -> cosine of each


@dataclass(frozen=True)
class Fact:
    text: str  # as the sentence writes it
    kind: str  # date, amount, percent, number, name

    @property
    def is_figure(self) -> bool:
        return self.kind != "name"

    @property
    def is_specific(self) -> bool:
        """A figure, or a name no source would hold by chance: several words, an acronym, "TideLine"."""
        return self.is_figure or " " in self.text or _is_proper(self.text)


@dataclass
class CitationCheck:
    id: str
    occurrence: int  # this id's n-th citation in the answer, as citations.markers numbers them
    sentence: str
    verdict: str
    reason: str
    matched: list[str] = field(default_factory=list)  # the sentence's facts found in this source
    missing: list[str] = field(default_factory=list)  # the sentence's facts in none of its cited sources
    score: float | None = None
    quote: str | None = None
    quote_found: bool | None = None
    verdict_by: str = f"checker {CHECKER_VERSION}"  # the rule or judge that gave the verdict
    judge: dict[str, Any] | None = None  # the judge's reading, when one read this citation (citations/judge.py)


def sentence_facts(sentence: str) -> list[Fact]:
    """The checkable content of a sentence: dates, amounts, percentages, numbers of two digits or more
    (or with decimals or a scale), and names (runs of capitalised words, not the word opening it)."""
    facts: list[Fact] = []
    rest = sentence
    # A period is a fact of its own, never part of a figure or a name: "Pellworth & Strand LLP for FY2025"
    # is two facts, "Q3 2023" one.
    periods = []
    for start, end in period_spans(rest):
        periods.append(Fact(rest[start:end], "name"))
        rest = rest[:start] + " " * (end - start) + rest[end:]
    for kind, pattern in (("date", DATE_IN_TEXT), ("amount", _AMOUNT), ("percent", _PERCENT), ("number", _NUMBER)):
        for match in pattern.finditer(rest):
            text = match[0].strip()
            if kind != "number" or re.search(r"\d\d|[.]\d|[a-z]", text):
                facts.append(Fact(text, kind))
        rest = pattern.sub(lambda m: " " * len(m[0]), rest)
    facts += periods
    for match in _NAME.finditer(rest):
        words = match[0].split()
        while words and words[0].lower().strip("'’") in _NOT_NAMES:
            words.pop(0)
        at_start = not sentence[:match.start()].strip(" *_\"“(")
        if len(words) == 1 and at_start and words[0] == match[0] and not _is_proper(words[0]):
            continue  # "Revenue grew..." : capitalised because it opens the sentence
        if words:
            facts.append(Fact(" ".join(words), "name"))
    return list(dict.fromkeys(facts))


def fact_in(fact: Fact, source: str, document: str | None = None) -> bool:
    """`document`: the whole text `source` is a passage of, when it is one (it may say "in thousands")."""
    if span_present(fact.text, source):
        return True
    return fact.kind in ("amount", "percent") and _rounded_in(fact, source, document or source)


def quote_in(quote: str, source: str) -> bool:
    """The quoted words in the source, whatever the case, spacing, dashes and quote marks."""
    return _plain(quote) in _plain(source)


def passages(sentence: str, text: str) -> list[str]:
    """The few windows of the source that share the most words with the sentence: what is embedded."""
    if len(text) <= _PASSAGE_CHARS:
        return [text]
    step = _PASSAGE_CHARS * 2 // 3
    windows = [text[i:i + _PASSAGE_CHARS] for i in range(0, max(len(text) - _PASSAGE_CHARS // 3, 1), step)]
    wanted = set(_WORDS.findall(sentence.lower()))
    ranked = sorted(range(len(windows)), key=lambda i: -len(wanted & set(_WORDS.findall(windows[i].lower()))))
    return [windows[i] for i in sorted(ranked[:_PASSAGES_SCORED])]


def check_answer(answer: str, known_ids: set[str], source_text: SourceText, support: Support | None,
                 read_claims: bool = True, judge: SupportJudge | None = None) -> list[CitationCheck]:
    """A check for every citation of every citing sentence, in reading order. `read_claims` False checks by
    the words alone, as checker 3 did (bench/support_calibration.py sets the two side by side). A `judge`
    reads each citation the words did not already rule out (below, _judged)."""
    texts: dict[str, str | UnreadableSource] = {}

    def text_of(source_id: str) -> str | UnreadableSource:
        if source_id not in texts:
            try:
                texts[source_id] = source_text(source_id)
            except UnreadableSource as exc:
                texts[source_id] = exc
        return texts[source_id]

    checks: list[CitationCheck] = []
    for sentence in citing_sentences(answer):
        if len(checks) >= MAX_CHECKS:
            checks.extend(CitationCheck(c.id, c.occurrence, sentence.text, "unchecked", f"past the first {MAX_CHECKS} "
                                        "citations of the answer", quote=c.quote) for c in sentence.citations)
            continue
        facts = sentence_facts(sentence.text)
        readable = {c.id: t for c in sentence.citations if c.id in known_ids and isinstance(t := text_of(c.id), str)}
        held = {source_id: {f.text for f in facts if fact_in(f, text)} for source_id, text in readable.items()}
        found_anywhere = set().union(*held.values())
        missing = [f for f in facts if f.text not in found_anywhere]
        for citation in sentence.citations:
            check = CitationCheck(citation.id, citation.occurrence, sentence.text, "unchecked", "",
                                  missing=[f.text for f in missing], quote=citation.quote)
            if citation.id not in known_ids:
                check.verdict, check.reason = "unsupported", f"{citation.id} is not in the source ledger"
            elif citation.id not in readable:
                check.reason = f"the source's text could not be read: {text_of(citation.id)}"
            else:
                text = readable[citation.id]
                check.matched = [f.text for f in facts if f.text in held[citation.id]]
                check.score = _score(support, sentence.text, text)
                if citation.quote is not None:
                    check.quote_found = quote_in(citation.quote, text)
                others = set().union(*(h for source_id, h in held.items() if source_id != citation.id))
                check.verdict, check.reason = _verdict(facts, missing, check, others)
                if read_claims and check.verdict != "unchecked" and check.quote_found is not False and check.matched:
                    check.verdict, check.reason = _as_read(sentence.text, facts, check, text)
                if judge is not None and check.quote_found is not False and check.verdict != "contradicted" \
                        and not any(f.is_figure for f in missing):
                    _judged(judge, check, text)
            checks.append(check)
    return checks


def citation_record(answer: str, ids: list[str], invalid: list[str], checks: list[CitationCheck],
                    score_model: str | None, judge: str | None = None) -> dict[str, Any]:
    """What run_meta.json holds under "citations": validity against the ledger and the checks."""
    counts = {verdict: sum(c.verdict == verdict for c in checks) for verdict in VERDICTS}
    return {
        "cited": ids, "valid": len(ids) - len(invalid), "invalid": len(invalid), "invalid_ids": invalid,
        "checked": len(checks), **counts,
        "supported_rate": round(counts["supported"] / len(checks), 4) if checks else None,
        "score_model": score_model,
        "answer_sha256": answer_digest(answer),
        "checker": CHECKER_VERSION,
        "judge": judge,  # the support judge's model, when one read the citations
        "checks": [asdict(c) for c in checks],
    }


def answer_digest(answer: str) -> str:
    """Ties recorded checks to the answer they were made on: the panel shows them only on that answer."""
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


def _verdict(facts: list[Fact], missing: list[Fact], check: CitationCheck, others: set[str]) -> tuple[str, str]:
    """`others`: the facts the sentence's other cited sources hold."""
    score, supported_by_score = check.score, check.score is not None and check.score >= SUPPORT_SCORE
    similarity = "no score" if score is None else f"similarity {score:.2f}"
    if check.quote_found is False:
        return "unsupported", "the quoted words are not in the source"
    quoted = "; the quote is in the source" if check.quote_found else ""
    if not facts:
        if check.quote_found or supported_by_score:
            return "supported", f"nothing to look up in the sentence; {similarity}{quoted}"
        return "unchecked", f"nothing to look up in the sentence; {similarity}"
    figures = [f.text for f in missing if f.is_figure]
    if figures:
        return "unsupported", f"in none of the cited sources: {', '.join(figures)}"
    if not check.matched:
        if supported_by_score:
            return "supported", f"none of the facts here, but {similarity} (paraphrase){quoted}"
        if score is None:
            return "unchecked", "none of the sentence's facts are in this source, and no score to judge by"
        return "unsupported", f"none of the sentence's facts are in this source ({similarity})"
    found = f"found: {', '.join(check.matched)}"
    # Years and periods say what a claim is about; a source that holds only those (a balance sheet cited for
    # who audited FY2022 to FY2025) does not state the names or figures it says of them.
    said = [f.text for f in facts if f.is_specific and not is_period(f.text)]
    if said and all(is_period(m) for m in check.matched):
        return "unsupported", f"{found}, only the years or periods it is about; not in this source: {', '.join(said)}"
    # A source cited beside others that holds only what they hold, and none of the sentence's figures
    # (the company's name, say, where the others hold the amount), does not carry the claim.
    figures = [f.text for f in facts if f.is_figure]
    if figures and not set(figures) & set(check.matched) and set(check.matched) <= others:
        return "unsupported", f"{found} (as the other cited sources do), but none of the figures: {', '.join(figures)}"
    not_found = f"; not found: {', '.join(f.text for f in missing)}" if missing else ""
    # A figure found here carries the claim; without one, a name the sources lack is what the sentence says.
    if missing and not any(f.is_figure and f.text in check.matched for f in facts):
        specific = [f.text for f in missing if f.is_specific]
        if specific:
            return "unsupported", f"{found}; in none of the cited sources: {', '.join(specific)}"
        if score is None:
            return "unchecked", f"{found}{not_found}; no score to judge by"
        if not supported_by_score:
            return "unsupported", f"{found}{not_found} ({similarity})"
    return "supported", f"{found}{not_found}{quoted}"


def _as_read(sentence: str, facts: list[Fact], check: CitationCheck, text: str) -> tuple[str, str]:
    """The verdict once the claim is held to what the source states (citations/claims.py): a denial makes
    it contradicted, a figure tied to another subject or standing apart unsupported."""
    kinds = {f.text: f for f in facts}
    figures = {f: kinds[f].kind for f in check.matched if kinds[f].is_figure}
    names = [f for f in check.matched if not kinds[f].is_figure]
    reading = read_claim(sentence, figures, names, text, lambda fact, clause: fact_in(kinds[fact], clause, text))
    if reading.verdict == "contradicted" or (reading.verdict == "unsupported" and check.verdict == "supported"):
        return reading.verdict, reading.reason
    if check.verdict == "supported" and reading.reason:
        return "supported", f"{check.reason}; {reading.reason}"
    return check.verdict, check.reason


def _judged(judge: SupportJudge, check: CitationCheck, text: str) -> None:
    """The judge's reading decides a citation the words left open: one with no figure missing from its
    sources, no quote the source lacks and no denial the claim reading found (those stand as the words
    say). A reading whose quote the source does not hold, or that cannot be read, leaves the words'
    verdict, and says why."""
    reading = judge.read(check.sentence, "\n…\n".join(passages(check.sentence, text)))
    check.judge = {"model": judge.name, "verdict": reading.verdict, "quote": reading.quote, "raw": reading.raw,
                   "seconds": round(reading.seconds, 3), "prompt_tokens": reading.prompt_tokens,
                   "output_tokens": reading.output_tokens, "words": check.verdict}
    if reading.verdict == "unknown":
        check.reason += f"; {reading.reason}, so the words' verdict stands"
    elif reading.verdict != "unsupported" and (reading.quote is None or not quote_in(reading.quote, text)):
        check.reason += f"; the judge read {reading.verdict}, but its quote is not in the source, so the words' verdict stands"
    else:
        check.verdict, check.verdict_by = reading.verdict, f"judge {judge.name}"
        check.reason = f"{reading.reason} ({judge.name}); the words: {check.reason}"


def _score(support: Support | None, sentence: str, text: str) -> float | None:
    if support is None or not text.strip():
        return None
    scores = support(sentence, passages(sentence, text))
    return round(float(max(scores)), 4) if len(scores) else None


def _rounded_in(fact: Fact, source: str, document: str) -> bool:
    """An amount or percentage the answer rounded: "$48.2 million" holds 48,213,000, "17%" 17.3%, and a
    statement "in thousands" holds "$25.9 million" as 25,870."""
    written = _WRITTEN.search(fact.text)
    if written is None:
        return False
    decimals = len(written[2] or "")
    scale = _SCALE.get((written[3] or "").lower(), 0)
    if fact.kind == "amount" and not scale and not decimals:
        return False  # "$118" is exact as written; rounding shows in a scale or decimals
    value = Decimal(written[1].replace(",", "") + (f".{written[2]}" if written[2] else "")).scaleb(scale)
    half_unit = Decimal(5).scaleb(scale - decimals - 1)
    tokens = normalize(source).split()
    candidates = [t for i, t in enumerate(tokens) if fact.kind != "percent" or tokens[i + 1:i + 2] == ["%"]]
    units = [0] + [3 * (k + 1) for k, said in enumerate(_IN_UNITS) if fact.kind == "amount" and said.search(document)]
    return any(abs(Decimal(n).scaleb(unit) - value) <= half_unit
               for n in numbers(" ".join(candidates)) for unit in units)


def _is_proper(word: str) -> bool:
    """A word that is a name wherever it stands: an acronym, or capitals or digits inside ("TideLine")."""
    return word.isupper() and len(word) > 1 or any(ch.isupper() or ch.isdigit() for ch in word[1:])


def _plain(text: str) -> str:
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text.lower())
    text = re.sub(r"[\u2018\u2019\u201c\u201d\"'`]", "", text)
    return " ".join(text.split())
