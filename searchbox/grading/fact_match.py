"""Is a must-fact in an answer, and on what passage does that verdict rest? The lexical grader of
`score` (its version is LEXICAL_VERSION, named in every score).

A fact is read as what must be there:

- its values: every number, date part and amount, exactly, after the normalisation of citations/facts.py
  ("three (3) years", "twelve-month", "$36.2M", "April 1, 2022" all reach one canonical form); a
  percentage keeps its sign, a month next to a number is a value too;
- its content words: the rest without function words, compared stemmed (PyStemmer's English Snowball:
  "layers"/"layer", "renews"/"renewals"), long ones also fuzzily (rapidfuzz: "authorisation" and
  "authorization"), hyphenated or joined either way ("object-level", "keep-alive"/"keepalive").

Both are looked for within one passage of the answer: a clause, or up to three adjacent clauses of one
sentence (a table row is a sentence, its cells clauses), in any word order. A short span (under four
words, or a name: "Pellworth & Strand LLP", "renewals last a year") needs every content word; a claim
(a sentence of four words or more) needs every name and CLAIM_SHARE of its words' weight, a name
weighing 2. Generic verbs ("is", "began", "lasts") count for nothing, and words and numbers the question
gives and the answer never says are not looked for: an answer need not repeat the subject the
question names. A fact of figures alone ("$118.40", "1 April 2022") is found only as citations/facts.py
finds it, so its numbers stay exact and in order; what citations/facts.py finds (the canonical form, or a
close passage holding the numbers) is found first, as before, unless its passage has the other polarity.

Each value must stand in its own slot: when a word beside it in the fact ("plus" in "prime rate plus
1.25%") stands in a clause of the passage beside another value, and that clause lacks this one, the
value is not held and the fact is *contradicted*, not merely missing ("prime rate plus 1.5%, with a
floor of 1.25%"; "a two-year term" for "three (3) years") - provided the clause is about what the fact is
about: it says one of the fact's other words, and for a clash through the word after the value
("years"), the word leading to it ("renewals are for two years"). A figure said to be approximate
("about 800,000") contradicts only one it does not round. A fact is contradicted too when the passage
negates it ("not modified" for "modified") or, for a fact that denies, holds no denial of its words (a
negation in a clause that says one of them, or an opening "No.").

A command or a call ("python -m threadpoolctl -i numpy scipy.linalg", "get_config()") is code: it is found only
as citations/facts.py finds it, never by its words, which another command shares.
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import Stemmer
from rapidfuzz import fuzz

from searchbox.citations.markers import answer_sentences
from searchbox.citations.facts import ACCOUNTING, normalize, span_present

# Raised whenever a change can turn a verdict: rows graded by different versions are never pooled.
# 1: citations/facts.py alone (canonical form, or partial_ratio >= 90 with the numbers); 2: this module.
# 3: "3x" is "three times"; a fact "label: Value" is present where its value is, under its label's words.
# 4: a denial counts only in a clause that says the fact's words; code only as written; and (grading/
# lexical.py) a fact the question itself states earns no partial credit.
LEXICAL_VERSION = 4
STATUSES = ("present", "contradicted", "absent")
CLAIM_SHARE = 0.6  # of a claim's content weight, in one passage
CLAIM_WORDS = 4  # a fact of this many words or more, not all a name, is a claim; a shorter one a span
MAX_CLAUSES = 3  # a passage: this many adjacent clauses of one sentence at most
_SLOT_REACH = 2  # in an answer, a value stands beside a word within this many significant tokens
_PHRASE_GAP = 2  # in a fact, beside means at most this many function words between ("renewals are for two")
_ROUNDING = 0.1  # "about 800,000" rounds 804,414; "around 100KB" is not "about 16KB"
_NEGATING_PREFIX = "un"
# An option of a command ("-m", "--user") after a space, or a call ("get_config(", "f()").
_CODE = re.compile(r"(?:^|\s)--?[A-Za-z]|\w\(")
_NAME_WEIGHT = 2.0
_FUZZY_WORD = 88  # rapidfuzz ratio of two words of 6+ letters: a spelling variant, not another word
_PREFIX = 5  # a stem of 5+ letters that starts the other's stem: "renew" / "renewal"

_STOP = frozenset("""a an the of to in on at by for from with into onto as and or but if than then so that this these those
it its it's they them their there here which who whom whose what when where while is are was were be been being am
has have had do does did can could may might must shall should will would also only just very such both each
per via about over under up out any all some other another i we you he she our your his her s between among
within during through upon""".split())
# Generic verbs and fillers: no fact needs them said.
_LIGHT = frozenset("""last lasts lasted run runs ran need needs needed require requires required make makes made give gives
gave given get gets got take takes took taken set sets use uses used using begin begins began begun start starts
started end ends ended say says said state states stated show shows showed shown include includes included contain
contains contained provide provides provided allow allows allowed become becomes became remain remains remained
apply applies applied mean means meant call calls called go goes went come comes came keep keeps kept hold holds
held put puts let lets see sees saw total""".split())
_APPROXIMATE = frozenset("about around roughly approximately nearly almost circa approx".split())  # "about 800,000"
_NEGATIONS = frozenset("""not no never none nor neither without cannot dont doesnt didnt isnt wasnt werent arent hasnt
havent hadnt wont cant couldnt shouldnt wouldnt""".split())
_MONTH_NAMES = {m[:3]: m for m in ("january", "february", "march", "april", "may", "june", "july", "august",
                                   "september", "october", "november", "december")} | {"sept": "september"}
_VALUE = re.compile(r"\d+(?:\.\d+)?")
_BOOLEANS = frozenset({"true", "false"})  # values too: "override=True" is not "override=False"
# Commas, semicolons (table cells), colons and dashes; and after an answer's opening "No." or "Yes.",
# which answers the question rather than negating the clause that follows.
_CLAUSE_BREAK = re.compile(r"[,;:](?=\s)|\s[–—]\s|\s-\s|(?:(?<=^[Nn]o\.)|(?<=^[Yy]es\.))\s")
_STEMMER = Stemmer.Stemmer("english")


@dataclass(frozen=True)
class FactMatch:
    """A fact's verdict in an answer and what it rests on."""
    status: str  # present | contradicted | absent
    rule: str  # exact | fuzzy | words (all parts in a passage) | claim (enough parts) | accounting | label | none
    style: str  # span (a short phrase or a name) | claim (a sentence of CLAIM_WORDS words or more) | code
    passage: str | None = None  # the answer's passage that holds it, contradicts it, or comes closest
    missing: list[str] = field(default_factory=list)  # the fact's parts that passage lacks
    conflict: dict[str, str] | None = None  # {"expected", "found", "beside"}, or {"polarity"}

    @property
    def present(self) -> bool:
        return self.status == "present"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def explain(self) -> str:
        """One line for a reader: what holds the fact, or what is missing or contradicts it."""
        quoted = f'"{_shorten(self.passage)}"' if self.passage else "no passage"
        if self.status == "present":
            return f"{self.rule}: {quoted}"
        if self.status == "contradicted" and self.conflict is not None:
            if "polarity" in self.conflict:
                return f"{self.conflict['polarity']}: {quoted}"
            return (f"{self.conflict['found']} where the fact has {self.conflict['expected']} "
                    f"(beside {self.conflict['beside']!r}) in {quoted}")
        if not self.missing and self.passage:
            return f"its figures are in {quoted}, but not written together as the fact writes them"
        return f"missing {', '.join(self.missing) or 'everything'}; closest {quoted}"


