"""The tool-call format a chat template teaches its model, and an example call written in it.

- "json" (Qwen2.5, Qwen3, Hermes; the fallback):
  `<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>`
- "xml" (Qwen3.6, Qwen3-Coder):
  `<tool_call>\\n<function=NAME>\\n<parameter=K>\\nvalue\\n</parameter>\\n</function>\\n</tool_call>`

Shown one concrete call in their format, and told to act rather than describe (prompts.HARNESS),
small models call tools far more often: on 40 questions of the built-in set, Qwen2.5-Coder 1.5B
called a tool in 48% of first responses instead of 15%, the 0.5B in 65% instead of 45%; a forced
call picks the search tool more often (bench/tool_calls.py).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from searchbox.llm.types import Tool

CallFormat = Literal["json", "xml"]

# The search tools in order of preference; a small model that copies the example verbatim still
# makes a real search, which shows it what the dataroom holds.
_EXAMPLES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("search_dataroom", {"query": "termination notice period of the supply agreement"}),
    ("grep", {"pattern": "termination notice", "path": "dataroom"}),
)


def call_format(template: str) -> CallFormat:
    """The call format a chat template teaches: Qwen3.6 / Qwen3-Coder's XML, else JSON in tags."""
    return "xml" if "<function=" in template else "json"


def example_call(fmt: CallFormat, tools: list[Tool]) -> str | None:
    """A line of instruction and one search call in `fmt`, when a search tool is on offer."""
    offered = {tool["function"]["name"] for tool in tools}
    for name, arguments in _EXAMPLES:
        if name in offered:
            return f"To call a tool, reply with only the call, for example:\n{render_call(fmt, name, arguments)}"
    return None


def render_call(fmt: CallFormat, name: str, arguments: dict[str, Any]) -> str:
    """One call as the model writes it (and as its template renders it in the history)."""
    if fmt == "json":
        body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    else:
        parameters = "".join(f"<parameter={key}>\n{value if isinstance(value, str) else json.dumps(value)}\n</parameter>\n"
                             for key, value in arguments.items())
        body = f"<function={name}>\n{parameters}</function>"
    return f"<tool_call>\n{body}\n</tool_call>"
