"""Property-based fuzzing of the tool-call parsers (design §2.3): whatever a model writes, in whatever
chunks it arrives, parsing never raises, and a valid call comes out as the same call.

Run with `pytest -s tests/llm/test_fuzz_parsing.py` to see the RELIABILITY tally lines.
"""

from __future__ import annotations

import json
from typing import Any

from fuzz_tally import FuzzTally
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from searchbox.llm.clients.assemble import ResponseBuilder
from searchbox.llm.grammars.json_actions import parse_action
from searchbox.llm.dialects.jsonfix import loads_lenient
from searchbox.llm.dialects.call_objects import parse_arguments
from searchbox.llm.dialects.call_parsing import read_written_calls
from searchbox.llm.dialects.parsing import PARSING_MODES, parse_assistant_text
from searchbox.llm.types import ChatResponse, StreamEvent, ToolCall, Usage

# derandomize: the same examples on every run, so a failure is reproducible and CI is stable.
FUZZ = settings(derandomize=True, deadline=None, database=None, max_examples=250,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TALLY = FuzzTally()

# Everything that switches the parsers into markup mode; "plain" text must contain none of it.
MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<function=", "</function>",
           "<parameter=", "</parameter>", "<tools>", "</tools>", "<tool_response>", "</tool_response>", "```")
# Fragments that steer random text into the parsers' interesting paths.
FRAGMENTS = (*MARKERS, "<function=read>", "<parameter=path>", "```json\n", "{", "}", "[", "]", "\"", "'", ":",
             ",", "\\", "\n", " ", "name", "arguments", "parameters", "function", "tool", "answer", "True", "None",
             "null", "NaN", "Infinity", "1e999", "-0", "é", "ß", "ª", "$x", "_", "{'a': {1, 2}}", "b'x'",
             "[" * 50, "{\"a\":" * 30, "\x00", "\u2028", "😀", "read(", "read(path=", ")", "=", "`")

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}}}}]


def _is_plain(text: str) -> bool:
    return not any(marker in text for marker in MARKERS)


messy_text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(FRAGMENTS)), max_size=25).map("".join)
plain_text = st.text(max_size=40).filter(_is_plain)
identifier = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                        plain_text)
json_value = st.recursive(json_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(plain_text, inner, max_size=3)), max_leaves=8)
json_args = st.dictionaries(plain_text, json_value, max_size=4)
# XML parameter names: the markup ends a name at '>' or a newline and trims it.
xml_key = st.text(min_size=1, max_size=12).filter(
    lambda k: _is_plain(k) and ">" not in k and "\n" not in k and k == k.strip() and bool(k))
xml_args = st.dictionaries(xml_key, json_value, max_size=4)


def _chunks(data: st.DataObject, text: str) -> list[str]:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def _assert_well_formed(call: ToolCall) -> None:
    """What the loop relies on: arguments or a parse error, and a history entry that is valid JSON."""
    assert isinstance(call.name, str) and call.id
    if call.arguments is None:
        assert call.parse_error
    else:
        assert isinstance(call.arguments, dict)
        json.dumps(call.arguments)
    json.loads(call.as_message_part()["function"]["arguments"])


def _stream(chunks: list[str], **kwargs: Any) -> tuple[list[StreamEvent], ChatResponse]:
    builder = ResponseBuilder(TOOLS, **kwargs)
    events = [event for chunk in chunks for event in builder.add_chunk({"choices": [{"delta": {"content": chunk}}]})]
    events += builder.finish(Usage(), {})
    done = events[-1].response
    assert done is not None
    return events, done


def _shown(events: list[StreamEvent], kind: str) -> str:
    return "".join(event.text for event in events if event.kind == kind)


# --- arbitrary text ------------------------------------------------------------------------------


@FUZZ
@given(text=messy_text, starts_in_reasoning=st.booleans(), mode=st.sampled_from(PARSING_MODES))
@example(text="<tool_call>{é}</tool_call>", starts_in_reasoning=False, mode="strict")
@example(text="<tool_call>{'name': 'x', 'arguments': {'a': {1, 2}}}</tool_call>", starts_in_reasoning=False,
         mode="strict")
@example(text="<tool_call>{\"name\": \"x\", \"arguments\": {[1]: 2}}</tool_call>", starts_in_reasoning=False,
         mode="strict")
@example(text="<function=x><parameter=a>" + "[" * 5000 + "</parameter></function>", starts_in_reasoning=False,
         mode="strict")
