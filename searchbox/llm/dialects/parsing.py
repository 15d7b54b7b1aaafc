"""Reasoning and tool calls that a model wrote into its text, pulled out of the answer.

Used when an endpoint returns no native `tool_calls` (design §2.3). Two modes (TOOL_CALL_PARSING):

- strict reads the call formats chat templates define, several per message and in any order:
  `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Qwen2.5/3, Hermes), possibly fenced,
  and `<function=NAME><parameter=K>v</parameter>...</function>`, bare or inside `<tool_call>`
  (Qwen3.6 / Qwen3-Coder), whose values are text typed by the tool's schema or by JSON;
- lenient also reads, when no tagged call is present, the calls small models write outside those
  tags, set apart from prose and naming a tool on offer (written_calls.py): a JSON call object
  (`name` or `function`, with `arguments` or `parameters`) or `NAME(key=value, ...)`, fenced or on
  lines of their own.

Template markup a small model echoes is dropped: a `<tools>...</tools>` block (the template's tool
list) or a `<tool_response>...</tool_response>` block (a tool result it made up or repeated) is
neither a call nor answer text; a `<tools>` block that holds nothing but calls of offered tools
keeps them, as text (a call outside the `<tool_call>` tags: lenient reads it). Broken JSON is repaired where possible; what cannot be repaired
becomes a `ToolCall` with a `parse_error`, never an exception. Unknown tool names in tagged calls
are left for the loop to answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from searchbox.llm.dialects.call_objects import call_from_object, new_call_id
from searchbox.llm.dialects.jsonfix import loads_lenient
from searchbox.llm.dialects.written_calls import FENCE, holds_only_calls, written_calls
from searchbox.llm.types import Tool, ToolCall, dump_arguments

ToolCallParsing = Literal["strict", "lenient"]
PARSING_MODES: tuple[ToolCallParsing, ...] = ("strict", "lenient")
# What the two modes read, as runs record it (`harness`): raised whenever either mode reads a reply
# differently. 2: strict reads tags only; lenient adds JSON objects naming the tool by `function` and
# NAME(...) calls, fenced or on lines of their own (1, before: tags, then fenced or whole-reply JSON with `name`).
# 3: lenient also reads a tool's name in other letter case and NAME({...arguments...}). 4: and a JSON call left
# open to the end of the reply (the packaged 0.5B forgot the last brace, and the call became the answer).
PARSER_VERSION = 4

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_THINK_BLOCK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.S)
_MARKUP = re.compile(
    r"<tool_call>(?P<call>.*?)(?:</tool_call>|\Z)"
    r"|<function=(?P<fn>[^>\n]+)>(?P<fn_body>.*?)(?:</function>|\Z)",
    re.S,
)
_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|\Z)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_ECHOES = re.compile(r"<(tools|tool_response)>(.*?)(?:</\1>|\Z)", re.S)
_STRAY_TAGS = re.compile(r"</?tool_call>|</function>|</parameter>")
_NAME = re.compile(r"""["']?name["']?\s*:\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class ParsedText:
    text: str
    reasoning: str
    tool_calls: list[ToolCall]
    # The output outside reasoning when the parser read neither answer text nor a call in it (echoed template
    # markup, stray tags): kept as the model wrote it, so that a reply read as empty still shows what it was.
    unread: str = ""


def parse_assistant_text(
    text: str, tools: list[Tool] | None = None, *, starts_in_reasoning: bool = False,
    mode: ToolCallParsing = "strict",
) -> ParsedText:
    """Split a whole assistant message into answer text, reasoning and tool calls."""
    reasoning, written = split_reasoning(text, starts_in_reasoning=starts_in_reasoning)
    calls, answer = parse_tool_calls(written, tools, mode)
    unread = written if written.strip() and not (answer.strip() or calls) else ""
    return ParsedText(answer.strip(), reasoning, calls, unread)


def split_reasoning(text: str, *, starts_in_reasoning: bool = False) -> tuple[str, str]:
    """(reasoning, answer). A `</think>` with no opening tag closes a block the chat template opened."""
    parts: list[str] = []
    close = text.find(THINK_CLOSE)
    open_ = text.find(THINK_OPEN)
    if close >= 0 and (open_ < 0 or close < open_):
        parts.append(text[:close])
        text = text[close + len(THINK_CLOSE) :]
    elif starts_in_reasoning and open_ < 0:
        return text.strip(), ""

    def take(match: re.Match[str]) -> str:
        parts.append(match.group(1))
        return ""

    answer = _THINK_BLOCK.sub(take, text)
    return "\n\n".join(p.strip() for p in parts if p.strip()), answer.strip()


def parse_tool_calls(
    text: str, tools: list[Tool] | None = None, mode: ToolCallParsing = "strict"
) -> tuple[list[ToolCall], str]:
    """(tool calls in order of appearance, the text with their markup removed)."""
    calls: list[ToolCall] = []

    def take(match: re.Match[str]) -> str:
        if match.group("call") is not None:
            calls.extend(_calls_in_block(match.group("call"), tools))
        else:
            calls.append(_xml_call(match.group("fn"), match.group("fn_body"), tools))
        return ""

    rest = _STRAY_TAGS.sub("", _MARKUP.sub(take, _ECHOES.sub(lambda echo: _unechoed(echo, tools), text)))
    if not calls and mode == "lenient":
        calls, rest = written_calls(rest, tools)
    return calls, rest.strip()


def _unechoed(echo: re.Match[str], tools: list[Tool] | None) -> str:
    """Nothing of echoed template markup, but the calls of a <tools> block that holds nothing else:
    the 1.5B, left to choose, wrapped its call in the tool list's tags (docs/findings/2026-12-06-figures-from-code-comments.md). They
    stay as text, which lenient reads as calls."""
    body = echo.group(2)
    return body if echo.group(1) == "tools" and holds_only_calls(body, tools) else ""


def _calls_in_block(body: str, tools: list[Tool] | None) -> list[ToolCall]:
    body = _unfence(body)
    if "<function=" in body:
        return [_xml_call(m.group(1), m.group(2), tools) for m in _FUNCTION.finditer(body)]
    return _json_calls(body)


def _json_calls(body: str) -> list[ToolCall]:
    try:
        value = loads_lenient(body)
    except ValueError as exc:
        name = _NAME.search(body)
        error = f"tool call is not valid JSON: {exc}"
        return [ToolCall(new_call_id(), name.group(1) if name else "", None, body, error)]
    items = value if isinstance(value, list) else [value]
    return [call_from_object(item, body) for item in items]


def _xml_call(name: str, body: str, tools: list[Tool] | None) -> ToolCall:
    name = name.strip()
    types = _parameter_types(tools, name)
    arguments = {}
    for match in _PARAMETER.finditer(body):
        key = match.group(1).strip()
        arguments[key] = _typed(_strip_one_newline(match.group(2)), types.get(key))
    return ToolCall(new_call_id(), name, arguments, dump_arguments(arguments))


def _typed(value: str, schema_type: str | None) -> Any:
    """XML parameter values are text: give numbers, booleans, lists and objects their JSON type."""
    if schema_type == "string":
        return value
    try:
        decoded = json.loads(value) if schema_type is None else loads_lenient(value)
    except (ValueError, RecursionError):  # RecursionError: brackets nested too deeply to decode
        return value
    # Without a schema a quoted value stays as written: the model may mean the quotes.
    return value if schema_type is None and isinstance(decoded, str) else decoded


def _parameter_types(tools: list[Tool] | None, name: str) -> dict[str, str]:
    for tool in tools or []:
        function = tool.get("function", tool)
        if function.get("name") == name:
            properties = (function.get("parameters") or {}).get("properties") or {}
            return {
                key: spec["type"]
                for key, spec in properties.items()
                if isinstance(spec, dict) and isinstance(spec.get("type"), str)
            }
    return {}


def _strip_one_newline(value: str) -> str:
    """Templates put each value on its own lines; the newlines around it are not part of it."""
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def _unfence(body: str) -> str:
    body = body.strip()
    match = FENCE.fullmatch(body)
    return match.group(2).strip() if match else body