def fact_present(fact: str, answer: str, question: str = "") -> bool:
    return match_fact(fact, answer, question).present


@dataclass(frozen=True)
class _Token:
    text: str  # canonical form: a number, "5.9%", a month name, or a word
    value: bool
    stem: str
    clause: int = 0  # which clause of its passage: a word is beside a value, or negated, only within one clause
    approximate: bool = False  # "about 800,000": contradicts only a figure it does not round
    position: int = 0  # among all the words of its text: beside means at most _PHRASE_GAP words between


@dataclass(frozen=True)
class _Passage:
    text: str  # as the answer writes it
    tokens: tuple[_Token, ...]  # significant tokens: values and content words, in order
    joined: frozenset[str]  # adjacent raw tokens run together: "keep alive" -> "keepalive"


@dataclass(frozen=True)
class _Fact:
    tokens: tuple[_Token, ...]  # values and content words (negations left out), in order
    values: dict[str, int]  # value -> how often the fact states it ("three exercise and three physiological")
    words: dict[str, float]  # content word (canonical) -> weight
    names: frozenset[str]
    negated: bool
    style: str


@dataclass(frozen=True)
class _Found:
    holds: bool
    share: float  # of the fact's values and content weight, found
    missing: list[str]
    conflict: dict[str, str] | None


