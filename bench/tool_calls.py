"""Tool-call rates of a local chat-template GGUF on the harness's first step: the loop's system
prompt and a question of the built-in set, through the built-in runtime (LlamaCppModel), under
several presentations of the tools, with tool_choice "auto" and "required" (grammar-held).

    python bench/tool_calls.py --gguf MODEL.gguf [--questions 8] [--first 0] [--only NAMES] [--log FILE]
                               [--parsing strict|lenient]

A presentation is the system prompt's first paragraph (the earlier "work step by step" or today's
"act, do not describe"), how the default tools are described (TOOL_DESCRIPTIONS full, or brief as
the packaged models' presets set it), and whether the runtime adds its example call. Per presentation and tool_choice it prints:
responses with a parseable call of an offered tool, calls with every required argument, responses
that answered in words, the mean output tokens per response (on the "required" rows: what a forced,
grammar-held call costs), the mean latency, the median decode tokens/s by the wall clock and by
llama.cpp's counter (which times the model alone: the gap is sampling, where a grammar costs), and
the tools called. The questions of one presentation share their system prompt, so its prefix is
evaluated once and then reused from the KV cache.

"required" with no grammar is what llama-cpp-python did before: its template path ignores that
tool_choice (the template does not read it either, checked below), so the model sees exactly the
"auto" prompt. The "auto" rows are therefore also the forced-call rate with the grammar off.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.agent.prompts import HARNESS, system_prompt  # noqa: E402
from searchbox.llm.clients.assemble import ResponseBuilder  # noqa: E402
from searchbox.llm.dialects.call_parsing import with_call_parsing  # noqa: E402
from searchbox.llm.llamacpp.model import load_llamacpp  # noqa: E402
from searchbox.llm.dialects.parsing import PARSING_MODES  # noqa: E402
from searchbox.llm.types import ChatModel, ChatResponse, Tool  # noqa: E402
from searchbox.tools.registry import enabled_tools, offered_tools  # noqa: E402

QUESTIONS = ROOT / "assets" / "questions.jsonl"
# The harness paragraph before "Act, do not describe" replaced it (prompts.HARNESS).
STEP_BY_STEP = """You are a meticulous research agent working inside a sandboxed folder. You answer questions by \
searching and reading documents with the tools you are given. Work step by step: look around (ls, find), \
search (grep and the retrieval tools), read the passages that matter, check facts across documents, then \
write the answer. Call tools whenever they help; when you are done, reply without calling a tool."""


@dataclass(frozen=True)
class Presentation:
    harness: str  # the system prompt's first paragraph
    descriptions: str  # TOOL_DESCRIPTIONS: full or brief
    example: bool  # the runtime's example call at the end of the system message


PRESENTATIONS = {
    "step-by-step": Presentation(STEP_BY_STEP, "full", False),
    "step-by-step + example": Presentation(STEP_BY_STEP, "full", True),
    "act": Presentation(HARNESS, "full", False),
    "act + example": Presentation(HARNESS, "full", True),
    "act + example + brief (packaged)": Presentation(HARNESS, "brief", True),
}


class _RawText:
    """The last response's text as the model wrote it, markup and all, for --log: ChatResponse keeps
    only what parsing made of it."""

    last = ""

    @classmethod
    def install(cls) -> None:
        response = ResponseBuilder.response

        def keep(builder: ResponseBuilder, *args: Any) -> ChatResponse:
            cls.last = "".join(builder._content)
            return response(builder, *args)

        ResponseBuilder.response = keep  # type: ignore[method-assign]


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)  # output tokens per response
    decode_speeds: list[float] = field(default_factory=list)  # wall clock: sampling (and its grammar) included
    eval_speeds: list[float] = field(default_factory=list)  # llama.cpp's counter: the model alone
    calls: int = 0
    complete: int = 0
    answered: int = 0
    tools: Counter[str] = field(default_factory=Counter)

    def add(self, response: ChatResponse, tools: list[Tool], seconds: float) -> None:
        self.latencies.append(seconds)
        self.tokens.append(response.usage.output)
        if "decode_tokens_per_s" in response.timings and "llama_decode_tokens_per_s" in response.timings:
            self.decode_speeds.append(response.timings["decode_tokens_per_s"])
            self.eval_speeds.append(response.timings["llama_decode_tokens_per_s"])
        schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}
        good = [c for c in response.tool_calls if c.name in schemas and c.arguments is not None]
        if good:
            self.calls += 1
            self.tools.update(c.name for c in good)
            if all(set(schemas[c.name].get("required", [])) <= set(c.arguments or {}) for c in good):
                self.complete += 1
        elif response.text.strip():
            self.answered += 1

    def row(self, name: str) -> str:
        n = len(self.latencies)
        top = ", ".join(f"{tool} {count}" for tool, count in self.tools.most_common(4))
        decode, evaluate = statistics.median(self.decode_speeds or [0]), statistics.median(self.eval_speeds or [0])
        return (f"{name:<36} {n:>3} {self._pct(self.calls):>6} {self._pct(self.complete):>6} "
                f"{self._pct(self.answered):>6} {statistics.mean(self.tokens):>6.0f} {statistics.mean(self.latencies):>6.1f} "
                f"{decode:>6.1f} {evaluate:>6.1f}  {top}")

    def _pct(self, count: int) -> str:
        return f"{100 * count / len(self.latencies):.0f}%"


def setup(presentation: Presentation) -> tuple[str, list[Tool]]:
    """The system prompt and the tools of a presentation (a default run's tools)."""
    tools = offered_tools(enabled_tools(None), bash=True).schemas(presentation.descriptions)
    return system_prompt().replace(HARNESS, presentation.harness), tools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", required=True, help="a GGUF with a chat template")
    parser.add_argument("--questions", type=int, default=8, help="questions of the built-in set, spread over the types")
    parser.add_argument("--first", type=int, default=0, help="skip this many questions of the spread (a fresh set)")
    parser.add_argument("--samples", type=int, default=1, help="responses per question and setting")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--only", default="", help=f"comma-separated presentations to run, of: {', '.join(PRESENTATIONS)}")
    parser.add_argument("--choices", default="auto,required")
    parser.add_argument("--log", type=Path, help="append every response here as JSON lines, to read what was written")
    parser.add_argument("--parsing", choices=PARSING_MODES, default="strict",
                        help="TOOL_CALL_PARSING: how calls written in the text are read (the packaged presets: lenient)")
    args = parser.parse_args()

    model = load_llamacpp(args.gguf, args.n_ctx)
    reader = with_call_parsing(model, args.parsing)
    if args.log:
        _RawText.install()
    template = model._llama.metadata.get("tokenizer.chat_template", "")
    if "tool_choice" in template:
        sys.exit("this template reads tool_choice: the auto rows would not stand for a grammar-off 'required'")
    questions = _spread(args.first + args.questions)[args.first:]
    print(f"{model.model_id}: call format {model.call_format}, {len(questions)} questions x {args.samples} samples, "
          f"max_tokens {args.max_tokens}, {model.runtime['n_threads']} threads")
    columns = ("call", "args", "words", "tokens", "mean s", "dec/s", "eval/s")
    print(f"{'presentation / tool_choice':<36} {'n':>3} " + " ".join(f"{c:>6}" for c in columns) + "  tools called")
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    for name, presentation in PRESENTATIONS.items():
        if wanted and name not in wanted:
            continue
        prompt, tools = setup(presentation)
        model.example_calls = presentation.example
        for choice in args.choices.split(","):
            tally = _run(reader, name, prompt, tools, choice, questions, args)
            print(tally.row(f"{name} / {choice}"), flush=True)


def _run(model: ChatModel, name: str, prompt: str, tools: list[Tool], choice: str, questions: list[str],
         args: argparse.Namespace) -> Tally:
    tally = Tally()
    for question in questions:
        for _ in range(args.samples):
            messages = [{"role": "system", "content": prompt}, {"role": "user", "content": question}]
            started = time.monotonic()
            response = model.complete(messages, tools, max_tokens=args.max_tokens, tool_choice=choice)
            tally.add(response, tools, time.monotonic() - started)
            if args.log:
                calls = [[c.name, c.arguments, c.parse_error] for c in response.tool_calls]
                record = {"model": model.model_id, "presentation": name, "tool_choice": choice, "question": question,
                          "raw": _RawText.last, "text": response.text, "calls": calls}
                with args.log.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(record, ensure_ascii=False) + "\n")
    return tally


def _spread(count: int) -> list[str]:
    """`count` questions taken in turn from each type, so every type is represented."""
    by_type: dict[str, list[str]] = {}
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        by_type.setdefault(row["type"], []).append(row["question"])
    picked: list[str] = []
    for i in range(count):
        queue = list(by_type.values())[i % len(by_type)]
        picked.append(queue[i // len(by_type)])
    return picked


if __name__ == "__main__":
    main()
