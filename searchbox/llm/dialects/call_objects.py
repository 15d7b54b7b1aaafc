"""A tool call from the JSON object a model wrote for it, and its arguments from a JSON string.

The object is `{"name": NAME, "arguments": {...}}`, `"parameters"` for `"arguments"`, `"function"`
for `"name"`, or OpenAI's own `{"type": "function", "function": {"name", "arguments"}}`; arguments
may be an object or a JSON string. Unreadable arguments make a `ToolCall` with a `parse_error`,
never an exception.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from searchbox.llm.dialects.jsonfix import loads_lenient
from searchbox.llm.types import Tool, ToolCall, dump_arguments


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:16]


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


def call_from_object(item: Any, raw: str, offered: set[str] | None = None) -> ToolCall:
    """The call `item` writes; given the tools on offer, its name is the offered one it means."""
    if not isinstance(item, dict):
        return ToolCall(new_call_id(), "", None, raw, "a tool call must be a JSON object with name and arguments")
    item = _unwrapped(item)
    name = _name(item) or ""
    if offered:
        name = offered_name(name, offered) or name
    args = item.get("arguments", item.get("parameters", {}))
    if isinstance(args, str):
        parsed, error = parse_arguments(args)
        return ToolCall(new_call_id(), name, parsed, args, error)
    if not isinstance(args, dict):
        return ToolCall(new_call_id(), name, None, json.dumps(args), "arguments must be a JSON object")
    return ToolCall(new_call_id(), name, args, dump_arguments(args))


def names_a_call(item: Any, offered: set[str]) -> bool:
    """Whether a JSON value written with no call markup is a call: an object naming an offered tool,
    with arguments that are values rather than a schema."""
    if not isinstance(item, dict):
        return False
    item = _unwrapped(item)
    if offered_name(_name(item), offered) is None or not {"arguments", "parameters"} & item.keys():
        return False
    # A tool definition repeated from the prompt has a JSON schema where a call has values.
    parameters = item.get("parameters")
    return not (isinstance(parameters, dict) and isinstance(parameters.get("properties"), dict))


def offered_name(name: str | None, offered: set[str]) -> str | None:
    """The offered tool `name` means: itself, else the one it spells in other letter case (the packaged
    1.5B, left to choose, opened 6 of its first 7 replies with `Search_dataroom(`); None when it names no
    offered tool or could mean two."""
    if not name or name in offered:
        return name or None
    matches = [tool for tool in offered if tool.casefold() == name.casefold()]
    return matches[0] if len(matches) == 1 else None


def offered_names(tools: list[Tool] | None) -> set[str]:
    return {str(tool.get("function", tool).get("name")) for tool in tools or []}


def _unwrapped(item: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's own shape written out as text: the call is its "function" object."""
    function = item.get("function")
    return function if isinstance(function, dict) else item


def _name(item: dict[str, Any]) -> str | None:
    for key in ("name", "function"):  # {"function": "grep", "arguments": ...}: small models write this too
        if isinstance(item.get(key), str) and item[key]:
            return str(item[key])
    return None
