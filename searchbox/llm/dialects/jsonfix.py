"""Lenient JSON for tool arguments that models write by hand.

Tried in order: strict JSON; a Python literal (single quotes, True/False/None); then a one-pass
repair of the usual slips (trailing commas, single quotes, unquoted keys and bare words, Python
literals, a missing closing quote or bracket) followed by strict JSON again.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_JSON_WORDS = {"true", "false", "null", "NaN", "Infinity"}
# Any letter starts a word, not only ASCII: the repair loop treats every isalpha() character as one.
_WORD = re.compile(r"(?:[^\W\d]|\$)[\w$.\-/]*")


def loads_lenient(raw: str) -> Any:
    """Parse `raw` as JSON, repairing it where that is safe; ValueError when nothing works."""
    text = raw.strip()
    if not text:
        raise ValueError("empty arguments")
    try:
        return json.loads(text, strict=False)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to decode
        pass
    try:
        # literal_eval evaluates literals only, never code. A model's `\d` in a string is an invalid escape to
        # the compiler: its warning is noise to the user, and under -W error it would change the parse.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # TypeError: {[1]: 2}
        pass
    else:
        if _is_json(value):  # a set, bytes, complex or tuple could not go back into the history as JSON
            return value
    repaired = repair(text)
    try:
        value, _end = json.JSONDecoder(strict=False).raw_decode(repaired)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not valid JSON even after repair: {exc}") from None
    return value


def _is_json(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(item) for item in value)
    return value is None or isinstance(value, (str, int, float))


def repair(text: str) -> str:
    out: list[str] = []
    closers: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            literal, i = _read_string(text, i)
            out.append(literal)
            continue
        if c in "{[":
            closers.append("}" if c == "{" else "]")
            out.append(c)
        elif c in "}]":
            _drop_trailing_comma(out)
            # Close anything left open inside, then this bracket; a stray closer is dropped.
            if c in closers:
                while closers and closers[-1] != c:
                    out.append(closers.pop())
                out.append(closers.pop())
        elif (c.isalpha() or c in "_$") and not (i and (text[i - 1].isdigit() or text[i - 1] == ".")):
            # A bare word (not the exponent of a number): a key or value the model forgot to quote.
            word = _WORD.match(text, i)
            assert word is not None
            token = word.group()
            out.append(_PY_LITERALS.get(token) or (token if token in _JSON_WORDS else json.dumps(token)))
            i = word.end()
            continue
        else:
            out.append(c)
        i += 1
    while out and out[-1].isspace():
        out.pop()
    if out and out[-1] == ":":
        out.append("null")
    _drop_trailing_comma(out)
    out.extend(reversed(closers))
    return "".join(out)


def _read_string(text: str, start: int) -> tuple[str, int]:
    """A quoted string (either quote) as a JSON string literal; an unclosed one ends at the text's end."""
    quote = text[start]
    chars: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            chars.append(nxt if nxt == "'" else c + nxt)
            i += 2
            continue
        if c == quote:
            return '"' + "".join(chars) + '"', i + 1
        chars.append('\\"' if c == '"' else c)
        i += 1
    return '"' + "".join(chars) + '"', i


def _drop_trailing_comma(out: list[str]) -> None:
    j = len(out) - 1
    while j >= 0 and out[j].isspace():
        j -= 1
    if j >= 0 and out[j] == ",":
        del out[j]