def match_fact(fact: str, answer: str, question: str = "") -> FactMatch:
    """The fact's verdict in the answer to `question`: present, contradicted or absent, with the passage
    it rests on. A subject the question names and the answer never repeats need not be said: "The
    dataset has 20,640 instances" is in the answer "20,640 instances" to "How big is the dataset?"."""
    parsed = _parse_fact(fact)
    passages = _passages(answer)
    if (labelled := _labelled(fact, passages, question)) is not None:
        return FactMatch("present", "label", parsed.style, labelled.text)
    if span_present(fact, answer) and not _negated_fuzzy(fact, answer, parsed, passages):
        rule = ("accounting" if ACCOUNTING.fullmatch(fact.strip())
                else "exact" if f" {normalize(fact)} " in f" {normalize(answer)} " else "fuzzy")
        holder = next((p for p in passages if span_present(fact, p.text)), None)
        return FactMatch("present", rule, parsed.style, holder.text if holder else None)
    if _CODE.search(fact):  # another command says most of its words: "python3 -c 'import threadpoolctl'"
        return FactMatch("absent", "none", "code", None, [fact])
    given = _given(parsed, question, passages)
    contradiction: FactMatch | None = None
    closest: tuple[float, _Passage, list[str]] | None = None
    for passage in passages:  # shortest first: the tightest passage explains the verdict
        found = _weigh(parsed, passage, given)
        if found.holds:
            return FactMatch("present", "words" if parsed.style == "span" else "claim", parsed.style, passage.text)
        if contradiction is None and found.conflict is not None:
            contradiction = FactMatch("contradicted", "none", parsed.style, passage.text, found.missing,
                                      found.conflict)
        if found.share > 0 and (closest is None or found.share > closest[0]):
            closest = (found.share, passage, found.missing)
    if contradiction is not None:
        return contradiction
    if closest is None:
        return FactMatch("absent", "none", parsed.style, None, _ordered(parsed, None) or [fact])
    return FactMatch("absent", "none", parsed.style, closest[1].text, closest[2])


_LABELLED = re.compile(r"^([A-Za-z][\w\s-]{0,40}):\s+(\S.*)$")


def _labelled(fact: str, passages: tuple[_Passage, ...], question: str) -> _Passage | None:
    """A fact "label: Value" whose value is a name or figure ("dataset name: Linnaeus-Clean"): present in a
    passage that holds the value and half the label's words (those the question gives need not be said),
    however it words the label ("The dataset is called Linnaeus-Clean"). A plain word for a value ("None",
    "no") is left to the other rules: it could stand anywhere."""
    match = _LABELLED.match(fact.strip())
    if match is None or not _specific(match[2]):
        return None
    label = [t for t in _significant(normalize(match[1]).split()) if not t.value]
    asked = _Passage(question, tuple(_significant(normalize(question).split())), frozenset()) if question else None
    for passage in passages:
        if not span_present(match[2], passage.text):
            continue
        said = [t for t in label if _word_in(t.text, passage) or (asked is not None and _word_in(t.text, asked))]
        if 2 * len(said) >= len(label):
            return passage
    return None


