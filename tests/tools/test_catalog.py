"""The catalog tools as docs/design.md §2.4 lists them, catalog.json generated from their declarations; arguments
are coerced and clamped, never crash."""

from __future__ import annotations

import json

import pytest

from searchbox.settings import SettingsError
from searchbox.tools.arguments import ToolArgumentError, validate_arguments
from searchbox.tools.catalog import CATALOG_TOOLS
from searchbox.tools.registry import CATALOG_PATH, REGISTRY, catalog_json, enabled_tools

SPEC_TOOLS = {
    "search_dataroom": ("high", True),
    "answer_question": ("high", True),
    "keyword_search": ("high", False),
    "embed_texts": ("low", False),
    "rerank": ("low", False),
    "similarity": ("low", False),
    "classify": ("low", False),
    "cluster": ("low", False),
    "select_diverse": ("low", False),
}


def test_catalog_matches_spec_and_implementations() -> None:
    assert {t.name: (t.group, t.default) for t in CATALOG_TOOLS} == SPEC_TOOLS
    for tool in CATALOG_TOOLS:
        assert callable(tool.function)
        assert tool.description and tool.parameters["type"] == "object"
        assert set(tool.parameters.get("required", [])) <= set(tool.parameters["properties"])
        assert tool.openai_schema()["function"]["name"] == tool.name


def test_catalog_json_is_generated_from_the_declarations() -> None:
    assert CATALOG_PATH.read_text(encoding="utf-8") == catalog_json(), \
        "catalog.json is out of date: run python -m searchbox.tools.registry"
    listed = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))["tools"]
    assert [entry["name"] for entry in listed] == [tool.name for tool in CATALOG_TOOLS]
    assert listed[0]["parameters"] == REGISTRY["search_dataroom"].parameters


def test_tool_gating() -> None:
    assert [t.name for t in enabled_tools(None)] == ["search_dataroom", "answer_question"]
    assert enabled_tools("") == []
    assert [t.name for t in enabled_tools("keyword_search, rerank")] == ["keyword_search", "rerank"]
    with pytest.raises(SettingsError, match="unknown tool"):
        enabled_tools("grep_everything")


def test_silly_values_are_clamped_with_a_note() -> None:
    tool = REGISTRY["search_dataroom"]
    args, notes = validate_arguments(tool, {"query": "revenue", "k": 10000, "colour": "red"})
    assert args["k"] == 50
    assert any("clamped" in n for n in notes) and any("colour" in n for n in notes)
    args, _ = validate_arguments(tool, {"query": "revenue", "k": "-3"})
    assert args["k"] == 1
    args, _ = validate_arguments(tool, {"query": "revenue", "paths": "finance"})
    assert args["paths"] == ["finance"]
    args, _ = validate_arguments(REGISTRY["cluster"], {"texts": ["a"], "threshold": 7})
    assert args["threshold"] == 0.999
    # The bounds a forced call's grammar holds to (schema_grammar) hold for every call.
    args, notes = validate_arguments(tool, {"query": "q" * 900, "paths": [f"dataroom/{'x' * 300}", "a", "b", "c", "d"]})
    assert len(args["query"]) == 500 and args["paths"] == [f"dataroom/{'x' * 247}", "a", "b", "c"]
    assert "'paths' items cut to 256 characters" in notes and "'paths' cut to its first 4 items" in notes


def test_defaults_are_filled() -> None:
    args, notes = validate_arguments(REGISTRY["answer_question"], {"question": "who?"})
    assert args == {"question": "who?", "k": 5} and notes == []


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("search_dataroom", {}, "needs the argument 'query'"),
        ("search_dataroom", {"query": "   "}, "is empty"),
        ("search_dataroom", {"query": "x", "k": "many"}, "must be a number"),
        ("embed_texts", {"texts": []}, "at least 1"),
        ("embed_texts", {"texts": ["a"], "role": "robot"}, "must be one of"),
        ("rerank", {"query": "x", "documents": {"a": 1}}, "list of strings"),
        ("search_dataroom", ["query"], "object of named arguments"),
    ],
)
def test_unusable_arguments_raise_a_readable_error(name: str, args: object, message: str) -> None:
    with pytest.raises(ToolArgumentError, match=message):
        validate_arguments(REGISTRY[name], args)  # type: ignore[arg-type]
