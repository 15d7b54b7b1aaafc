"""Does the cited passage state the sentence's claim, or only hold its words? (design §2.5)

`citations/check.py` first asks whether the sentence's figures and names occur in the source. That is
not support: the "Read me" sheet of the built-in financials holds "FY2025", "Pellworth & Strand LLP" and
"28 March 2025", and says that Pellworth & Strand audited FY2023 and FY2024 and that FY2025 is unaudited.
This module reads the source as statements and holds the claim to them:

- The source is cut into units (a sentence, or a table row) and each unit into clauses (at ";", ": ",
  ", ", " - " and the like). A table row's cells are clauses of their own, each read with its column's header:
  "Total revenue | 17500 | 23720" under "USD thousands | FY2022 | FY2023" reads "Total revenue FY2023: 23720".
- **Qualifiers**: a claim's years and periods (FY2025, Q3 2024, 2023; not the year inside a date) name
  what it is about. A figure the claim states (or, when it states none, its names) must stand in the
  source where no other year is named, or where the claim's own is: "28 March 2025" standing in "FY2023 and
  FY2024 are audited by ..." is tied to FY2023 and FY2024, not FY2025, and the citation is unsupported.
- **Together**: two or more figures of one kind (amounts, dates, ...) in one part of the claim (a sentence is cut at ";", ", ", "and",
  "with", ...) must stand in one unit of the source, or two adjacent ones; each figure is held to its
  own part's qualifiers, where that part names any.
- **Denial**: a clause of the source about the claim's subject (its qualifier; without one, one of its
  names) that denies or defers what the claim says makes the citation `contradicted`: "unaudited" for
  "audited", "not" / "no" / "never" just before one of the claim's words, or a cue that the thing is not yet
  done ("begins in", "planned", "expected", "preliminary", "draft", "pending", ...) where the claim says it
  was done (one of its past participles, "audited", in that clause). A claim that says the cue itself
  ("the audit begins in February 2026") is not denied by it.

Each reading names the clause it rests on, so a reader can check the verdict against the source.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import Stemmer

from searchbox.citations.facts import DATE_IN_TEXT

_STEMMER = Stemmer.Stemmer("english")
_QUALIFIER = re.compile(r"\b(?:(FY|CY|Q[1-4]|H[12])\s?-?\s?((?:19|20)?\d{2})|((?:19|20)\d{2}))\b")
_CLAUSE_BREAK = re.compile(r";\s*|:\s+|,\s+(?!\d{3}\b)|\s[–—-]\s|\s*\|\s*")
# A sentence's parts, each one claim: "... expires on 31 May 2028, with base rent of $23.50 per RSF".
_CLAIM_BREAK = re.compile(r";\s*|,\s+(?!\d{3}\b)|\s(?:and|with|while|whereas|but|plus)\s")
_UNIT_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"“])")
_TOKEN = re.compile(r"[a-z][a-z'’-]*")
_NUMBER_SIGN = re.compile(r"\b[Nn]os?\.\s*(?=\d)")  # "No. 1", "Nos. 3": the abbreviation of "number"
_NEGATIONS = frozenset("""not no never none without nor cannot isnt wasnt werent arent hasnt havent hadnt doesnt dont
didnt cant wont couldnt shouldnt wouldnt""".split())
_EXCEPTIONS = frozenset("beyond except but besides other than".split())  # "no advantages beyond backwards compatibility"
_NEGATION_REACH = 5  # "not something that could directly replace": words a negation reaches, within its clause
# Cues that the thing is not done yet, or not final: they defer a claim that says it was done.
_DEFERRALS = ("begins", "begin", "will", "planned", "plans", "plan", "expected", "expects", "scheduled", "pending",
              "preliminary", "draft", "proposed", "upcoming", "forthcoming", "yet", "starts", "tentative",
              "provisional", "intends", "intended", "awaiting", "unsigned")
_STOP = frozenset("""the and for with that this from into were was are is been being have has had its their than then
which who whom what when where while also only such each other about over under after before since during by of to in
on at as or an a be it they there these those""".split())
_WINDOW = 2  # "together": in one unit or this many adjacent ones


@dataclass(frozen=True)
class Qualifier:
    year: int
    period: str  # "", "q3", "h1": a quarter or half of the year
    text: str = field(default="", compare=False)  # as the text writes it: "FY2025"

    def same(self, other: Qualifier) -> bool:
        return self.year == other.year and (not self.period or not other.period or self.period == other.period)

    def __str__(self) -> str:
        return self.text or (f"{self.period.upper()} {self.year}" if self.period else str(self.year))


@dataclass(frozen=True)
class Clause:
    text: str
    unit: int  # which unit of the source
    qualifiers: tuple[Qualifier, ...]  # its own, or its unit's where it names none


@dataclass(frozen=True)
class Reading:
    """What the source's statements make of the claim: `verdict` is "contradicted", "unsupported", or None
    (nothing against it), with the reason and the clause it rests on."""
    verdict: str | None
    reason: str
    clause: str | None = None


FactIn = Callable[[str], bool]  # is this fact in this text


def period_spans(text: str) -> list[tuple[int, int]]:
    """Where the text names a period with its prefix ("FY2025", "Q3 2024"; bare years are numbers)."""
    return [m.span() for m in _QUALIFIER.finditer(text) if m[1]]


def is_period(text: str) -> bool:
    """Whether the text is nothing but a year or period ("FY2025", "Q3 2024", "2023"): what a claim is
    about, not what it says of it."""
    return _QUALIFIER.fullmatch(text.strip()) is not None


def qualifiers(text: str) -> tuple[Qualifier, ...]:
    """The years and periods the text names, in order, leaving out the years inside its dates."""
    masked = DATE_IN_TEXT.sub(lambda m: " " * len(m[0]), text)
    found: list[Qualifier] = []
    for match in _QUALIFIER.finditer(masked):
        prefix, short, bare = match[1], match[2], match[3]
        if bare is not None:
            year = int(bare)
        else:
            year = int(short) + (2000 if len(short) == 2 else 0)
        period = prefix.lower() if prefix and prefix[0] in "QH" else ""
        if 1900 <= year <= 2099 and Qualifier(year, period) not in found:
            found.append(Qualifier(year, period, match[0]))
    return tuple(found)


@functools.lru_cache(maxsize=64)
def clauses(text: str) -> tuple[Clause, ...]:
    """The source's clauses, each with the qualifiers it is read under."""
    out: list[Clause] = []
    unit = 0
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.strip() or line.startswith("[sheet ") or line.startswith("[source "):
            header = None
            continue
        if " | " in line:
            cells = [c.strip() for c in line.split("|")]
            if header is None or len(cells) != len(header):
                header = cells  # a table's first row names its columns
                out.append(Clause(line, unit, qualifiers(line)))
            else:
                label = cells[0]
                for name, cell in zip(header[1:], cells[1:]):
                    read = f"{label} {name}: {cell}"
                    out.append(Clause(read, unit, qualifiers(f"{label} {name}")))
            unit += 1
            continue
        header = None
        for sentence in _UNIT_BREAK.split(line):
            own = qualifiers(sentence)
            for part in _CLAUSE_BREAK.split(sentence):
                if part.strip():
                    out.append(Clause(part.strip(), unit, qualifiers(part) or own))
            unit += 1
    return tuple(out)