def _specific(value: str) -> bool:
    """A value no answer holds by chance: a digit, a capital inside a word, a joined word ("Linnaeus-Clean",
    "v2.1", "my_key"), or two capitalised words."""
    return (bool(re.search(r"\d|\w[A-Z]|\w[-_.]\w", value))
            or sum(w[:1].isupper() for w in value.split()) >= 2)


def _weigh(fact: _Fact, passage: _Passage, given: frozenset[str]) -> _Found:
    """How much of the fact the passage holds (what the question gives left out), and whether it holds
    it or contradicts it."""
    said = {w for w in fact.words if _word_in(w, passage, fact.negated)}
    held = {v for v in given if v in fact.values}
    clashes: list[_Clash] = []
    for value in _ordered(fact, set(fact.values) - given):
        if (clash := _slot_clash(fact, value, passage)) is not None:
            clashes.append(clash)
        elif sum(t.text == value for t in passage.tokens) >= fact.values[value]:
            held.add(value)
    required = {w: fact.words[w] for w in fact.words if w not in given}
    missing = [v for v in _ordered(fact, fact.values) if v not in held]
    missing += [w for w in _ordered(fact, required) if w not in said]
    total = len(fact.values) + sum(fact.words.values())
    share = (len(held) + sum(fact.words[w] for w in said | (given & set(fact.words)))) / total if total else 0.0
    # A fact of values alone ("$118.40") is found only as citations/facts.py finds it: here it can only
    # clash. And the passage must say something of the fact's own, not only what the question gives.
    news = any(required[w] > 0 for w in said & set(required)) or bool(held - given)
    whole = bool(fact.words) and _enough(fact, said, required) and held == set(fact.values) and news
    polarity = _polarity_clash(fact, passage, said, held)
    if whole and polarity is None:
        return _Found(True, share, [], None)
    if whole:
        return _Found(False, share, missing, {"polarity": polarity})
    for clash in clashes:
        if _clash_counts(fact, clash, passage):
            return _Found(False, share, missing, clash.as_conflict())
    return _Found(False, share, missing, None)


@dataclass(frozen=True)
class _Clash:
    expected: str  # the fact's value
    found: str  # the passage's value beside the fact's word
    beside: str  # that word
    after: bool  # the word follows the value in the fact ("years" in "two years"), rather than leading to it
    clause: int

    def as_conflict(self) -> dict[str, str]:
        return {"expected": self.expected, "found": self.found, "beside": self.beside}


def _clash_counts(fact: _Fact, clash: _Clash, passage: _Passage) -> bool:
    """A clash is a contradiction when its clause is about what the fact is about: it says one of the
    fact's other words, if it has any, and for a clash through the word after the value ("years"), the
    word leading to it ("renewals are for two years"), if that is not a generic verb."""
    def said(word: str) -> bool:  # in the clause itself: what only the question gives does not anchor it
        return any(_same_word(word, t) for t in passage.tokens if t.clause == clash.clause)

    neighbours = _neighbours(fact.tokens, clash.expected)
    others = [w for w, weight in fact.words.items() if weight and w not in {n.text for n, _ in neighbours}]
    if others and not any(said(w) for w in others):
        return False
    leading = [n.text for n, after in neighbours if not after and not n.value and fact.words.get(n.text)]
    return not clash.after or all(said(w) for w in leading)