@example(text="read(path=" + "[" * 5000 + ")", starts_in_reasoning=False, mode="lenient")
@example(text="read(path={1, 2}, offset=b'x')", starts_in_reasoning=False, mode="lenient")
@example(text='{"function": "read", "arguments": {"a": {1, 2}}}', starts_in_reasoning=False, mode="lenient")
def test_any_text_parses_without_raising(text: str, starts_in_reasoning: bool, mode: str) -> None:
    TALLY.count("tool-call parser, arbitrary text")
    parsed = parse_assistant_text(text, TOOLS, starts_in_reasoning=starts_in_reasoning, mode=mode)
    assert isinstance(parsed.text, str) and isinstance(parsed.reasoning, str)
    for call in parsed.tool_calls:
        _assert_well_formed(call)
    TALLY.count("tool-call parser, arbitrary text: handled")


@FUZZ
@given(text=messy_text)
@example(text="é")
@example(text="[" * 100_000)
@example(text="{[1]: 2}")
@example(text="{'a': {1, 2}, 'b': b'x', 'c': 1j, 'd': ...}")
def test_lenient_json_returns_json_or_a_value_error(text: str) -> None:
    TALLY.count("lenient JSON")
    try:
        value = loads_lenient(text)
    except ValueError:
        pass
    else:
        json.dumps(value)  # only what JSON can hold: the value goes back into the history as JSON
    arguments, error = parse_arguments(text)
    assert (arguments is None) != (error is None)
    if arguments is not None:
        json.dumps(arguments)
    TALLY.count("lenient JSON: handled")


@FUZZ
@given(text=messy_text)
@example(text='{"tool": "x", "arguments": {"a": {1, 2}}}')
@example(text="{'tool': 'x', 'arguments': {'a': b'x'}}")
def test_any_json_action_parses_without_raising(text: str) -> None:
    TALLY.count("JSON action parser")
    answer, calls = parse_action(text)
    assert isinstance(answer, str) and len(calls) <= 1
    for call in calls:
        _assert_well_formed(call)
    TALLY.count("JSON action parser: handled")


@FUZZ
@given(text=messy_text, data=st.data(), starts_in_reasoning=st.booleans())
def test_chunking_never_changes_what_is_shown_or_parsed(text: str, data: st.DataObject,
                                                        starts_in_reasoning: bool) -> None:
    chunks = _chunks(data, text)  # drawn before counting: an example cut short while drawing is no input
    TALLY.count("streamed deltas, arbitrary chunking")
    events, response = _stream(chunks, starts_in_reasoning=starts_in_reasoning)
    whole_events, whole = _stream([text], starts_in_reasoning=starts_in_reasoning)
    for kind in ("text", "reasoning"):
        assert _shown(events, kind) == _shown(whole_events, kind)
    assert (response.text, response.reasoning) == (whole.text, whole.reasoning)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [(c.name, c.arguments) for c in whole.tool_calls]
    TALLY.count("streamed deltas, arbitrary chunking: handled")


@FUZZ
@given(deltas=st.lists(messy_text, min_size=1, max_size=5))
def test_native_argument_deltas_of_any_text(deltas: list[str]) -> None:
    TALLY.count("native tool-call deltas, arbitrary text")
    builder = ResponseBuilder(TOOLS)
    for delta in deltas:
        part = {"index": 0, "id": "call_1", "function": {"name": "read", "arguments": delta}}
        builder.add_chunk({"choices": [{"delta": {"tool_calls": [part]}}]})
    [call] = builder.response(Usage(), {}).tool_calls
    _assert_well_formed(call)
    TALLY.count("native tool-call deltas, arbitrary text: handled")


# --- a valid call, embedded and chunked ----------------------------------------------------------


def _schema_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object", type(None): "null"}[type(value)]


def _markup(form: str, name: str, arguments: dict[str, Any], ascii_only: bool) -> str:
    if form.startswith("xml"):
        params = "".join(
            f"<parameter={key}>\n{value if isinstance(value, str) else json.dumps(value, ensure_ascii=ascii_only)}\n"
            "</parameter>\n" for key, value in arguments.items())
        xml = f"<function={name}>\n{params}</function>"
        return f"<tool_call>\n{xml}\n</tool_call>" if form == "xml_in_tool_call" else xml
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=ascii_only)
    return {"tool_call": f"<tool_call>\n{body}\n</tool_call>",
            "tool_call_fenced": f"<tool_call>\n```json\n{body}\n```\n</tool_call>",
            "fenced": f"\n```json\n{body}\n```\n"}[form]