def read_claim(sentence: str, figures: dict[str, str], names: list[str], source: str,
               fact_in: Callable[[str, str], bool]) -> Reading:
    """The claim of `sentence` (its figures, each with its kind, and names, as citations/check.py found them
    in the source) held to the statements of `source`."""
    parts = clauses(source)
    claim_qualifiers = qualifiers(sentence)
    denial = _denial(sentence, claim_qualifiers, names, figures, parts)
    if denial is not None:
        return denial
    anchors = list(figures) or [n for n in names if not qualifiers(n)]
    where = {fact: found for fact in anchors if (found := [c for c in parts if fact_in(fact, c.text)])}
    for part in _CLAIM_BREAK.split(sentence):  # each figure is held to the qualifiers of its own part
        own = qualifiers(part) or claim_qualifiers
        if not own:
            continue
        for fact in [f for f in where if f in part]:
            tied = [c for c in where[fact] if not c.qualifiers or _shares(c.qualifiers, own)]
            if not tied:
                found = where[fact]
                others = list(dict.fromkeys(str(q) for c in found for q in c.qualifiers))
                return Reading("unsupported", f"the source ties {fact} to {', '.join(others)}, not "
                               f"{', '.join(map(str, own))}: \"{_short(found[0].text)}\"", found[0].text)
            where[fact] = tied
    for part, kind in ((p, k) for p in _CLAIM_BREAK.split(sentence) for k in set(figures.values())):
        # Figures of one kind in one part (two amounts, two dates) stand together in the source: a record's
        # fields ("410 Lakewalk Avenue", "Expiration 31 May 2028") may stand on lines of their own.
        stated = [f for f, k in figures.items() if k == kind and f in where and f in part]
        if len(stated) < 2:
            continue
        units = [{c.unit for c in where[f]} for f in stated]
        if not any(all(any(start <= u < start + _WINDOW for u in us) for us in units)
                   for start in set().union(*units)):
            return Reading("unsupported", "its figures stand apart in the source, in no one statement: "
                           + "; ".join(f"{f} in \"{_short(where[f][0].text)}\"" for f in stated), where[stated[0]][0].text)
    if where:
        fact, found = next(iter(where.items()))
        return Reading(None, f"{fact} stated in \"{_short(found[0].text)}\"", found[0].text)
    return Reading(None, "")


