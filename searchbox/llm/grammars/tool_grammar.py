"""Grammars that hold a forced response of a chat-template model to one valid tool call, written in
the model's own call format (dialects/call_format.py).

llama-cpp-python's template path ignores tool_choice="required", and for a named tool it makes the
model write bare argument JSON outside its format. Here the call is written the way the template
renders calls in the history, so the next prompt shows the model its own format back.

Names are limited to the offered tools and arguments follow each tool's parameter schema, its lists
and strings bounded (schema_grammar), so a forced call costs tens of tokens rather than the output cap
(the toolbox still validates and clamps it). The result is GBNF text for
`llama_cpp.LlamaGrammar.from_string`; dialects/parsing.py reads the call back.
"""

from __future__ import annotations

import json
from typing import Any

from searchbox.llm.dialects.call_format import CallFormat
from searchbox.llm.grammars.schema_grammar import grammar_schema, schema_converter
from searchbox.llm.types import Tool

# XML values are raw text up to "\n</parameter>": any text with no "</" in it.
_XML_CHAR = '[^<] | "<" [^/]'
# A template that opens <think> in the prompt leaves the model inside its reasoning: it may finish
# that before the call (Qwen3.6), so the grammar lets it close the block first.
_REASONING = '( [^<] | "<" [^/] )* "</think>" [ \\n]*'


def call_grammar(tools: list[Tool], fmt: CallFormat, *, in_reasoning: bool = False) -> str:
    """GBNF for exactly one call of one of `tools` in `fmt`, after the reasoning a template opened."""
    if not tools:
        raise ValueError("a forced call needs at least one tool")
    converter = schema_converter()
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
    schema = grammar_schema(function.get("parameters") or {})
    # No properties at all means "no arguments": the empty object, not any object.
    return schema if schema.get("properties") else {"type": "object", "properties": {}}


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
    """Strings as raw text (as the template writes them), as long as their maxLength; everything
    else as its JSON."""
    enum = spec.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return "( " + " | ".join(_literal(v) for v in enum) + " )"
    if spec.get("type") == "string":
        limit = spec.get("maxLength")
        bound = "*" if limit is None else f"{{0,{limit}}}"
        return converter._add_rule("xml-text" if limit is None else f"xml-text-{limit}", f"( {_XML_CHAR} ){bound}")
    return converter.visit(spec, rule_name)


def _literal(text: str) -> str:
    return json.dumps(text)  # a GBNF literal escapes like a JSON string
