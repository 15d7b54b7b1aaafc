"""Tool calling for models with no chat template of their own (base models such as the packaged
Gemma 3 270M): every response is one JSON object, held to a grammar built from the tool schemas:

    {"tool": "read", "arguments": {"path": "dataroom/a.md"}}    to call a tool
    {"answer": "The lease ends on ... [s1]"}                    when done

so even a tiny base model emits structurally valid tool calls, their lists and strings bounded
(schema_grammar). The history is rendered the same way: the model's earlier calls as their JSON,
tool results as user messages.
"""

from __future__ import annotations

import json
from typing import Any

from searchbox.llm.dialects.call_objects import new_call_id
from searchbox.llm.dialects.jsonfix import loads_lenient
from searchbox.llm.grammars.schema_grammar import grammar_schema
from searchbox.llm.types import Message, Tool, ToolCall


def action_schema(tools: list[Tool], allow_answer: bool = True) -> dict[str, Any]:
    options: list[dict[str, Any]] = []
    for tool in tools:
        function = tool["function"]
        options.append({
            "type": "object",
            "properties": {"tool": {"enum": [function["name"]]},
                           "arguments": grammar_schema(function.get("parameters") or {"type": "object"})},
            "required": ["tool", "arguments"],
        })
    if allow_answer:
        # A non-empty answer: an empty one would leave the run with nothing to write to ANSWER.md.
        options.append({"type": "object", "properties": {"answer": {"type": "string", "minLength": 1}},
                        "required": ["answer"]})
    return {"oneOf": options} if len(options) > 1 else options[0]


def instructions(tools: list[Tool]) -> str:
    lines = ["Reply with exactly one JSON object.",
             'To call a tool: {"tool": NAME, "arguments": {...}}. When you are done: {"answer": "..."}.', "Tools:"]
    for tool in tools:
        function = tool["function"]
        params = function.get("parameters", {}).get("properties", {})
        args = ", ".join(f"{name}: {spec.get('type', 'any')}" for name, spec in params.items())
        lines.append(f"- {function['name']}({args}): {function.get('description', '')}")
    return "\n".join(lines)


def render_history(messages: list[Message], tools: list[Tool]) -> list[Message]:
    """Messages as a plain chatml template renders them, with the action format explained."""
    rendered: list[Message] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            call = message["tool_calls"][0]["function"]
            content = json.dumps({"tool": call["name"], "arguments": json.loads(call["arguments"] or "{}")})
            rendered.append({"role": "assistant", "content": content})
        elif role == "tool":
            rendered.append({"role": "user", "content": f"Result of {message.get('name', 'the tool')}:\n{message.get('content', '')}"})
        else:
            rendered.append({"role": role, "content": str(message.get("content") or "")})
    if not tools:
        return rendered
    guide = instructions(tools)
    if rendered and rendered[0]["role"] == "system":
        rendered[0] = {"role": "system", "content": f"{rendered[0]['content']}\n\n{guide}"}
    else:
        rendered.insert(0, {"role": "system", "content": guide})
    return rendered


def parse_action(content: str) -> tuple[str, list[ToolCall]]:
    """(answer text, tool calls) from one generated action; text that is no action is the answer."""
    try:
        action = loads_lenient(content)
    except ValueError:
        return content.strip(), []
    if isinstance(action, dict) and isinstance(action.get("tool"), str):
        arguments = action.get("arguments")
        raw = json.dumps(arguments, ensure_ascii=False) if arguments is not None else "{}"
        if isinstance(arguments, dict):
            return "", [ToolCall(new_call_id(), action["tool"], arguments, raw)]
        return "", [ToolCall(new_call_id(), action["tool"], None, raw, "the arguments are not a JSON object")]
    if isinstance(action, dict) and "answer" in action:
        return str(action["answer"]).strip(), []
    return content.strip(), []
