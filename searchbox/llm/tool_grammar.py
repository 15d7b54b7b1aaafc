"""Grammars that hold a forced response of a chat-template model to one valid tool call, written in
the model's own call format (call_format.py).

llama-cpp-python's template path ignores tool_choice="required", and for a named tool it makes the
model write bare argument JSON outside its format. Here the call is written the way the template
renders calls in the history, so the next prompt shows the model its own format back.

Names are limited to the offered tools and arguments follow each tool's parameter schema, less the
limits grammars unroll into huge rules (the toolbox still validates and clamps them). The result
is GBNF text for `llama_cpp.LlamaGrammar.from_string`; parsing.py reads the call back.
"""

from __future__ import annotations

import json
from typing import Any

from searchbox.llm.call_format import CallFormat
from searchbox.llm.json_actions import grammar_schema
from searchbox.llm.types import Tool

# Items a forced call may put in one list. Small models under a grammar can repeat list items until
# the output cap (Qwen2.5-Coder 0.5B filled search_dataroom's paths with one file name over and over);
# this ends such a loop after a few hundred tokens. Longer lists need an unforced step.
MAX_ITEMS = 16
# XML values are raw text up to "\n</parameter>": any text with no "</" in it.
_XML_TEXT = '( [^<] | "<" [^/] )*'
# A template that opens <think> in the prompt leaves the model inside its reasoning: it may finish
# that before the call (Qwen3.6), so the grammar lets it close the block first.
_REASONING = '( [^<] | "<" [^/] )* "</think>" [ \\n]*'


def call_grammar(tools: list[Tool], fmt: CallFormat, *, in_reasoning: bool = False) -> str:
    """GBNF for exactly one call of one of `tools` in `fmt`, after the reasoning a template opened."""
    from llama_cpp.llama_grammar import SchemaConverter  # heavy import, only where a grammar is built

    if not tools:
        raise ValueError("a forced call needs at least one tool")
    converter = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    if fmt == "json":
        call = converter.visit({"oneOf": [_json_call_schema(tool) for tool in tools]}, "call")
    else:
        call = converter._add_rule("call", " | ".join(_xml_function(converter, tool) for tool in tools))
    prefix = "reasoning " if in_reasoning else ""
    rules = [converter.format_grammar(), f'root ::= {prefix}"<tool_call>\\n" {call} "\\n</tool_call>"']
    if in_reasoning:
        rules.append(f"reasoning ::= {_REASONING}")
    return "\n".join(rules)


def _json_call_schema(tool: Tool) -> dict[str, Any]:
    function = tool["function"]
    return {
        "type": "object",
        "properties": {"name": {"const": function["name"]},
                       "arguments": _parameters(function)},
        "required": ["name", "arguments"],
    }


def _parameters(function: dict[str, Any]) -> dict[str, Any]:
    schema = _capped(grammar_schema(function.get("parameters") or {}))
    # No properties at all means "no arguments": the empty object, not any object.
    return schema if schema.get("properties") else {"type": "object", "properties": {}}


def _capped(schema: Any) -> Any:
    """The schema with every list limited to MAX_ITEMS items."""
    if isinstance(schema, list):
        return [_capped(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    capped = {key: _capped(value) for key, value in schema.items()}
    if capped.get("type") == "array" and "items" in capped:
        capped["maxItems"] = MAX_ITEMS
    return capped


def _xml_function(converter: Any, tool: Tool) -> str:
    """One `<function=NAME>` block: parameters in schema order, the optional ones optional."""
    function = tool["function"]
    name = function["name"]
    schema = _parameters(function)
    required = set(schema.get("required", []))
    parts = [_literal(f"<function={name}>\n")]
    for key, spec in schema["properties"].items():
        value = _xml_value(converter, spec if isinstance(spec, dict) else {}, f"{name}-{key}")
        parameter = " ".join((_literal(f"<parameter={key}>\n"), value, _literal("\n</parameter>\n")))
        parts.append(parameter if key in required else f"( {parameter} )?")
    parts.append(_literal("</function>"))
    return converter._add_rule(f"fn-{name}", " ".join(parts))


def _xml_value(converter: Any, spec: dict[str, Any], rule_name: str) -> str:
    """Strings as raw text (as the template writes them), everything else as its JSON."""
    enum = spec.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return "( " + " | ".join(_literal(v) for v in enum) + " )"
    if spec.get("type") == "string":
        return converter._add_rule("xml-text", _XML_TEXT)
    return converter.visit(spec, rule_name)


def _literal(text: str) -> str:
    return json.dumps(text)  # a GBNF literal escapes like a JSON string