def _given(fact: _Fact, question: str, passages: tuple[_Passage, ...]) -> frozenset[str]:
    """The fact's words and values that the question says and the answer never does: its elided subject."""
    if not question:
        return frozenset()
    asked = _Passage(question, tuple(_significant(normalize(question).split())), frozenset())
    in_answer = {t.text for p in passages for t in p.tokens}
    words = {w for w in fact.words if _word_in(w, asked) and not any(_word_in(w, p) for p in passages)}
    values = {v for v in fact.values if any(t.text == v for t in asked.tokens) and v not in in_answer}
    return frozenset(words | values)


def _enough(fact: _Fact, said: set[str], required: dict[str, float]) -> bool:
    """Enough of the required content words (generic verbs weigh nothing): for a span all of them, for a
    claim every name and CLAIM_SHARE of their weight."""
    counted = {w: weight for w, weight in required.items() if weight}
    if not counted:
        return True
    if fact.style == "span":
        return all(w in said for w in counted)
    if not all(w in said for w in counted if w in fact.names):
        return False
    return sum(counted[w] for w in said if w in counted) / sum(counted.values()) >= CLAIM_SHARE


def _slot_clash(fact: _Fact, value: str, passage: _Passage) -> _Clash | None:
    """A word beside `value` in the fact that stands in the passage beside another value, in a clause
    that does not hold this one. An approximate figure ("about 800,000") clashes only when it is more
    than _ROUNDING away."""
    for neighbour, after in _neighbours(fact.tokens, value):
        others: list[tuple[int, str, int]] = []
        for i, token in enumerate(passage.tokens):
            if not _same(neighbour, token):
                continue
            clause = [(j, t) for j, t in enumerate(passage.tokens) if t.clause == token.clause]
            if any(t.text == value for _, t in clause):
                others = []
                break  # the value stands in this word's clause: no clash through this word
            others += [(abs(j - i), t.text, t.clause) for j, t in clause
                       if t.value and j != i and abs(j - i) <= _SLOT_REACH and t.text not in fact.values
                       and _comparable(value, t.text) and not (t.approximate and _near(value, t.text))]
        if others:
            _, found, clause = min(others)
            return _Clash(value, found, neighbour.text, after, clause)
    return None


def _neighbours(tokens: tuple[_Token, ...], value: str) -> list[tuple[_Token, bool]]:
    """The tokens beside `value` in the fact, in its phrase, each with whether it follows the value:
    "renewals" and "years" in "renewals are for two years", not "images" in "images of each of 40"."""
    out: dict[str, tuple[_Token, bool]] = {}
    for i, token in enumerate(tokens):
        if token.text == value:
            for j in (i - 1, i + 1):
                if (0 <= j < len(tokens) and tokens[j].text != value
                        and abs(tokens[j].position - token.position) <= _PHRASE_GAP + 1):
                    out.setdefault(tokens[j].text, (tokens[j], j > i))
    return list(out.values())


def _comparable(expected: str, found: str) -> bool:
    """Both months, both booleans, or both numbers of one kind (a percentage with a percentage)."""
    for kind in (set(_MONTH_NAMES.values()), _BOOLEANS):
        if (expected in kind) != (found in kind):
            return False
    return expected.endswith("%") == found.endswith("%")


def _near(expected: str, found: str) -> bool:
    try:
        a, b = float(expected.rstrip("%")), float(found.rstrip("%"))
    except ValueError:
        return False
    return a != 0 and abs(a - b) / abs(a) <= _ROUNDING


def _polarity_clash(fact: _Fact, passage: _Passage, said: set[str], held: set[str]) -> str | None:
    """The passage denies what the fact asserts (a negation just before its words, in their clause) or,
    for a fact that denies, holds no denial of its words: a negation in a clause that says one of them
    ("RootModels are not recommended"; "unmodified" counts), or an opening "No.". A negation elsewhere in
    the passage ("... without the need for wrapper models") denies something else."""
    matched = [i for i, t in enumerate(passage.tokens)
               if (t.value and t.text in held) or (not t.value and any(_same_word(w, t) for w in said))]
    if fact.negated:
        clauses = {passage.tokens[i].clause for i in matched}
        denied = any((t.text in _NEGATIONS or _negated_word(t, said))
                     and (t.clause in clauses or _opening_no(t, passage)) for t in passage.tokens)
        return None if denied else "asserted where the fact denies"
    for i, token in enumerate(passage.tokens):
        if token.text in _NEGATIONS and any(0 < j - i <= _SLOT_REACH and passage.tokens[j].clause == token.clause
                                            for j in matched):
            return f"negated by {token.text!r}"
    return None


