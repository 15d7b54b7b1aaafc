"""GBNF for JSON that follows a tool's argument schema, with its lists and strings bounded.

A grammar-held call is made of what the grammar allows, so an unbounded list or string lets a small
model write until the output cap: a forced search_dataroom call of the packaged 1.5B generated 2,048
tokens in 289 s, a `paths` list of made-up folders that grew until the cap (issue 21). Here every
list keeps its schema's maxItems (MAX_ITEMS at most, and MAX_ITEMS when it names none) and every
string its maxLength (MAX_CHARS at most), so a forced call costs what its schema allows. Longer
values need an unforced step; the toolbox still validates and clamps every call.

llama-cpp-python's converter writes a bound of n as n nested optional groups, which llama.cpp
refuses past a few hundred; here bounds are GBNF repetitions (`x{0,n}`), which llama.cpp expands itself.
"""

from __future__ import annotations

import functools
from typing import Any

# Items a grammar-held list may have. Small models under a grammar can repeat list items until the
# output cap (Qwen2.5-Coder 0.5B filled search_dataroom's paths with one file name over and over).
MAX_ITEMS = 16
# Characters a grammar-held string with a maxLength may have (a path's 4,096 or a bash command's 100,000
# would let a forced call run for minutes).
MAX_CHARS = 1024
# Limits the grammar leaves to the validator: bounds on numbers and text it cannot hold cheaply.
_DROPPED_KEYS = {"minLength", "minItems", "minimum", "maximum", "default", "description", "pattern", "format"}


def grammar_schema(schema: Any) -> Any:
    """A JSON schema as a grammar holds a value to: lists and strings bounded, the other limits dropped."""
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {k: _properties(v) if k == "properties" else grammar_schema(v)
               for k, v in schema.items() if k not in _DROPPED_KEYS}
    if bounded.get("type") == "array" and "items" in bounded:
        bounded["maxItems"] = min(_limit(bounded.get("maxItems"), MAX_ITEMS), MAX_ITEMS)
    if "maxLength" in bounded:
        bounded["maxLength"] = min(_limit(bounded["maxLength"], MAX_CHARS), MAX_CHARS)
    return bounded


def schema_converter() -> Any:
    """A fresh converter that writes bounded lists and strings as GBNF repetitions."""
    return _converter_class()(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)


def json_grammar(schema: dict[str, Any]) -> str:
    """GBNF for one JSON value that follows `schema` (tool arguments in it bounded by grammar_schema)."""
    converter = schema_converter()
    converter.visit(schema, "")
    return converter.format_grammar()


def _properties(properties: Any) -> Any:
    """Property names are names, not keywords: grep's "pattern" argument must stay."""
    if isinstance(properties, dict):
        return {name: grammar_schema(spec) for name, spec in properties.items()}
    return grammar_schema(properties)


def _limit(value: Any, fallback: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else fallback


@functools.cache
def _converter_class() -> type:
    """Built on first use: llama_cpp is a heavy import."""
    from llama_cpp.llama_grammar import PRIMITIVE_RULES, RESERVED_NAMES, SchemaConverter

    class BoundedConverter(SchemaConverter):  # type: ignore[misc]
        def visit(self, schema: dict[str, Any], name: str) -> str:
            rule_name = name + "-" if name in RESERVED_NAMES else name or "root"
            plain = not {"$ref", "oneOf", "anyOf", "const", "enum", "pattern", "format"} & schema.keys()
            if plain and schema.get("type") == "string" and "maxLength" in schema:
                char = self._add_primitive("char", PRIMITIVE_RULES["char"])
                return self._add_rule(rule_name, f'"\\"" {char}{{0,{schema["maxLength"]}}} "\\"" space')
            if plain and schema.get("type") == "array" and isinstance(schema.get("items"), dict) and "maxItems" in schema:
                item = self.visit(schema["items"], f"{name}{'-' if name else ''}item")
                return self._add_rule(rule_name, f'"[" space {_items(item, schema["maxItems"])} "]" space')
            return super().visit(schema, name)

    return BoundedConverter


def _items(item: str, most: int) -> str:
    """Up to `most` comma-separated items."""
    if most <= 0:
        return ""
    more = f' ( "," space {item} ){{0,{most - 1}}}' if most > 1 else ""
    return f"( {item}{more} )?"