def _denial(sentence: str, claim_qualifiers: tuple[Qualifier, ...], names: list[str], figures: dict[str, str],
            parts: tuple[Clause, ...]) -> Reading | None:
    """A clause about the claim's subject that negates or defers one of the claim's words."""
    claim_tokens = _tokens(sentence)
    if any(t in _NEGATIONS for t in claim_tokens):
        return None  # a claim that itself denies is read by the words, not here
    claim_words = {t for t in claim_tokens if len(t) > 3 and t not in _STOP}
    claim_stems = {_stem(w): w for w in claim_words}
    # What the claim says was done: "audited", not "need" or "Cython-based".
    done = {_stem(w): w for w in claim_words if w.endswith("ed") and len(w) > 5 and "-" not in w}
    claim_cues = {t for t in claim_tokens if t in _DEFERRALS}
    subject = [n.lower() for n in [*names, *figures] if not qualifiers(n)]
    for clause in parts:
        if claim_qualifiers:
            own = qualifiers(clause.text)
            if not own or not _shares(own, claim_qualifiers):
                continue  # about another year, or about none named here
        else:  # about the claim's subject: one of its names or figures in the clause's unit or one beside it
            near = " ".join(c.text for c in parts if abs(c.unit - clause.unit) <= 1).lower()
            if not any(n in near for n in subject):
                continue
        tokens = _tokens(clause.text)
        for i, token in enumerate(tokens):
            if token.startswith("un") and len(token) > 5 and _stem(token[2:]) in claim_stems \
                    and token not in claim_words:
                return Reading("contradicted", f"the source says \"{token}\" where the claim says "
                               f"\"{claim_stems[_stem(token[2:])]}\": \"{_short(clause.text)}\"", clause.text)
            if token in _NEGATIONS:
                scope = tokens[i + 1:i + 1 + _NEGATION_REACH]
                scope = scope[:next((j for j, w in enumerate(scope) if w in _EXCEPTIONS), len(scope))]
                negated = list(dict.fromkeys(w for w in scope if _stem(w) in claim_stems))
                # Two of the claim's words denied together ("not a material contract"), or the very thing it says
                # was done ("no amount has been accrued"); one shared noun alone ("no alarm was lost" beside
                # "alarms were delayed") is about something else.
                if len(negated) >= 2 or any(_stem(w) in done for w in negated):
                    return Reading("contradicted", f"the source says \"{token} ... {negated[0]}\": "
                                   f"\"{_short(clause.text)}\"", clause.text)
        cues = [t for t in tokens if t in _DEFERRALS and t not in claim_cues]
        deferred = [w for w in tokens if _stem(w) in done]
        if cues and deferred:
            return Reading("contradicted", f"the source says it is not done yet (\"{cues[0]}\") where the claim says "
                           f"\"{done[_stem(deferred[0])]}\": \"{_short(clause.text)}\"", clause.text)
    return None


def _shares(ours: tuple[Qualifier, ...], theirs: tuple[Qualifier, ...]) -> bool:
    return any(a.same(b) for a in ours for b in theirs)


def _tokens(text: str) -> list[str]:
    text = _NUMBER_SIGN.sub(" number ", text)  # "Amendment No. 1" denies nothing
    return [t.replace("'", "").replace("’", "") for t in _TOKEN.findall(text.lower())]


@functools.lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def _short(text: str, limit: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
