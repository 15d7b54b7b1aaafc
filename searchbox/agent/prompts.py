"""The harness's system prompt and the task block, present every turn and never compacted."""

from __future__ import annotations

import datetime as dt

# "Act, do not describe": told to "work step by step", small models wrote a plan in prose and called
# nothing. With it and the runtime's example call, Qwen2.5-Coder 1.5B called a tool in 48% of first
# responses instead of 15% (bench/tool_calls.py, 40 questions).
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

# A run may offer no bash (a host with no confining sandbox): the prompt must not promise it.
TOOLS_WITH_BASH = "There is no network. Use any tools, or build your own with bash (python3 is available)."
TOOLS_WITHOUT_BASH = "There is no network. Use the tools you are given."

CONTINUE = "Continue."

# Sent once per turn when a reply held neither a tool call nor text (a small model's call the parser
# could not read, or nothing at all), instead of ending the turn with no answer.
EMPTY_REPLY = "Your reply was empty. Call a tool, or reply with your answer citing sources."

# Sent once per turn when the reply that ends it cites nothing although tools showed sources: told
# the rule once in the system prompt, small models answer from the passages and drop the ids. Asked
# without the ids, the 1.5B repeated its answer uncited; given only the ids, it cited the first one
# shown, which did not hold the fact. So the ids are named, and which of them hold the answer's names,
# dates and amounts (the facts the citation check looks for).
def cite_sources(shown: list[str], facts: dict[str, list[str]]) -> str:
    ids = ", ".join(f"[{source_id}]" for source_id in shown[-8:])
    holding = "; ".join(f"[{source_id}] shows {', '.join(f'“{fact}”' for fact in held[:3])}"
                        for source_id, held in list(facts.items())[:4])
    return (f"Your answer cites no source. The tool results above showed the sources {ids}"
            + (f"; of these, {holding}" if holding else "")
            + ". Reply with the answer again, putting after each fact the id of the source that shows it, "
              "e.g. \"... [s1].\"")


# Sent when a turn hits its step limit or timeout, so that it still ends with an answer.
WRAP_UP = "This turn has used all its steps. Using what you found so far, write your answer now, citing sources."

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


def system_prompt(today: dt.date | None = None, *, bash: bool = True, quotes: bool = False) -> str:
    task = TASK_BLOCK.format(date=(today or dt.date.today()).isoformat(),
                             tools_line=TOOLS_WITH_BASH if bash else TOOLS_WITHOUT_BASH)
    return f"{HARNESS}\n\n{task}{CITE_WITH_QUOTES if quotes else ''}"