def _opening_no(token: _Token, passage: _Passage) -> bool:
    """An answer's opening "No." (a clause of its own), which answers the question with a denial."""
    return token.text == "no" and token is passage.tokens[0] and all(
        t.clause != token.clause for t in passage.tokens[1:])


def _negated_word(token: _Token, words: set[str]) -> bool:
    """"unmodified" for "modified": one of these words with a negating prefix."""
    return (not token.value and token.text.startswith(_NEGATING_PREFIX) and len(token.text) > 5
            and any(_same_word(w, _word_token(token.text[2:])) for w in words))


def _negated_fuzzy(fact: str, answer: str, parsed: _Fact, passages: tuple[_Passage, ...]) -> bool:
    """citations/facts.py's fuzzy match on a passage of the other polarity: "was not modified" for "was
    modified", "holds patents in Japan" for "holds no patents in Japan"."""
    if f" {normalize(fact)} " in f" {normalize(answer)} ":
        return False
    return any(span_present(fact, p.text) and _polarity_clash(parsed, p, set(parsed.words), set(parsed.values))
               is not None for p in passages)


def _word_in(word: str, passage: _Passage, negated: bool = False) -> bool:
    """The word is in the passage; for a fact that denies, also as "un" + word ("unmodified")."""
    return (any(_same_word(word, t) or (negated and _negated_word(t, {word})) for t in passage.tokens)
            or word in passage.joined)


def _word_token(word: str) -> _Token:
    return _Token(word, False, _stem(word))


def _same(a: _Token, b: _Token) -> bool:
    return a.text == b.text if a.value or b.value else _same_word(a.text, b)


def _same_word(word: str, token: _Token) -> bool:
    if token.value:
        return False
    if word == token.text:
        return True
    stem = _stem(word)
    if stem == token.stem:
        return True
    short, long_ = sorted((stem, token.stem), key=len)
    if len(short) >= _PREFIX and long_.startswith(short):
        return True
    return min(len(word), len(token.text)) >= 6 and fuzz.ratio(word, token.text) >= _FUZZY_WORD


@functools.lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


_LIGHT_STEMS = frozenset(_STEMMER.stemWords(sorted(_LIGHT)))


@functools.lru_cache(maxsize=512)
def _parse_fact(fact: str) -> _Fact:
    significant = _significant(normalize(_unmarked(fact)).split())
    # "three (3) years" states one number, not two.
    collapsed = [t for i, t in enumerate(significant) if not (t.value and i and significant[i - 1].text == t.text)]
    tokens = tuple(t for t in collapsed if t.text not in _NEGATIONS)
    names = _name_words(fact)
    words: dict[str, float] = {}
    values: dict[str, int] = {}
    for token in tokens:
        if token.value:
            values[token.text] = values.get(token.text, 0) + 1
        else:
            if any(_same_word(w, token) for w in words):
                continue  # "ping" and "pings" are one word
            words[token.text] = 0.0 if token.stem in _LIGHT_STEMS else _NAME_WEIGHT if token.text in names else 1.0
    # A claim reads as a sentence: four words or more, not all of them a name ("Town of Eastwick Harbor
    # Water Department" is a span).
    claim = len(fact.split()) >= CLAIM_WORDS and not all(w in names for w in words)
    return _Fact(tokens, values, words, frozenset(names & set(words)), len(tokens) < len(collapsed),
                 "claim" if claim else "span")


