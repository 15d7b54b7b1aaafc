"""Argument validation for every tool, against its JSON schema: it coerces and clamps, so a small
model's silly value (k=10000, "5" for 5, one string for a list) gets a bounded, sensible call instead
of a crash, and raises ToolArgumentError, the one way a tool refuses, when nothing sensible is left.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from searchbox.tools.tool import Tool


class ToolArgumentError(ValueError):
    """Arguments that cannot be made valid, or a call the tool refuses (a path outside work/, a file
    that is not there); the message goes back to the model."""


def validate_arguments(tool: Tool, args: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """Coerce and clamp `args` against the tool's schema. Returns (clean arguments, notes on what
    was changed). Raises ToolArgumentError when a required argument is missing or unusable."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolArgumentError(f"{tool.name} takes an object of named arguments, got {type(args).__name__}")
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    notes = [f"ignored unknown argument '{k}'" for k in args if k not in properties]
    clean: dict[str, Any] = {}
    for name, schema in properties.items():
        value = args.get(name)
        if value is None:
            if name in tool.parameters.get("required", []):
                raise ToolArgumentError(f"{tool.name} needs the argument '{name}' ({_describe(schema)})")
            if "default" in schema:
                clean[name] = schema["default"]
            continue
        clean[name] = _coerce(tool.name, name, schema, value, notes)
    return clean, notes


def _describe(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "value")
    if kind == "array":
        return f"a list of {schema.get('items', {}).get('type', 'string')}s"
    return f"a {kind}"


def _coerce(tool: str, name: str, schema: dict[str, Any], value: Any, notes: list[str]) -> Any:
    kind = schema.get("type")
    where = f"{tool}: argument '{name}'"
    if kind == "string":
        if isinstance(value, (dict, list)):
            raise ToolArgumentError(f"{where} must be a string")
        text = str(value)
        if "enum" in schema and text not in schema["enum"]:
            raise ToolArgumentError(f"{where} must be one of {', '.join(schema['enum'])}, got {_preview(text)}")
        limit = schema.get("maxLength")
        if limit and len(text) > limit:
            notes.append(f"'{name}' cut to {limit} characters")
            text = text[:limit]
        if not text.strip() and schema.get("minLength", 1) > 0:  # minLength 0: empty is a real value
            raise ToolArgumentError(f"{where} is empty")
        return text
    if kind in ("integer", "number"):
        try:
            number: float = float(value)
        except OverflowError:  # an integer past the float range (10**400): clamped like infinity
            number = math.inf if value > 0 else -math.inf
        except (TypeError, ValueError):
            raise ToolArgumentError(f"{where} must be a number, got {_preview(value)}") from None
        if number != number:  # NaN
            raise ToolArgumentError(f"{where} must be a number, got NaN")
        low, high = schema.get("minimum"), schema.get("maximum")
        clamped = min(max(number, low if low is not None else number), high if high is not None else number)
        if not math.isfinite(clamped):  # no bound on that side to clamp it to
            raise ToolArgumentError(f"{where} must be a finite number, got {_preview(value)}")
        if clamped != number:
            notes.append(f"'{name}' clamped from {_preview(value)} to {clamped:g}")
        return int(round(clamped)) if kind == "integer" else clamped
    if kind == "array":
        if schema.get("items", {}).get("type") == "object":
            items = _objects(where, value)
        else:
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list):
                raise ToolArgumentError(f"{where} must be a list of strings")
            items = [item if isinstance(item, str) else json.dumps(item) for item in items]
            longest = schema.get("items", {}).get("maxLength")
            if longest and any(len(item) > longest for item in items):
                notes.append(f"'{name}' items cut to {longest} characters")
                items = [item[:longest] for item in items]
        if len(items) < schema.get("minItems", 0):
            raise ToolArgumentError(f"{where} needs at least {schema['minItems']} item(s)")
        limit = schema.get("maxItems")
        if limit and len(items) > limit:
            notes.append(f"'{name}' cut to its first {limit} items")
            items = items[:limit]
        return items
    if kind == "boolean":
        return value if isinstance(value, bool) else str(value).strip().lower() in {"1", "true", "yes", "on"}
    return value


def _preview(value: Any) -> str:
    """A value as an error message quotes it: short, however much the model sent."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _objects(where: str, value: Any) -> list[dict[str, Any]]:
    """A list of objects; small models often send it JSON-encoded, or send one object bare."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: nested too deeply to decode
            raise ToolArgumentError(f"{where} must be a list of objects, got a string that is not JSON") from None
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ToolArgumentError(f"{where} must be a list of objects")
    return items
