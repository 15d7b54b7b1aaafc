"""The programs a bash command line runs, read from the command itself, so that tool-use counts can
break `bash` down by program (design §2.7).

A small quote-aware scanner, not a bash parser: it knows pipes and lists, subshells, command and
process substitution, heredocs, comments, variable assignments, shell keywords and the common
wrappers (sudo, env, timeout, xargs, ...). shlex cannot tell a quoted `'|'` from a pipe, nor does it
know heredocs or `$(...)`, which is why this is hand-written. It never raises: broken quoting simply
runs to the end of the line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

# Longest first, so that "&&" wins over "&" and ">>" over ">".
_OPERATORS = ("&&", "||", ";;&", ";;", ";&", "|&", "|", "&", ";", "(", ")")
_REDIRECTS = ("<<<", "<<-", "&>>", "<<", ">>", "&>", ">&", "<&", "<>", ">|", "<", ">")
_HEREDOCS = ("<<", "<<-")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac", "!", "{", "}"}
_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
# Wrappers run another program: (options that take a value, positional arguments before it).
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U"}), 0),
    "env": (frozenset({"-u", "-C", "-S", "--unset", "--chdir"}), 0),
    "time": (frozenset({"-f", "-o"}), 0),
    "nohup": (frozenset(), 0),
    "nice": (frozenset({"-n"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "xargs": (frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-a", "-E"}), 0),
    "exec": (frozenset({"-a"}), 0),
    "setsid": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
}
_COUNTED_WRAPPERS = {"xargs"}  # xargs is a program of its own, and it runs another


@dataclass
class _Token:
    kind: str  # "word", "op" or "redirect"
    text: str


@dataclass
class _Scan:
    tokens: list[_Token] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)  # bodies of $(...), `...`, <(...)


def programs_in(command: str) -> list[str]:
    """Distinct programs in the order they appear, e.g. `cat a | grep x | head` -> cat, grep, head."""
    scan = _scan(command)
    found = _walk(scan.tokens)
    for body in scan.nested:
        found.extend(programs_in(body))
    return list(dict.fromkeys(found))


def _scan(s: str) -> _Scan:
    scan = _Scan()
    word: list[str] = []
    started = False  # a word is open (it may be an empty quoted string)
    heredoc_wanted: bool | None = None  # after << : the next word is a heredoc delimiter
    heredocs: list[tuple[str, bool]] = []

    def flush() -> None:
        nonlocal started, heredoc_wanted
        if started:
            text = "".join(word)
            if heredoc_wanted is not None:
                heredocs.append((text, heredoc_wanted))
                heredoc_wanted = None
            scan.tokens.append(_Token("word", text))
        word.clear()
        started = False

    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n:
            if s[i + 1] != "\n":  # backslash-newline continues the line
                word.append(s[i + 1])
                started = True
            i += 2
        elif c in " \t":
            flush()
            i += 1
        elif c == "\n":
            flush()
            scan.tokens.append(_Token("op", ";"))
            i += 1
            for delimiter, strip_tabs in heredocs:
                i = _after_heredoc(s, i, delimiter, strip_tabs)
            heredocs.clear()
        elif c == "#" and not started:
            end = s.find("\n", i)
            i = n if end < 0 else end
        elif c == "'":
            end = s.find("'", i + 1)
            end = n if end < 0 else end
            word.append(s[i + 1 : end])
            started = True
            i = end + 1
        elif c == '"':
            i = _double_quoted(s, i + 1, word, scan)
            started = True
        elif c == "`":
            end = _closing_backtick(s, i + 1)
            scan.nested.append(s[i + 1 : end])
            word.append("$`")
            started = True
            i = end + 1
        elif s.startswith("$((", i) or (s.startswith("((", i) and not started):
            opened = i + 1 if c == "$" else i  # arithmetic: no programs inside
            word.append("$((arith))")
            started = True
            i = _closing(s, opened + 1) + 1
        elif s.startswith("$(", i) or (s.startswith(("<(", ">("), i)):
            end = _closing(s, i + 2)
            scan.nested.append(s[i + 2 : end])
            word.append("$(subst)")
            started = True
            i = end + 1
        elif c in "|&;()<>":
            flush()
            redirect = next((r for r in _REDIRECTS if s.startswith(r, i)), None)
            operator = next((o for o in _OPERATORS if s.startswith(o, i)), None)
            if redirect and (operator is None or len(redirect) >= len(operator)):
                scan.tokens.append(_Token("redirect", redirect))
                if redirect in _HEREDOCS:
                    heredoc_wanted = redirect == "<<-"
                i += len(redirect)
            else:
                token = operator or c
                scan.tokens.append(_Token("op", token))
                i += len(token)
        else:
            word.append(c)
            started = True
            i += 1
    flush()
    return scan


def _double_quoted(s: str, i: int, word: list[str], scan: _Scan) -> int:
    """Read a "..." string from just after its quote; substitutions inside it still run programs."""
    n = len(s)
    while i < n and s[i] != '"':
        if s[i] == "\\" and i + 1 < n:
            word.append(s[i + 1])
            i += 2
        elif s.startswith("$((", i):
            i = _closing(s, i + 2) + 1
            word.append("$((arith))")
        elif s.startswith("$(", i):
            end = _closing(s, i + 2)
            scan.nested.append(s[i + 2 : end])
            word.append("$(subst)")
            i = end + 1
        elif s[i] == "`":
            end = _closing_backtick(s, i + 1)
            scan.nested.append(s[i + 1 : end])
            word.append("$`")
            i = end + 1
        else:
            word.append(s[i])
            i += 1
    return i + 1


def _closing(s: str, i: int) -> int:
    """Index of the ")" that closes a "(" opened just before `i`, skipping quoted text."""
    depth, n = 1, len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 1
        elif c == "'":
            end = s.find("'", i + 1)
            i = n if end < 0 else end
        elif c == '"':
            while i + 1 < n and s[i + 1] != '"':
                i += 2 if s[i + 1] == "\\" else 1
            i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


def _closing_backtick(s: str, i: int) -> int:
    while i < len(s) and s[i] != "`":
        i += 2 if s[i] == "\\" else 1
    return min(i, len(s))


def _after_heredoc(s: str, i: int, delimiter: str, strip_tabs: bool) -> int:
    """Skip a heredoc body starting at `i`; returns the index of the newline after its last line."""
    while i < len(s):
        end = s.find("\n", i)
        end = len(s) if end < 0 else end
        line = s[i:end]
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            return end
        i = end + 1
    return len(s)


def _walk(tokens: list[_Token]) -> list[str]:
    """Pick the words at command position out of the token stream."""
    programs: list[str] = []
    at_command = True
    in_case_pattern = False
    current = ""  # the program of the simple command being read
    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        if in_case_pattern:  # `case x in a|b) ...`: patterns run up to ")"
            if token.text == "esac" or token.text == ")":
                in_case_pattern = False
                at_command = token.text == ")"
            i += 1
            continue
        if token.kind == "op":
            at_command = True
            in_case_pattern = token.text in (";;", ";&", ";;&")
            i += 1
            continue
        if token.kind == "redirect":
            i += 2  # the redirect and its target
            continue
        word = token.text
        if not at_command:
            at_command = current == "find" and word in _FIND_EXEC
            i += 1
            continue
        if word in ("for", "select"):
            i = _next_op(tokens, i)
            continue
        if word == "case":
            i = next((j for j in range(i, n) if tokens[j].text == "in"), n) + 1
            in_case_pattern = True
            continue
        if word == "[[":
            i = next((j for j in range(i, n) if tokens[j].text == "]]"), n) + 1
            at_command = False
            continue
        if word == "function":
            i += 2
            continue
        if word in _KEYWORDS or _ASSIGNMENT.match(word):
            i += 1
            continue
        if not word or word.startswith("$"):  # dynamic: $cmd, or a substitution's result
            at_command = False
            i += 1
            continue
        name = os.path.basename(word.rstrip("/")) or word
        if i + 1 < n and tokens[i + 1].text == "(":  # `name() { ... }` defines a function
            i += 1
            at_command = False
            continue
        if name in _WRAPPERS:
            if name in _COUNTED_WRAPPERS:
                programs.append(name)
            i = _after_wrapper(tokens, i + 1, *_WRAPPERS[name])
            continue
        programs.append(name)
        current = name
        at_command = False
        i += 1
    return programs


def _next_op(tokens: list[_Token], i: int) -> int:
    while i < len(tokens) and tokens[i].kind != "op":
        i += 1
    return i


def _after_wrapper(tokens: list[_Token], i: int, valued: frozenset[str], positional: int) -> int:
    """Skip a wrapper's options (and e.g. timeout's duration); returns where its program starts."""
    while i < len(tokens) and tokens[i].kind == "word" and tokens[i].text.startswith("-"):
        i += 2 if tokens[i].text in valued else 1
    while positional and i < len(tokens) and tokens[i].kind == "word":
        i += 1
        positional -= 1
    return i
