"""What a small model's context gets from tools: brief tool descriptions and a tool output limit
(TOOL_DESCRIPTIONS, TOOL_OUTPUT_BYTES), on real tools over a real dataroom."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import catalog_result, make_engine, write_tree
from searchbox.dataroom.work_dir import prepare_work_dir

from searchbox.tools.catalog.excerpt import excerpt, term_weights, word_key
from searchbox.tools.registry import REGISTRY, enabled_tools, offered_tools
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext

EVERY_SPEC = list(REGISTRY.values())


@pytest.mark.parametrize("spec", EVERY_SPEC, ids=lambda spec: spec.name)
def test_a_brief_schema_keeps_what_a_call_needs(spec) -> None:
    full, brief = spec.openai_schema("full")["function"], spec.openai_schema("brief")["function"]
    assert brief["name"] == full["name"] and brief["description"] == spec.brief
    assert "\n" not in spec.brief and len(spec.brief) <= 100
    properties = full["parameters"]["properties"]
    assert brief["parameters"]["properties"].keys() == properties.keys()
    assert brief["parameters"]["required"] == full["parameters"]["required"]
    for name, prop in brief["parameters"]["properties"].items():
        assert prop["type"] == properties[name]["type"]
        assert prop.get("enum") == properties[name].get("enum") and prop.get("default") == properties[name].get("default")
        assert "description" not in prop and "maximum" not in prop


def test_a_default_run_s_tools_take_half_the_prompt_when_brief() -> None:
    offered = offered_tools(enabled_tools(None), bash=True).values()

    def size(descriptions: str) -> int:
        return sum(len(json.dumps(spec.openai_schema(descriptions))) for spec in offered)

    assert size("brief") < size("full") / 2


def long_documents(count: int) -> dict[str, str]:
    """Documents of about a chunk each (1,400 characters), the fact of each in its middle."""
    filler = "This paragraph restates general terms of business that apply to every party. "
    return {f"contracts/contract_{n}.txt": filler * 8 + f"The renewal fee of contract {n} is {n * 100} euros. "
            + filler * 8 for n in range(1, count + 1)}


def test_a_search_past_the_limit_shows_the_best_results_as_excerpts_and_names_the_rest(
        tmp_path: Path, packaged_settings, minilm) -> None:
    """Each excerpt keeps at least 700 characters: 8 excerpts of 430 in 4 KB hid the auditor's name from
    the 1.5B. The results that do not fit are named by path and chunk, with no id (no text shown)."""
    work = prepare_work_dir(tmp_path / "job", write_tree(tmp_path / "room", long_documents(6)))
    engine = make_engine(work, packaged_settings, minilm)
    query = {"query": "renewal fee of the contract", "k": 8}
    everything = catalog_result(ToolContext(work, SourceLedger(), retrieval=lambda: engine), "keyword_search", query)
    assert len(everything["results"]) == 6 and "note" not in everything and "also_matched" not in everything
    ranked = [r["path"] for r in everything["results"]]

    fitted = ToolContext(work, SourceLedger(), max_bytes=4096, retrieval=lambda: engine)
    excerpts = catalog_result(fitted, "keyword_search", query)
    shown = [r["path"] for r in excerpts["results"]]
    assert 3 <= len(shown) < 6 and shown == ranked[:len(shown)]
    assert excerpts["also_matched"] == [f"{path} (chunk 0)" for path in ranked[len(shown):]]
    assert excerpts["note"].startswith("texts are excerpts around the query's words")
    assert "4KB tool output limit" in excerpts["note"]
    assert f"{6 - len(shown)} more results in also_matched" in excerpts["note"]
    for short, whole in zip(excerpts["results"], everything["results"]):
        assert short["text"].strip("…") in whole["text"] and 700 <= len(short["text"]) < len(whole["text"])
        assert "The renewal fee of contract" in short["text"]  # the window is where the query's words are
    assert [s.id for s in fitted.ledger.sources()] == [r["id"] for r in excerpts["results"]]  # no id the model never saw
    assert len(json.dumps(excerpts, indent=1).encode()) <= 4096

    tight = ToolContext(work, SourceLedger(), max_bytes=1024, retrieval=lambda: engine)
    fewer = catalog_result(tight, "keyword_search", query)
    assert len(fewer["results"]) == 1 and fewer["results"][0]["path"] == ranked[0]
    assert len(fewer["also_matched"]) == 5
    assert len(json.dumps(fewer, indent=1).encode()) <= 1024


def test_many_results_past_the_limit_still_fit_it(tmp_path: Path, packaged_settings, minilm) -> None:
    """With k=50 the names of the results left out would fill 4 KB by themselves: only some are named."""
    work = prepare_work_dir(tmp_path / "job", write_tree(tmp_path / "room", long_documents(50)))
    engine = make_engine(work, packaged_settings, minilm)
    ctx = ToolContext(work, SourceLedger(), max_bytes=4096, retrieval=lambda: engine)
    result = catalog_result(ctx, "keyword_search", {"query": "renewal fee of the contract", "k": 50})
    assert len(json.dumps(result, indent=1).encode()) <= 4096
    assert len(result["results"]) >= 3 and all(len(r["text"]) >= 500 for r in result["results"])
    left_out = 50 - len(result["results"])
    assert len(result["also_matched"]) == 8 and f"{left_out} more results in also_matched (the first 8)" in result["note"]


def test_an_excerpt_is_the_window_where_the_rarer_query_words_are() -> None:
    filler = "The Master Agreement with the City of Harwick Falls is governed by Wisconsin law. "
    text = filler * 6 + "The initial term of the Master Agreement is three (3) years from 1 April 2022. " + filler * 6
    others = [filler * 3, "City of Harwick Falls, Master Agreement: invoices. " * 4]
    query = "What is the initial term of the Master Agreement with the City of Harwick Falls?"
    weights = term_weights(query, [text, *others])
    assert weights[word_key("initial")] > weights[word_key("harwick")] and "the" not in weights and "what" not in weights
    cut = excerpt(text, weights, 160)
    assert "initial term of the Master Agreement is three (3) years" in cut
    assert cut.startswith("…") and cut.endswith("…") and len(cut) <= 162 and not cut.strip("…").startswith(" ")
    assert excerpt("short text", weights, 160) == "short text"
    assert excerpt(text, {"absent": 1.0}, 60).startswith("The Master") and excerpt(text, {"absent": 1.0}, 60).endswith("…")


def test_an_excerpt_matches_a_word_s_other_forms_and_drops_layout() -> None:
    """A table laid out with dot leaders and padding (the built-in lease abstract): "expire" finds
    "Expiration", and the padding does not take the excerpt's characters."""
    rows = [("Premises", "410 Lakewalk Avenue, Duluth"), ("Landlord", "Lakewalk Commons LLC"),
            ("Lease date", "30 March 2021"), ("Rentable area", "22,400 rentable square feet"),
            ("Commencement", "1 June 2021"), ("Expiration", "31 May 2028"), ("Base rent", "$23.50 per RSF")]
    text = "LEASE ABSTRACT\n\n" + "".join(f"{name} {'.' * (20 - len(name))} {value}\n{' ' * 21}\n" for name, value in rows)
    weights = term_weights("when does the lease expire", [text, "lease of the office"])
    cut = excerpt(text, weights, 120)
    assert "Expiration 31 May 2028" in cut and ".." not in cut and "  " not in cut


def test_builtins_cut_at_the_limit_and_say_how_to_read_on(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "dataroom").mkdir(parents=True)
    (work / "dataroom" / "long.txt").write_text("".join(f"line {n}: {'x' * 60}\n" for n in range(1, 501)))
    ctx = ToolContext(work, SourceLedger(), max_bytes=2048)
    read = REGISTRY["read"].run(ctx, {"path": "dataroom/long.txt"})
    assert len(read.text.encode()) < 2048 + 300
    last = read.details["last_line"]
    assert 20 <= last < 40 and f"Use offset={last + 1} to continue" in read.text and "(2KB limit)" in read.text
    grep = REGISTRY["grep"].run(ctx, {"pattern": "line", "path": "dataroom", "limit": 1000})
    assert "2000 lines or 2KB, whichever comes first output limit reached" in grep.text
    bash = REGISTRY["bash"].run(ctx, {"command": "cat dataroom/long.txt"})
    assert "line 500:" in bash.text and "line 1:" not in bash.text and "(2KB limit)" in bash.text
