"""The harness's system prompt and the task block, present every turn and never compacted; the bare
`Continue.` of a new turn; the compaction prompt. What an assist sends is beside it in agent/assists/."""

from __future__ import annotations

import datetime as dt
from typing import Any

from searchbox.settings import Settings

# "Act, do not describe": told to "work step by step", small models wrote a plan in prose and called
# nothing; with it and the runtime's example call, the packaged 1.5B called a tool in its first response
# far more often (bench/tool_calls.py; the figures: docs/findings/2026-12-06-figures-from-code-comments.md).
HARNESS = """You are a meticulous research agent working inside a sandboxed folder. You answer questions by \
searching and reading documents with the tools you are given. Act, do not describe: each reply is either \
a tool call or, when you are done, the final answer. Never write a plan or say which tool you would use; \
call it. Search the documents, read the passages that matter, check facts across documents, then write \
the answer."""

TASK_BLOCK = """# Task
- Today's date: {date}.
- Answer the user's question from the documents in `dataroom/` in your working directory.
- {tools_line}
- Every tool result that shows document content carries a source id like [s3]. Cite the sources you \
actually used by their ids, e.g. "Revenue grew 17% [s3].". Never invent an id.
- When you are done, reply with the final answer in Markdown with citations; it is saved as `ANSWER.md` in \
the working directory (or write that file yourself; `dataroom/` is read-only)."""

# CITATION_QUOTES=on: a quote lets the checker hold the citation to words the source really has.
CITE_WITH_QUOTES = ("\n- Put a short quote (a few words copied exactly from the source) in each citation, "
                    "e.g. \"The term ends on 31 March 2025 [s3 \"ends on 31 March 2025\"].\"")

# PREMISE_CHECK=on: a question may take for granted what the documents deny ("Who audited FY2025?" of
# unaudited statements); told nothing, small models answer it as asked, from the nearest match.
CHECK_PREMISE = ("\n- The question may take for granted something the documents contradict (an event that did not "
                 "happen or has not happened yet, a wrong figure, date or name). If they do, say so and state what the "
                 "documents say instead; never answer as if it were true.")

# A run may offer no bash (a host with no confining sandbox): the prompt must not promise it.
TOOLS_WITH_BASH = "There is no network. Use any tools, or build your own with bash (python3 is available)."
TOOLS_WITHOUT_BASH = "There is no network. Use the tools you are given."

CONTINUE = "Continue."

COMPACTION_INSTRUCTIONS = """Summarize the conversation above so that the work can go on without it. \
Use exactly these headings:
## Goal
## Progress
## Key decisions
## Next steps
## Critical context
## Files read
Keep every fact, number, file path and source id ([sN]) that the answer may need."""

COMPACTED_PREFIX = "The earlier part of this session was summarized to save context:\n\n"


def prompt_day(prompt_date: str) -> dt.date:
    """The day the prompt names as today: PROMPT_DATE, or today when it is empty."""
    return dt.date.fromisoformat(prompt_date) if prompt_date else dt.date.today()


def system_prompt(today: dt.date | None = None, *, bash: bool = True, quotes: bool = False,
                  premise: bool = False) -> str:
    return f"{HARNESS}\n\n{task_block(today, bash=bash, quotes=quotes, premise=premise)}"


def run_system_prompt(settings: Settings, tools: list[dict[str, Any]]) -> str:
    """The native loop's system prompt for a run with these settings and tool schemas."""
    return system_prompt(prompt_day(settings.prompt_date), bash=any(t["function"]["name"] == "bash" for t in tools),
                         quotes=settings.citation_quotes, premise=settings.premise_check)


def task_block(today: dt.date | None = None, *, bash: bool = True, quotes: bool = False,
               premise: bool = False) -> str:
    """The task, as the native loop's system prompt ends and as HARNESS=pi appends it to Pi's own."""
    task = TASK_BLOCK.format(date=(today or dt.date.today()).isoformat(),
                             tools_line=TOOLS_WITH_BASH if bash else TOOLS_WITHOUT_BASH)
    return f"{task}{CHECK_PREMISE if premise else ''}{CITE_WITH_QUOTES if quotes else ''}"
