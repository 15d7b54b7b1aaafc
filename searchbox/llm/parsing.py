"""Reasoning and tool calls that a model wrote into its text, pulled out of the answer.

Used when an endpoint returns no native `tool_calls` (SPEC 2.3). Forms understood, several per
message and in any order:

- `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Qwen2.5/3, Hermes), possibly fenced;
- `<function=NAME><parameter=K>v</parameter>...</function>`, bare or inside `<tool_call>`
  (Qwen3.6 / Qwen3-Coder); values are text, typed by the tool's schema or by JSON;
- a fenced JSON block holding `{"name", "arguments"}`, or such an object (or a list of them) as
  the whole message, only when no tagged call is present and only when each name is an offered
  tool: small models write these, and prose that merely shows JSON must not become a call.

Template markup a small model echoes is dropped: a `<tools>...</tools>` block (the template's tool
list) or a `<tool_response>...</tool_response>` block (a tool result it made up or repeated) is
neither a call nor answer text. Broken JSON is repaired where possible; what cannot be repaired
becomes a `ToolCall` with a `parse_error`, never an exception. Unknown tool names in tagged calls
are left for the loop to answer.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from searchbox.llm.jsonfix import loads_lenient
from searchbox.llm.types import Tool, ToolCall, dump_arguments

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_THINK_BLOCK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.S)
_MARKUP = re.compile(
    r"<tool_call>(?P<call>.*?)(?:</tool_call>|\Z)"
    r"|<function=(?P<fn>[^>\n]+)>(?P<fn_body>.*?)(?:</function>|\Z)",
    re.S,
)
_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|\Z)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_FENCE = re.compile(r"```[ \t]*([\w-]*)[ \t]*\n(.*?)(?:```|\Z)", re.S)
_ECHOES = re.compile(r"<(tools|tool_response)>.*?(?:</\1>|\Z)", re.S)
_STRAY_TAGS = re.compile(r"</?tool_call>|</function>|</parameter>")
_NAME = re.compile(r"""["']?name["']?\s*:\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class ParsedText:
    text: str
    reasoning: str
    tool_calls: list[ToolCall]


def parse_assistant_text(
    text: str, tools: list[Tool] | None = None, *, starts_in_reasoning: bool = False
) -> ParsedText:
    """Split a whole assistant message into answer text, reasoning and tool calls."""
    reasoning, answer = split_reasoning(text, starts_in_reasoning=starts_in_reasoning)
    calls, answer = parse_tool_calls(answer, tools)
    return ParsedText(answer.strip(), reasoning, calls)


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


def parse_tool_calls(text: str, tools: list[Tool] | None = None) -> tuple[list[ToolCall], str]:
    """(tool calls in order of appearance, the text with their markup removed)."""
    calls: list[ToolCall] = []

    def take(match: re.Match[str]) -> str:
        if match.group("call") is not None:
            calls.extend(_calls_in_block(match.group("call"), tools))
        else:
            calls.append(_xml_call(match.group("fn"), match.group("fn_body"), tools))
        return ""

    rest = _MARKUP.sub(take, _ECHOES.sub("", text))
    offered = _offered_names(tools)
    if not calls:
        rest = _FENCE.sub(lambda m: _fenced_calls(m, calls, offered), rest)
    if not calls:
        bare = _bare_calls(rest, offered)
        if bare:
            return bare, ""
    return calls, _STRAY_TAGS.sub("", rest).strip()


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) or (None, what is wrong) for a JSON argument string."""
    if not raw.strip():
        return {}, None
    try:
        value = loads_lenient(raw)
        if isinstance(value, str):  # arguments encoded twice
            value = loads_lenient(value)
    except ValueError as exc:
        return None, f"arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:16]


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
    return [_call_from_object(item, body) for item in items]


def _call_from_object(item: Any, raw: str) -> ToolCall:
    if not isinstance(item, dict):
        return ToolCall(new_call_id(), "", None, raw, "a tool call must be a JSON object with name and arguments")
    if isinstance(item.get("function"), dict):  # OpenAI's own shape written out as text
        item = item["function"]
    name = str(item.get("name") or "")
    args = item.get("arguments", item.get("parameters", {}))
    if isinstance(args, str):
        parsed, error = parse_arguments(args)
        return ToolCall(new_call_id(), name, parsed, args, error)
    if not isinstance(args, dict):
        return ToolCall(new_call_id(), name, None, json.dumps(args), "arguments must be a JSON object")
    return ToolCall(new_call_id(), name, args, dump_arguments(args))


def _xml_call(name: str, body: str, tools: list[Tool] | None) -> ToolCall:
    name = name.strip()
    types = _parameter_types(tools, name)
    arguments = {}
    for match in _PARAMETER.finditer(body):
        key = match.group(1).strip()
        arguments[key] = _typed(_strip_one_newline(match.group(2)), types.get(key))
    return ToolCall(new_call_id(), name, arguments, dump_arguments(arguments))


def _fenced_calls(match: re.Match[str], calls: list[ToolCall], offered: set[str]) -> str:
    """A fenced block that is a tool call (or a list of them) becomes calls; any other block stays."""
    found = _untagged_calls(match.group(2), offered)
    if not found:
        return match.group(0)
    calls.extend(found)
    return ""


def _bare_calls(text: str, offered: set[str]) -> list[ToolCall]:
    """The calls of a message that is nothing but a JSON call object (or a list of them)."""
    text = text.strip()
    # Whole message only: loads_lenient would also read a JSON prefix of a sentence.
    if not text or text[0] not in "{[" or text[-1] not in "}]":
        return []
    return _untagged_calls(text, offered)


def _untagged_calls(body: str, offered: set[str]) -> list[ToolCall]:
    """Calls from JSON written with no call markup; none unless every item is a call of an offered tool."""
    try:
        value = loads_lenient(body)
    except ValueError:
        return []
    items = value if isinstance(value, list) else [value]
    if not items or not all(_looks_like_call(item, offered) for item in items):
        return []
    return [_call_from_object(item, body) for item in items]


def _looks_like_call(item: Any, offered: set[str]) -> bool:
    if not isinstance(item, dict):
        return False
    if isinstance(item.get("function"), dict):  # OpenAI's own shape
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or name not in offered or not {"arguments", "parameters"} & item.keys():
        return False
    # A tool definition repeated from the prompt has a JSON schema where a call has values.
    parameters = item.get("parameters")
    return not (isinstance(parameters, dict) and isinstance(parameters.get("properties"), dict))


def _offered_names(tools: list[Tool] | None) -> set[str]:
    return {str(tool.get("function", tool).get("name")) for tool in tools or []}


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
    match = _FENCE.fullmatch(body)
    return match.group(2).strip() if match else body