def _name_words(fact: str) -> set[str]:
    """The canonical words of the fact's names: capitalised words past its first, and words like "FastAPI"."""
    names: set[str] = set()
    for i, word in enumerate(fact.split()):
        letters = re.sub(r"[^A-Za-z]", "", word)
        if letters and letters[0].isupper() and (i > 0 or any(c.isupper() for c in letters[1:])):
            names |= {t for t in normalize(word).split() if not _VALUE.fullmatch(t)}
    return names


@functools.lru_cache(maxsize=64)
def _passages(answer: str) -> tuple[_Passage, ...]:
    """Every run of 1 to MAX_CLAUSES adjacent clauses of each sentence of the answer, shortest first."""
    runs: list[tuple[int, _Passage]] = []
    for sentence in answer_sentences(_unmarked(answer)):
        clauses = _clauses(sentence)
        for size in range(1, min(MAX_CLAUSES, len(clauses)) + 1):
            for start in range(len(clauses) - size + 1):
                raw, tokens = [], []
                for n, (a, b) in enumerate(clauses[start:start + size]):
                    words = normalize(sentence[a:b]).split()
                    raw += words
                    tokens += [_Token(t.text, t.value, t.stem, n, t.approximate, t.position) for t in _significant(words)]
                text = sentence[clauses[start][0]:clauses[start + size - 1][1]].strip()
                runs.append((size, _Passage(text, tuple(tokens), frozenset(a + b for a, b in zip(raw, raw[1:])))))
    return tuple(p for _, p in sorted(runs, key=lambda r: r[0]))


def _clauses(sentence: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for brk in _CLAUSE_BREAK.finditer(sentence):
        if sentence[start:brk.start()].strip():
            spans.append((start, brk.start()))
        start = brk.end()
    if sentence[start:].strip():
        spans.append((start, len(sentence)))
    return spans


def _significant(raw: list[str]) -> list[_Token]:
    """Values (numbers, "5.9%", months beside a number) and content words, in order; runs of single
    letters are one word ("I/O" -> "io", "U.S." -> "us")."""
    words: list[str] = []
    letters = False  # the last word is a single letter, or a run of them
    for word in raw:
        single = len(word) == 1 and word.isalpha()
        if single and letters:
            words[-1] += word
        else:
            words.append(word)
        letters = single
    tokens: list[_Token] = []
    for i, word in enumerate(words):
        if word == "%" or (word == "no" and i + 1 < len(words) and _VALUE.fullmatch(words[i + 1])):
            continue  # a sign kept with its number; "No. 1" is a number, not a negation
        if _VALUE.fullmatch(word):
            text = word + ("%" if i + 1 < len(words) and words[i + 1] == "%" else "")
            tokens.append(_Token(text, True, text, approximate=i > 0 and words[i - 1] in _APPROXIMATE, position=i))
        elif (month := _month(word)) and _beside_number(words, i):
            tokens.append(_Token(month, True, month, position=i))
        elif word in _BOOLEANS:
            tokens.append(_Token(word, True, word, position=i))
        elif word not in _STOP and len(word) > 1:
            tokens.append(_Token(word, False, _stem(word), position=i))
    return tokens


def _month(word: str) -> str | None:
    month = _MONTH_NAMES.get(word[:4] if word.startswith("sept") else word[:3])
    return month if month and word in (month, month[:3], "sept") else None


def _beside_number(words: list[str], i: int) -> bool:
    return any(0 <= j < len(words) and _VALUE.fullmatch(words[j]) for j in (i - 1, i + 1))


def _unmarked(text: str) -> str:
    return text.replace("**", " ").replace("`", " ")


def _ordered(fact: _Fact, parts: Any) -> list[str]:
    """The fact's tokens (those among `parts`, or all), once each, in the fact's order."""
    return list(dict.fromkeys(t.text for t in fact.tokens if parts is None or t.text in parts))


def _shorten(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
