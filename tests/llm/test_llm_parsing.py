"""Tool calls and reasoning written in text, repaired JSON, and the live splitter."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from searchbox.llm.dialects.jsonfix import loads_lenient
from searchbox.llm.clients.live_split import LiveSplitter
from searchbox.llm.dialects.call_objects import parse_arguments
from searchbox.llm.dialects.parsing import ParsedText, parse_assistant_text, parse_tool_calls, split_reasoning
from searchbox.llm.dialects.written_calls import without_call_attempts
from searchbox.tools.registry import enabled_tools, offered_tools

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
            },
        },
    }
]

OFFERED = [
    *TOOLS,
    {"type": "function", "function": {"name": "find", "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "search_dataroom", "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "k": {"type": "integer"}, "paths": {"type": "array"}}}}},
]


def test_json_tool_call_in_tags_is_parsed_and_removed_from_text() -> None:
    text = 'Let me look.\n<tool_call>\n{"name": "grep", "arguments": {"pattern": "lease", "ignoreCase": true}}\n</tool_call>'
    calls, rest = parse_tool_calls(text)
    assert [(c.name, c.arguments, c.parse_error) for c in calls] == [("grep", {"pattern": "lease", "ignoreCase": True}, None)]
    assert rest == "Let me look."
    assert calls[0].id.startswith("call_")


def test_several_calls_keep_their_order_across_forms() -> None:
    text = (
        '<tool_call>{"name": "ls", "arguments": {}}</tool_call>\n'
        "<function=read><parameter=path>\ndataroom/a.md\n</parameter></function>\n"
        '<tool_call>\n<function=grep>\n<parameter=pattern>\nrent\n</parameter>\n</function>\n</tool_call>'
    )
    calls, rest = parse_tool_calls(text)
    assert [c.name for c in calls] == ["ls", "read", "grep"]
    assert calls[1].arguments == {"path": "dataroom/a.md"}
    assert calls[2].arguments == {"pattern": "rent"}
    assert rest == ""


def test_xml_values_are_typed_by_json_without_a_schema() -> None:
    text = (
        "<function=search_dataroom>\n<parameter=query>\nrevenue 2025\n</parameter>\n<parameter=k>\n5\n</parameter>\n"
        '<parameter=paths>\n["a.md", "b.md"]\n</parameter>\n<parameter=exact>\nfalse\n</parameter>\n'
        "<parameter=code>\nline 1\nline 2\n</parameter>\n</function>"
    )
    [call] = parse_tool_calls(text)[0]
    assert call.arguments == {"query": "revenue 2025", "k": 5, "paths": ["a.md", "b.md"], "exact": False, "code": "line 1\nline 2"}
    assert call.raw_arguments.startswith("{")


def test_xml_values_follow_the_tool_schema() -> None:
    text = "<function=read><parameter=path>\n2025\n</parameter><parameter=limit>\n40\n</parameter></function>"
    [call] = parse_tool_calls(text, TOOLS)[0]
    assert call.arguments == {"path": "2025", "limit": 40}  # a string parameter stays a string


def test_unclosed_xml_call_at_the_end_of_the_message_still_parses() -> None:
    [call] = parse_tool_calls("<function=read>\n<parameter=path>\nnotes.md")[0]
    assert call.arguments == {"path": "notes.md"}


def test_fenced_json_inside_tags_and_bare_fenced_calls() -> None:
    calls, _ = parse_tool_calls('<tool_call>\n```json\n{"name": "ls", "arguments": {"path": "."}}\n```\n</tool_call>')
    assert calls[0].arguments == {"path": "."}
    calls, rest = parse_tool_calls('I will search.\n```json\n{"name": "find", "arguments": {"pattern": "*.md"}}\n```', OFFERED,
                                   "lenient")
    assert [(c.name, c.arguments) for c in calls] == [("find", {"pattern": "*.md"})]
    assert rest == "I will search."


def test_a_fenced_block_that_is_not_a_call_stays_in_the_text() -> None:
    text = 'Here is the data:\n```json\n{"revenue": 48.2}\n```'
    calls, rest = parse_tool_calls(text, OFFERED, "lenient")
    assert calls == [] and rest == text


# What Qwen2.5-Coder 0.5B/1.5B wrote in the harness instead of tagged calls.
@pytest.mark.parametrize(
    "text, name, arguments",
    [
        ('```json\n{"name": "search_dataroom", "arguments": {"query": "auditor FY2025"}}\n```',
         "search_dataroom", {"query": "auditor FY2025"}),
        ('```\n{"name": "find", "arguments": {"pattern": "*.pdf"}}\n```', "find", {"pattern": "*.pdf"}),
        ('{"name": "search_dataroom", "arguments": {"query": "audit report"}}', "search_dataroom", {"query": "audit report"}),
        ('  \n{"name": "find", "parameters": {"pattern": "*.md"}}\n', "find", {"pattern": "*.md"}),
        ('{"type": "function", "function": {"name": "find", "arguments": "{\\"pattern\\": \\"*.md\\"}"}}',
         "find", {"pattern": "*.md"}),
    ],
)
def test_untagged_calls_of_offered_tools(text: str, name: str, arguments: dict) -> None:
    calls, rest = parse_tool_calls(text, OFFERED, "lenient")
    assert [(c.name, c.arguments, c.parse_error) for c in calls] == [(name, arguments, None)]
    assert rest == ""
    assert parse_tool_calls(text, OFFERED, "strict") == ([], text.strip())  # strict reads the template's tags only


def test_a_bare_list_of_calls_is_every_call() -> None:
    text = '[{"name": "find", "arguments": {"pattern": "*.md"}}, {"name": "search_dataroom", "arguments": {"query": "lease"}}]'
    assert [c.name for c in parse_tool_calls(text, OFFERED, "lenient")[0]] == ["find", "search_dataroom"]


@pytest.mark.parametrize(
    "text",
    [
        # The name is no offered tool: an example in an answer, or a record from a document.
        '```json\n{"name": "Acme Holdings", "arguments": {"revenue": 48.2}}\n```',
        '{"name": "launch_rockets", "arguments": {"n": 3}}',
        # JSON inside prose is shown, not called.
        'I would call {"name": "find", "arguments": {"pattern": "*.md"}} next.',
        '{"name": "find", "arguments": {"pattern": "*.md"}} and then read the lease.',
        # A tool definition repeated from the prompt: a schema where a call has values.
        '```json\n{"name": "find", "description": "Find files", "parameters": {"type": "object", '
        '"properties": {"pattern": {"type": "string"}}}}\n```',
        # One item of a list that is no call makes the whole block text.
        '```json\n[{"name": "find", "arguments": {}}, {"revenue": 1}]\n```',
        '{"name": ["find"], "arguments": {}}',
    ],
)
def test_prose_and_json_that_is_no_call_stay_text(text: str) -> None:
    calls, rest = parse_tool_calls(text, OFFERED, "lenient")
    assert calls == [] and rest == text.strip()


def test_untagged_calls_need_tools_on_offer() -> None:
    # A wrap-up offers no tools: a call written then is part of the answer, not a call.
    text = '```json\n{"name": "find", "arguments": {"pattern": "*.md"}}\n```'
    assert parse_tool_calls(text, None, "lenient") == ([], text)
    assert parse_tool_calls('{"name": "find", "arguments": {}}', None, "lenient") == ([], '{"name": "find", "arguments": {}}')
    assert parse_tool_calls('find(pattern="*.md")', None, "lenient") == ([], 'find(pattern="*.md")')


# The tools of the lenient tests: what a default run offers, in short.
WITH_GREP = [*OFFERED, {"type": "function", "function": {"name": "grep", "parameters": {"type": "object", "properties": {
    "pattern": {"type": "string"}, "path": {"type": "string"}}}}}]


# Calls the packaged Qwen2.5-Coder models wrote outside the <tool_call> tags with forcing off, and the
# ways they set them apart (testkit/data/tool_call_replies.jsonl holds the recorded ones).
@pytest.mark.parametrize(
    "text, calls, rest",
    [
        ('```json\n{"function": "grep", "arguments": {"pattern": "visual tokens", "path": "dataroom"}}\n```',
         [("grep", {"pattern": "visual tokens", "path": "dataroom"})], ""),
        ('search_dataroom(query="auditor\'s report", k=1, paths=["dataroom/models"])',
         [("search_dataroom", {"query": "auditor's report", "k": 1, "paths": ["dataroom/models"]})], ""),
        ("```python\nsearch_dataroom(query='lease end date')\n```", [("search_dataroom", {"query": "lease end date"})], ""),
        ('I will search the dataroom.\nsearch_dataroom(query="lease")', [("search_dataroom", {"query": "lease"})],
         "I will search the dataroom."),
        ('Next:\n  `find(pattern="*.md", path=null)`\nThen I read it.', [("find", {"pattern": "*.md", "path": None})],
         "Next:\n\nThen I read it."),
        ('Next:\n{"name": "find", "arguments": {"pattern": "*.md"}}', [("find", {"pattern": "*.md"})], "Next:"),
        ('search_dataroom("lease end")', [("search_dataroom", {"query": "lease end"})], ""),  # schema order
        ('search_dataroom(\n    query="lease",\n    paths=("dataroom/legal",),\n)',
         [("search_dataroom", {"query": "lease", "paths": ["dataroom/legal"]})], ""),
        ('find(pattern="*.pdf")\ngrep(pattern="auditor", path="dataroom")',
         [("find", {"pattern": "*.pdf"}), ("grep", {"pattern": "auditor", "path": "dataroom"})], ""),
        ('{"function": "find", "parameters": {"pattern": "*.md"}};', [("find", {"pattern": "*.md"})], ""),
        # As the packaged 1.5B opened its replies in the minimal loop: the name capitalised, the
        # arguments as keywords or as one object.
        ('Search_dataroom(query="term loan interest rate", k=8)',
         [("search_dataroom", {"query": "term loan interest rate", "k": 8})], ""),
        ('Search_dataroom({"query": "cistern ingestion outage", "k": 2, "paths": ["dataroom/"]})',
         [("search_dataroom", {"query": "cistern ingestion outage", "k": 2, "paths": ["dataroom/"]})], ""),
        ('```json\n{"name": "GREP", "arguments": {"pattern": "lease"}}\n```', [("grep", {"pattern": "lease"})], ""),
        # The packaged 0.5B forgot the last brace (the call then became the run's ANSWER.md): only outer closers
        # missing, so it is read (parser 4).
        ('{"name": "search_dataroom", "arguments": {"query": "FY2025 financial statements", "k": 8, "paths": ["\n"]}',
         [("search_dataroom", {"query": "FY2025 financial statements", "k": 8, "paths": ["\n"]})], ""),
        ('Let me look.\n{"name": "grep", "arguments": {"pattern": "Pellworth"}', [("grep", {"pattern": "Pellworth"})],
         "Let me look."),
        # The packaged 0.5B on llama-server, relayed to Pi: a brace too many, then a call cut off by the output cap
        # (the two became the run's ANSWER.md in CI, tests/llm/test_llama_server.py).
        ('{"name": "grep", "arguments": {"pattern": "Duluth", "path": "dataroom/03_legal"}}}\n'
         '{"name": "grep", "arguments": {"pattern": "The lease of the Dul',
         [("grep", {"pattern": "Duluth", "path": "dataroom/03_legal"})],
         '{"name": "grep", "arguments": {"pattern": "The lease of the Dul'),
    ],
)
def test_lenient_reads_calls_written_outside_the_tags(text: str, calls: list, rest: str) -> None:
    found, left = parse_tool_calls(text, WITH_GREP, "lenient")
    assert [(c.name, c.arguments, c.parse_error) for c in found] == [(*call, None) for call in calls]
    assert left == rest
    assert parse_tool_calls(text, WITH_GREP, "strict") == ([], text.strip())


@pytest.mark.parametrize(
    "text",
    [
        'I will call search_dataroom(query="lease") next.',
        'search_dataroom(query="lease") shows that the lease ends in 2029.',
        'launch_rockets(count=3)',  # no such tool on offer
        'Search_dataroom query: "lease"',  # no call syntax
        'search_dataroom({"revenue": 48.2})',  # an object that is no arguments of the tool: its first value
        'search_dataroom(query=lease_terms)',  # a variable, not a value
        'search_dataroom(**options)',
        'search_dataroom(query="x", k={1, 2})',  # a set is no JSON value
        'search_dataroom("a", "b", "c", "d")',  # more values than the tool has parameters
        'search_dataroom(query="lease"',  # never closed: cut off, or not a call at all
        '{"name": "grep", "arguments": {"pattern": "lease", "path": "datar',  # cut off inside a value
        '{"name": "grep", "arguments": {"pattern": "lease"}, "timeout": 3',  # its last value may be cut short
        'The result, cut short:\n{"path": "dataroom/02_finance/audit.pdf", "score": {"bm25": 1.2}',  # names no tool
        "```python\nresults = search_dataroom(query='x')\nprint(results)\n```",
        "```\nsearch_dataroom(query='x')\nand then read the lease\n```",
        "The tool search_dataroom(query: str, k: int) searches by meaning.",
        "Use `find` to list the files, then `read` one.",
        '```json\n{"function": "grep", "description": "Search", "parameters": {"type": "object", "properties": {}}}\n```',
    ],
)
def test_lenient_makes_no_call_from_prose(text: str) -> None:
    assert parse_tool_calls(text, WITH_GREP, "lenient") == ([], text.strip())


CORPUS = Path(__file__).resolve().parents[2] / "testkit" / "data" / "tool_call_replies.jsonl"
# The formats each mode reads (the corpus labels; bench/tool_call_parsing.py prints the tally).
READ_BY = {"strict": {"tagged"},
           "lenient": {"tagged", "fenced-json", "bare-json", "line-json", "fenced-code", "bare-code", "line-code",
                       "tools-tag", "unclosed-json"}}


@pytest.mark.parametrize("mode", ["strict", "lenient"])
def test_recorded_and_labelled_replies_are_read_as_labelled(mode: str) -> None:
    tools = offered_tools(enabled_tools(None), bash=True).schemas("brief")  # a default run's, as presets show them
    replies = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    # Read by neither: a call inside a sentence, a shell command in a bash fence, and prose.
    assert {r["format"] for r in replies} == READ_BY["lenient"] | {"in-sentence", "shell-fence", "prose"}
    for reply in replies:
        calls, _ = parse_tool_calls(reply["text"], tools, mode)
        meant = reply["intended"] if reply["format"] in READ_BY[mode] else []  # prose and in-sentence: none
        assert [(c.name, c.arguments) for c in calls] == [(c["name"], c["arguments"]) for c in meant], reply["id"]


@pytest.mark.parametrize(
    "text, left",
    [
        ('{"name": "grep", "arguments": {"pattern": "The lease of the Dul', ""),  # cut off by the output cap
        ('The lease ends in 2031 [s1].\n{"name": "grep", "arguments": {"pattern": "Dul', "The lease ends in 2031 [s1]."),
        ('```json\n[{"function": "find", "arguments": {"pattern": "*.md"}}]]\n```\nDone.', "Done."),
        ('  `{"name": "GREP", "arguments": {"pattern": 1}}}`', ""),
        # No call of an offered tool, or none that starts a line: the reply's own words.
        ('{"name": "Acme Holdings", "revenue": 48.2}', '{"name": "Acme Holdings", "revenue": 48.2}'),
        ('I would call {"name": "grep", "arguments": {}} next.', 'I would call {"name": "grep", "arguments": {}} next.'),
    ],
)
def test_a_call_attempt_read_or_not_is_no_part_of_the_reply_s_words(text: str, left: str) -> None:
    assert without_call_attempts(text, WITH_GREP).strip() == left


def test_strict_leaves_a_call_in_the_tool_lists_tags_as_text() -> None:
    call = '{"name": "find", "arguments": {"pattern": "*.md"}}'
    assert parse_assistant_text(f"<tools>\n{call}\n</tools>", OFFERED, mode="strict") == ParsedText(call, "", [])


def test_a_call_written_over_and_over_is_one_call() -> None:
    line = '{"name": "grep", "arguments": {"pattern": "auditor", "path": "dataroom"}}'
    other = '{"name": "grep", "arguments": {"path": "dataroom", "pattern": "audit"}}'
    calls, rest = parse_tool_calls("\n".join([line, other, *[line] * 18, '{"name": "grep", "argu']), WITH_GREP, "lenient")
    assert [c.arguments for c in calls] == [{"pattern": "auditor", "path": "dataroom"}, {"path": "dataroom", "pattern": "audit"}]
    assert rest == '{"name": "grep", "argu'  # cut off by the output cap: no call


def test_a_tagged_call_leaves_written_ones_as_text() -> None:
    text = '<tool_call>{"name": "find", "arguments": {}}</tool_call>\nsearch_dataroom(query="x")'
    calls, rest = parse_tool_calls(text, WITH_GREP, "lenient")
    assert [c.name for c in calls] == ["find"] and rest == 'search_dataroom(query="x")'


@pytest.mark.parametrize(
    "text, answer, names",
    [
        ("<tools></tools>", "", []),  # the 1.5B's whole response with every tool on offer
        ('<tools>\n{"type": "function", "function": {"name": "find", "description": "Find files", '
         '"parameters": {"type": "object", "properties": {}}}}\n</tools>', "", []),
        ("<tools>\nfind, read, grep", "", []),  # cut off before it closed
        ('<tools></tools>\n<tool_call>\n{"name": "find", "arguments": {}}\n</tool_call>', "", ["find"]),
        # The 1.5B's call in the tool list's tags (with forcing off): a call, not an echo.
        ('<tools>\n{"name": "find", "arguments": {"pattern": "*.md"}}\n</tools>', "", ["find"]),
        ('I will search.\n<tools>\n{"type": "function", "function": {"name": "find", "arguments": {}}}\n</tools>',
         "I will search.", ["find"]),
        ("The auditor is Hollis & Grange LLP [s2].\n<tools></tools>", "The auditor is Hollis & Grange LLP [s2].", []),
        # The 0.5B's final message in a run: a tool result it repeated, which became ANSWER.md.
        ("<tool_response>\nFile not found: dataroom/initial_term.pdf\n</tool_response>", "", []),
        ("Three years [s1].<tool_response>\n[s1] The initial term is three (3) years", "Three years [s1].", []),
    ],
)
def test_echoed_template_markup_is_neither_a_call_nor_answer_text(text: str, answer: str, names: list[str]) -> None:
    parsed = parse_assistant_text(text, OFFERED, mode="lenient")
    assert parsed.text == answer and [c.name for c in parsed.tool_calls] == names
    assert _live([text[:9], text[9:]])[0].strip() == answer


@pytest.mark.parametrize(
    "raw, expected",
    [
        ('{"path": "a.md", "limit": 10,}', {"path": "a.md", "limit": 10}),
        ("{'path': 'a.md', 'ignoreCase': True, 'glob': None}", {"path": "a.md", "ignoreCase": True, "glob": None}),
        ('{path: "a.md", limit: 3}', {"path": "a.md", "limit": 3}),
        ('{"path": "a.md", "edits": [{"oldText": "x", "newText": "y"}', {"path": "a.md", "edits": [{"oldText": "x", "newText": "y"}]}),
        ('{"pattern": "it\'s", "literal": true, "ok": False}', {"pattern": "it's", "literal": True, "ok": False}),
        ('{"command": "ls -la\nwc -l x"}', {"command": "ls -la\nwc -l x"}),
        ('{"q": "unterminated', {"q": "unterminated"}),
        ('{"x": 1e3, "y": -2.5}', {"x": 1000.0, "y": -2.5}),
        ('{"a": 1} trailing words', {"a": 1}),
    ],
)
def test_broken_json_is_repaired(raw: str, expected: dict) -> None:
    assert loads_lenient(raw) == expected


def test_a_regex_escape_in_python_literal_arguments_parses_the_same_under_any_warning_filter() -> None:
    # A model's `\d` is an invalid escape to the compiler behind literal_eval; the parse must not depend on
    # whether that warning is shown, ignored or raised.
    raw = r"{'pattern': '\d+ days', 'path': 'leases'}"
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        assert loads_lenient(raw) == {"pattern": r"\d+ days", "path": "leases"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert loads_lenient(raw) == {"pattern": r"\d+ days", "path": "leases"}
    assert not shown


def test_repaired_call_arguments_come_back_as_valid_json() -> None:
    [call] = parse_tool_calls("<tool_call>{'name': 'read', 'arguments': {'path': 'a.md',}}</tool_call>")[0]
    assert call.arguments == {"path": "a.md"} and call.parse_error is None
    assert call.as_message_part()["function"]["arguments"] == '{"path": "a.md"}'


def test_unrepairable_json_becomes_a_call_with_a_parse_error() -> None:
    [call] = parse_tool_calls('<tool_call>{"name": "grep", "arguments": {"pattern": ::: }}</tool_call>')[0]
    assert call.name == "grep"
    assert call.arguments is None and call.parse_error
    assert "pattern" in call.raw_arguments
    assert call.as_message_part()["function"]["arguments"] == "{}"


def test_unknown_tool_names_are_not_an_error_here() -> None:
    [call] = parse_tool_calls('<tool_call>{"name": "launch_rockets", "arguments": {"n": 3}}</tool_call>', TOOLS)[0]
    assert call.name == "launch_rockets" and call.parse_error is None


def test_native_argument_strings() -> None:
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments("") == ({}, None)
    assert parse_arguments('"{\\"a\\": 1}"') == ({"a": 1}, None)  # encoded twice
    arguments, error = parse_arguments("[1, 2]")
    assert arguments is None and "object" in error


def test_think_blocks_are_kept_apart_from_the_answer() -> None:
    assert split_reasoning("<think>\nplan it\n</think>\n\nThe answer.") == ("plan it", "The answer.")
    assert split_reasoning("<think>still thinking when cut off") == ("still thinking when cut off", "")
    # The chat template opened the block in the prompt: the model only closes it.
    assert split_reasoning("weighing options</think>Answer [s1].") == ("weighing options", "Answer [s1].")
    assert split_reasoning("truncated reasoning", starts_in_reasoning=True) == ("truncated reasoning", "")
    assert split_reasoning("no reasoning at all") == ("", "no reasoning at all")


def test_whole_message_parse() -> None:
    parsed = parse_assistant_text(
        '<think>I should read the lease.</think>Reading it now.\n<tool_call>{"name": "read", "arguments": {"path": "lease.txt"}}</tool_call>'
    )
    assert parsed.reasoning == "I should read the lease."
    assert parsed.text == "Reading it now."
    assert [c.name for c in parsed.tool_calls] == ["read"]


def _live(deltas: list[str], **kwargs: bool) -> tuple[str, str]:
    splitter = LiveSplitter(**kwargs)
    pieces = [p for d in deltas for p in splitter.feed(d)] + splitter.flush()
    return "".join(t for k, t in pieces if k == "text"), "".join(t for k, t in pieces if k == "reasoning")


def test_live_splitter_never_shows_half_a_tag() -> None:
    splitter = LiveSplitter()
    assert splitter.feed("Looking <tool_") == [("text", "Looking ")]
    assert splitter.feed('call>{"name": "ls"') == []
    assert splitter.feed(', "arguments": {}}</tool_c') == []
    assert splitter.feed("all> done") == [("text", " done")]


def test_live_splitter_separates_reasoning_and_hides_markup_at_any_split() -> None:
    message = "<think>plan</think>Answer <function=read><parameter=path>a</parameter></function> end <tool_call>{}</tool_call>!"
    for size in (1, 2, 3, 5, 8, 13):
        deltas = [message[i : i + size] for i in range(0, len(message), size)]
        assert _live(deltas) == ("Answer  end !", "plan")


def test_live_splitter_lets_a_lone_angle_bracket_through_at_the_end() -> None:
    assert _live(["a < b", " and c <"]) == ("a < b and c <", "")


def test_live_splitter_when_the_template_opened_the_think_block() -> None:
    assert _live(["reasoning here</thi", "nk>answer"], starts_in_reasoning=True) == ("answer", "reasoning here")
