"""Is a fact present in a text (a must-fact in an answer, a cited sentence's figure in its source)?
Fuzzy on wording, exact on numbers.

Both texts are first brought to one canonical form, so that formatting never decides: case,
whitespace, punctuation, currency symbols and codes, thousands separators, scale words ("$36.2M",
"$36.2 million" and "$36,200,000" all become 36200000), number words ("twenty-two" -> 22),
"percent" -> %, "3x" and "3-fold" -> "3 times", and dates ("April 1, 2022", "1st April 2022", "2022-04-01" -> "1 april 2022").
`span_present`, the first must-fact matcher (grading/fact_match.py builds on it; the citation check looks
a sentence's figures and names up with it): a fact is present when its canonical form occurs among the
text's tokens, or when rapidfuzz's partial_ratio finds a close passage that also holds every number of the fact exactly:
"5.9%" never matches "5.8%", nor "2,187,500" "2,187,600". A figure in accounting notation,
"(1,925)", is read as statements print it, possibly in thousands or millions: "$1.925 million" holds it.
"""

from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation

from rapidfuzz import fuzz

FUZZY_THRESHOLD = 90  # partial_ratio, 0-100: tolerates a typo or a dropped word, not a different fact

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(\d{{4}})\b")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# Dates as running text writes them, in any case: "31 March 2029", "March 31, 2029", "2029-03-31", "March 2029".
DATE_IN_TEXT = re.compile("|".join(p.pattern for p in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR, _ISO_DATE))
                          + rf"|\b{_MONTH}\s+\d{{4}}\b", re.I)

_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
          "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_NUMBER_WORD = re.compile(rf"\b(?:({'|'.join(_TENS)})(?:[- ]({'|'.join(_SMALL[1:10])}))?|({'|'.join(_SMALL)}))\b")

_SCALES = {"thousand": 3, "k": 3, "million": 6, "mn": 6, "m": 6, "billion": 9, "bn": 9, "b": 9}
# A number with optional thousands separators, decimals and scale; a one-letter scale must be attached
# ("36.2M"), so "180 m" stays metres. The lookbehind keeps "1.25" or "2,187,500" from being read mid-way.
_NUMBER = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?"
                     r"(?:\s*(thousand|million|billion|mn|bn)\b|(k|m|b)\b)?")
_NUMBER_TOKEN = re.compile(r"\d+(?:\.\d+)?")
_TIMES = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:x|×|-?fold)(?![\w])")
ACCOUNTING = re.compile(r"\(\s*[$£€]?\s*(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s*\)")


@functools.lru_cache(maxsize=256)  # a cited source is checked against each fact of each sentence citing it
def normalize(text: str) -> str:
    """The canonical form both sides of a comparison are brought to."""
    text = text.lower().replace("\u00a0", " ")
    text = _ISO_DATE.sub(_iso_date, text)
    text = _DAY_MONTH_YEAR.sub(lambda m: f"{int(m[1])} {_month(m[2])} {m[3]}", text)
    text = _MONTH_DAY_YEAR.sub(lambda m: f"{int(m[2])} {_month(m[1])} {m[3]}", text)
    text = _NUMBER_WORD.sub(_number_word, text)
    text = re.sub(r"\s*\bper\s*cent\b|\s*\bpercent\b", "%", text)
    text = re.sub(r"\bus\$|[$£€¥]|\b(?:usd|eur|gbp)\b", " ", text)
    text = _NUMBER.sub(_number, text)
    text = _TIMES.sub(r"\1 times", text)  # "3x", "3×", "3-fold": "3 times"
    text = re.sub(r"['’`]", "", text)  # "attorneys' fees", "Larchmont's"
    text = text.replace("&", " and ").replace("%", " % ")
    text = re.sub(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])", " ", text)  # "FY2024" -> "fy 2024", "Q3" -> "q 3"
    text = re.sub(r"[^a-z0-9.% ]+", " ", text)
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)  # a dot survives only as a decimal point
    return " ".join(text.split())


def numbers(canonical: str) -> set[str]:
    """The numbers among the tokens of a canonical text, each in one spelling."""
    return {_canonical_number(t) for t in canonical.split() if _NUMBER_TOKEN.fullmatch(t)}


def span_present(fact: str, text: str) -> bool:
    """The fact's canonical form among the text's tokens, or a close passage holding its numbers."""
    f, t = normalize(fact), normalize(text)
    if accounting := ACCOUNTING.fullmatch(fact.strip()):
        digits = accounting[1].replace(",", "") + (accounting[2] or "")
        return any(_canonical_number(digits, scale) in numbers(t) for scale in (0, 3, 6))
    if not f:
        return False
    if f" {f} " in f" {t} ":
        return True
    if len(t) < len(f):  # partial_ratio would look for the answer inside the fact
        return False
    alignment = fuzz.partial_ratio_alignment(f, t)
    if alignment is None or alignment.score < FUZZY_THRESHOLD:
        return False
    # Numbers are checked in the matched passage itself, widened to whole tokens: a fuzzy match on
    # the words must not borrow an exact number from elsewhere in the answer.
    start, end = alignment.dest_start, alignment.dest_end
    while start > 0 and t[start - 1] != " ":
        start -= 1
    while end < len(t) and t[end] != " ":
        end += 1
    return numbers(f) <= numbers(t[start:end])


def _month(name: str) -> str:
    return next(m for m in _MONTHS if m.startswith(name.rstrip(".")[:3]))


def _iso_date(match: re.Match[str]) -> str:
    year, month, day = int(match[1]), int(match[2]), int(match[3])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match[0]
    return f"{day} {_MONTHS[month - 1]} {year}"


def _number_word(match: re.Match[str]) -> str:
    if match[3]:
        return str(_SMALL.index(match[3]))
    value = 20 + 10 * _TENS.index(match[1])
    return str(value + (_SMALL.index(match[2]) if match[2] else 0))


def _number(match: re.Match[str]) -> str:
    digits = match[1].replace(",", "") + (match[2] or "")
    scale = _SCALES[match[3] or match[4]] if (match[3] or match[4]) else 0
    return f" {_canonical_number(digits, scale)} "


def _canonical_number(digits: str, scale: int = 0) -> str:
    try:
        value = Decimal(digits).scaleb(scale)
    except InvalidOperation:
        return digits
    return format(value.normalize(), "f")
