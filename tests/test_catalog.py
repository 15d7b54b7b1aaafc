"""The catalog is the single source of truth; arguments are coerced and clamped, never crash."""

from __future__ import annotations

import pytest

from searchbox.settings import SettingsError
from searchbox.tools.catalog import ToolArgumentError, catalog_by_name, enabled_tools, load_catalog, validate_arguments
from searchbox.tools.retrieval_tools import TOOL_FUNCTIONS

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
    catalog = catalog_by_name()
    assert {n: (t.group, t.default) for n, t in catalog.items()} == SPEC_TOOLS
    assert set(catalog) == set(TOOL_FUNCTIONS)
    for tool in load_catalog():
        assert tool.description and tool.parameters["type"] == "object"
        assert set(tool.parameters.get("required", [])) <= set(tool.parameters["properties"])
        assert tool.openai_schema()["function"]["name"] == tool.name


def test_tool_gating() -> None:
    assert [t.name for t in enabled_tools(None)] == ["search_dataroom", "answer_question"]
    assert enabled_tools("") == []
    assert [t.name for t in enabled_tools("keyword_search, rerank")] == ["keyword_search", "rerank"]
    with pytest.raises(SettingsError, match="unknown tool"):
        enabled_tools("grep_everything")


def test_silly_values_are_clamped_with_a_note() -> None:
    tool = catalog_by_name()["search_dataroom"]
    args, notes = validate_arguments(tool, {"query": "revenue", "k": 10000, "colour": "red"})
    assert args["k"] == 50
    assert any("clamped" in n for n in notes) and any("colour" in n for n in notes)
    args, _ = validate_arguments(tool, {"query": "revenue", "k": "-3"})
    assert args["k"] == 1
    args, _ = validate_arguments(tool, {"query": "revenue", "paths": "finance"})
    assert args["paths"] == ["finance"]
    args, _ = validate_arguments(catalog_by_name()["cluster"], {"texts": ["a"], "threshold": 7})
    assert args["threshold"] == 0.999


def test_defaults_are_filled() -> None:
    args, notes = validate_arguments(catalog_by_name()["answer_question"], {"question": "who?"})
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
        validate_arguments(catalog_by_name()[name], args)  # type: ignore[arg-type]