@FUZZ
@given(
    form=st.sampled_from(["tool_call", "tool_call_fenced", "fenced", "xml", "xml_in_tool_call"]),
    name=identifier, json_arguments=json_args, xml_arguments=xml_args, ascii_only=st.booleans(),
    prefix=plain_text, suffix=plain_text, reasoning=st.none() | plain_text, data=st.data(),
)
def test_a_valid_call_in_any_text_and_chunks_is_the_same_call(
    form: str, name: str, json_arguments: dict[str, Any], xml_arguments: dict[str, Any], ascii_only: bool,
    prefix: str, suffix: str, reasoning: str | None, data: st.DataObject,
) -> None:
    arguments = xml_arguments if form.startswith("xml") else json_arguments
    # XML values are text: the tool's schema says which are strings and which JSON.
    tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {
        key: {"type": _schema_type(value)} for key, value in arguments.items()}}}}]
    think = "" if reasoning is None else f"<think>{reasoning}</think>"
    message = think + prefix + _markup(form, name, arguments, ascii_only) + suffix
    chunks = _chunks(data, message)
    TALLY.count("tool-call parser, valid call embedded and chunked")

    builder = ResponseBuilder(tools)
    events = [e for chunk in chunks for e in builder.add_chunk({"choices": [{"delta": {"content": chunk}}]})]
    events += builder.finish(Usage(), {})
    response = events[-1].response
    assert response is not None
    if form == "fenced":  # outside the tags: read by a lenient run's model (call_parsing), not by the backend
        assert response.tool_calls == []
        response = read_written_calls(response, tools)

    assert [(c.name, c.arguments, c.parse_error) for c in response.tool_calls] == [(name, arguments, None)]
    assert json.loads(response.tool_calls[0].raw_arguments) == arguments
    # A bare fence stands on lines of its own: the newlines around it stay in the text.
    assert response.text == (prefix + ("\n\n" if form == "fenced" else "") + suffix).strip()
    assert response.reasoning == (reasoning or "").strip()
    assert response.finish_reason == "tool_calls"
    if form != "fenced":  # a bare fence is only known to be a call once complete: it shows live
        assert _shown(events, "text") == prefix + suffix
    assert _shown(events, "reasoning") == (reasoning or "")
    TALLY.count("tool-call parser, valid call embedded and chunked: handled")


@FUZZ
@given(name=identifier, arguments=json_args, data=st.data(), repeat_name=st.booleans())
def test_native_arguments_in_any_chunks_round_trip(name: str, arguments: dict[str, Any], data: st.DataObject,
                                                   repeat_name: bool) -> None:
    chunks = _chunks(data, json.dumps(arguments, ensure_ascii=False))
    TALLY.count("native tool-call deltas, valid call chunked")
    builder = ResponseBuilder(TOOLS)
    for n, piece in enumerate(chunks):
        function = {"arguments": piece} | ({"name": name} if n == 0 or repeat_name else {})
        builder.add_chunk({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": function}]}}]})
    [call] = builder.response(Usage(), {}).tool_calls
    assert (call.id, call.name, call.arguments, call.parse_error) == ("call_1", name, arguments, None)
    TALLY.count("native tool-call deltas, valid call chunked: handled")


@FUZZ
@given(name=identifier, arguments=json_args, answer=plain_text, pad=st.sampled_from(["", " ", "\n"]))
def test_json_actions_round_trip(name: str, arguments: dict[str, Any], answer: str, pad: str) -> None:
    TALLY.count("JSON action parser, valid actions")
    text, [call] = parse_action(pad + json.dumps({"tool": name, "arguments": arguments}) + pad)
    assert (text, call.name, call.arguments, call.parse_error) == ("", name, arguments, None)
    assert parse_action(json.dumps({"answer": answer}, ensure_ascii=False)) == (answer.strip(), [])
    # The same arguments written as a Python literal (single quotes, True/None) are read the same.
    assert loads_lenient(repr(arguments)) == arguments
    TALLY.count("JSON action parser, valid actions: handled")


def test_tally() -> None:
    """Reports the reliability tallies; every property above must have run and handled every input."""
    TALLY.report(8)
