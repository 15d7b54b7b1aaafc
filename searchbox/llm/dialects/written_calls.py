"""Tool calls that small models write outside their chat template's call tags (TOOL_CALL_PARSING=lenient).

Read only for tools on offer, and only where a call is set apart from prose:

- a fenced block that holds nothing but calls;
- a call that starts a line and ends one (the whole reply is the simplest case), or a JSON call that starts
  a line and is left open to the end of the reply, only its outer closing braces missing.

A call is a JSON object naming the tool (`name` or `function`, with `arguments` or `parameters`;
see call_objects), a list of them, or a call written as code, `NAME(key=value, ...)`, its values
Python or JSON literals (positional values fill the tool's parameters in schema order; one object of
parameter names is the arguments). A name in other letter case than the tool's (`Search_dataroom`) is
that tool when it can mean no other. Qwen2.5-Coder
writes both when left to choose, e.g.

    ```json
    {"function": "grep", "arguments": {"pattern": "visual tokens"}}
    ```
    search_dataroom(query="auditor's report", k=1, paths=["dataroom/models"])

A call inside a sentence, an object naming no tool on offer, a tool definition echoed from the
prompt, or a fenced block that also holds anything else stays text: nothing is made up from prose.
A call written more than once in a reply is one call.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from searchbox.llm.dialects.call_objects import call_from_object, names_a_call, new_call_id, offered_name, offered_names
from searchbox.llm.dialects.jsonfix import loads_lenient
from searchbox.llm.types import Tool, ToolCall, dump_arguments

FENCE = re.compile(r"```[ \t]*([\w-]*)[ \t]*\n(.*?)(?:```|\Z)", re.S)
_CALL_START = re.compile(r"([A-Za-z_][\w.-]*)[ \t]*\(")
_CLOSERS = {"{": "}", "[": "]", "(": ")"}
_JSON_NAMES = {"true": True, "false": False, "null": None}
# A line that opens a JSON call: `{"name": "grep", ...` or `[{"function": "grep", ...`, maybe in `inline code`.
_CALL_ATTEMPT = re.compile(r'^[ \t]*`?([\[{])[\s\[{]*"(?:name|function)"\s*:\s*"([^"\\]*)"', re.M)
_EMPTY_FENCE = re.compile(r"```[ \t]*[\w-]*[ \t]*\n\s*(?:```[ \t]*\n?|\Z)")


def written_calls(text: str, tools: list[Tool] | None) -> tuple[list[ToolCall], str]:
    """(the calls written in `text` outside call tags, the text without them); none when no tool is on offer."""
    offered = offered_names(tools)
    if not offered:
        return [], text
    calls: list[ToolCall] = []
    pieces: list[str] = []
    position = 0
    for fence in FENCE.finditer(text):
        pieces.append(_take_set_apart(text[position:fence.start()], tools, offered, calls))
        found = _block_calls(fence.group(2), tools, offered)
        calls.extend(found)
        pieces.append("" if found else fence.group(0))
        position = fence.end()
    pieces.append(_take_set_apart(text[position:], tools, offered, calls))
    return (_distinct(calls), "".join(pieces)) if calls else ([], text)


def without_call_attempts(text: str, tools: list[Tool] | None) -> str:
    """`text` less every JSON call of an offered tool that starts a line, read as a call or not: one cut off by
    the output cap, or broken past what jsonfix mends, is still the model's attempt at a call, never an answer
    (a Pi run's backstop once saved `{"name": "edit", "arguments": ...` as ANSWER.md). A fence left empty goes too."""
    offered = offered_names(tools)
    kept: list[str] = []
    position = 0
    for attempt in _CALL_ATTEMPT.finditer(text):
        if attempt.start() < position or offered_name(attempt.group(2), offered) is None:
            continue
        end = _closing(text, attempt.start(1)) or len(text)
        kept.append(text[position:attempt.start()])
        position = end + len(text[end:].split("\n", 1)[0])  # with what is left of its line
    kept.append(text[position:])
    return _EMPTY_FENCE.sub("", "".join(kept))


def holds_only_calls(text: str, tools: list[Tool] | None) -> bool:
    """Whether `text` is nothing but set-apart calls of offered tools."""
    return bool(_block_calls(text, tools, offered_names(tools)))


def _distinct(calls: list[ToolCall]) -> list[ToolCall]:
    """Each call once: the packaged 0.5B, left to choose, wrote one call line over and over until the
    output cap, 20 copies in a reply."""
    seen: set[tuple[str, str]] = set()
    distinct = []
    for call in calls:
        key = (call.name, json.dumps(call.arguments, sort_keys=True))
        if key not in seen:
            seen.add(key)
            distinct.append(call)
    return distinct


def _take_set_apart(text: str, tools: list[Tool] | None, offered: set[str], calls: list[ToolCall]) -> str:
    """The text less the calls that stand on lines of their own, which go to `calls`."""
    kept: list[str] = []
    position = 0
    for start, end, body in _set_apart(text, offered):
        found = _calls(body, tools, offered)
        if found:
            calls.extend(found)
            kept.append(text[position:start])
            position = end
    kept.append(text[position:])
    return "".join(kept)


def _block_calls(body: str, tools: list[Tool] | None, offered: set[str]) -> list[ToolCall]:
    """The calls of a fenced block that holds nothing else, else none."""
    calls: list[ToolCall] = []
    covered = 0
    for start, end, span in _set_apart(body, offered):
        found = _calls(span, tools, offered)
        if not found or body[covered:start].strip():
            return []
        calls.extend(found)
        covered = end
    return calls if not body[covered:].strip() else []


def _set_apart(text: str, offered: set[str]) -> list[tuple[int, int, str]]:
    """(start, end, body) of each bracketed object or NAME(...) call of an offered tool that starts a
    line (after indentation, maybe in `inline code`) and ends one; the span is the whole line."""
    spans = []
    line = 0
    while line < len(text):
        start = line
        while text.startswith((" ", "\t"), start):
            start += 1
        opened = start + 1 if text.startswith("`", start) else start
        end = _call_end(text, opened, offered)
        rest_of_reply = text[opened:].rstrip()
        if end is None and rest_of_reply.startswith(("{", "[")) and rest_of_reply.endswith(("}", "]")):
            # Left open to the end of the reply, but only outer closers missing (a closing brace forgotten):
            # the rest is the span, a call if it reads as one once they are supplied (jsonfix). A reply cut off
            # inside a value ("timeout": 3 of 3000) is not read: its last value would be made up.
            spans.append((line, len(text), rest_of_reply))
            break
        if end is not None:
            after = end + 1 if text.startswith("`", end) and opened > start else end
            rest = text[after:].split("\n", 1)[0]
            if not rest.strip(" \t;)]}"):  # a closer too many after a call is a slip, not prose
                spans.append((line, after + len(rest), text[opened:end]))
                line = after + len(rest)
        newline = text.find("\n", line)
        if newline < 0:
            break
        line = newline + 1
    return spans


def _call_end(text: str, start: int, offered: set[str]) -> int | None:
    """Where the object or call that begins at `start` closes; None when none begins there."""
    if text.startswith(("{", "["), start):
        return _closing(text, start)
    name = _CALL_START.match(text, start)
    if name is None or offered_name(name.group(1), offered) is None:
        return None
    return _closing(text, name.end() - 1)


def _closing(text: str, start: int) -> int | None:
    """The index after the bracket that closes the one at `start`, skipping quoted strings; None if it never closes."""
    stack = [_CLOSERS[text[start]]]
    i = start + 1
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _string_end(text, i)
            continue
        if c in _CLOSERS:
            stack.append(_CLOSERS[c])
        elif c in ")]}":
            if c != stack.pop():
                return None
            if not stack:
                return i + 1
        i += 1
    return None


def _string_end(text: str, start: int) -> int:
    quote, i = text[start], start + 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _calls(body: str, tools: list[Tool] | None, offered: set[str]) -> list[ToolCall]:
    """The calls a set-apart span holds: every item a call of an offered tool, or none."""
    if body[0] in "{[":
        try:
            value = loads_lenient(body)
        except (ValueError, RecursionError):
            return []
        items = value if isinstance(value, list) else [value]
        if not items or not all(names_a_call(item, offered) for item in items):
            return []
        return [call_from_object(item, body, offered) for item in items]
    call = _code_call(body, tools, offered)
    return [call] if call is not None else []


def _code_call(source: str, tools: list[Tool] | None, offered: set[str]) -> ToolCall | None:
    """`NAME(key=value, ...)` as a call, when every value is a literal; None for anything else. A lone
    object, `NAME({"query": ...})`, is the arguments when its keys are the tool's parameters, else no call."""
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    name = offered_name(node.func.id, offered)
    if name is None:
        return None
    parameters = _parameter_names(tools, name)
    if len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Dict):
        value = _literal(node.args[0])
        if not (isinstance(value, dict) and value and set(value) <= set(parameters)):
            return None
        return ToolCall(new_call_id(), name, value, dump_arguments(value))
    if len(node.args) > len(parameters) or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    pairs = [*zip(parameters, node.args), *((keyword.arg, keyword.value) for keyword in node.keywords)]
    arguments: dict[str, Any] = {}
    for key, value in pairs:
        if key is None:  # **kwargs
            return None
        literal = _literal(value)
        if literal is _NOT_LITERAL:
            return None
        arguments[key] = literal
    return ToolCall(new_call_id(), name, arguments, dump_arguments(arguments))


_NOT_LITERAL = object()


def _literal(node: ast.expr) -> Any:
    """The JSON value a literal node writes, else _NOT_LITERAL."""
    try:
        return _json_value(ast.literal_eval(_JsonNames().visit(node)))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


class _JsonNames(ast.NodeTransformer):
    """true, false and null, as a model that writes JSON writes them inside a call."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in _JSON_NAMES:
            return ast.copy_location(ast.Constant(_JSON_NAMES[node.id]), node)
        return node


def _json_value(value: Any) -> Any:
    """A literal as JSON holds it (a tuple as a list); ValueError for what JSON cannot (a set, bytes)."""
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _json_value(item) for key, item in value.items()}
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise ValueError(f"not a JSON value: {type(value).__name__}")


def _parameter_names(tools: list[Tool] | None, name: str) -> list[str]:
    for tool in tools or []:
        function = tool.get("function", tool)
        if function.get("name") == name:
            return list(((function.get("parameters") or {}).get("properties") or {}))
    return []
