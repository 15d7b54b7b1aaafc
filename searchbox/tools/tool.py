"""One tool abstraction for every tool, built-in or catalog (design §2.4).

A `Tool` is a name, a one-line brief and a full description for the model, the JSON schema of its
arguments and the function that runs it, declared together with `@tool` above the function in the
tool's own module. A function takes
a `ToolContext` and validated arguments and gives back a `ToolResult`; it refuses a call by raising
ToolArgumentError, whose message goes back to the model. `Tool.run` validates, runs and turns any
failure into an error result: no call a model makes can raise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchbox.cancel import COMPLETED, CUT_CAUSES, Cancelled, CancelToken
from searchbox.dataroom.extract_cache import ExtractionCache
from searchbox.dataroom.work_dir import extraction_cache
from searchbox.retrieval.engine import RetrievalEngine
from searchbox.retrieval.interfaces import ModelLoadError
from searchbox.settings import Settings
from searchbox.tools.arguments import ToolArgumentError, validate_arguments
from searchbox.tools.gist import first_line
from searchbox.tools.sandbox import SandboxConfig, requested_level
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.truncate import MAX_BYTES


# How a result says what validation changed in the arguments: after the tool's own text.
ARGUMENT_NOTES = "\n\n[argument notes: "


@dataclass
class ToolContext:
    """What a tool call runs against: one per run (or per CLI call), shared by every tool."""

    work_dir: Path  # the agent's working folder; holds dataroom/
    ledger: SourceLedger
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    max_bytes: int = MAX_BYTES  # the byte limit of the one truncation rule, fitted to the model (TOOL_OUTPUT_BYTES)
    # Builds (once) the retrieval engine the catalog tools search with: only on their first call, so a
    # run that never searches never loads the corpus or a model.
    retrieval: Callable[[], RetrievalEngine] | None = None
    cancel: CancelToken | None = None  # the run's: a pause, a stop or a time limit cuts a running tool
    # The documents' text (PDF, DOCX, ...) that grep and read see, extracted once per content, not per call:
    # re-extracting every document at each grep was most of the CPU a run cost the app.
    extraction: ExtractionCache | None = None

    @property
    def engine(self) -> RetrievalEngine:
        if self.retrieval is None:
            raise ToolArgumentError("retrieval is not available here: this context has no dataroom index")
        return self.retrieval()


def context_for(settings: Settings, work_dir: Path, ledger: SourceLedger,
                retrieval: Callable[[], RetrievalEngine] | None = None, cancel: CancelToken | None = None) -> ToolContext:
    """The context of a run's tools, from its knobs (BASH_*, JOB_DISK_MB, JOB_FILES, TOOL_OUTPUT_BYTES)."""
    sandbox = SandboxConfig(level=requested_level(settings), default_timeout=settings.bash_timeout_seconds,
                            max_timeout=min(600, 10 * settings.bash_timeout_seconds),
                            disk_bytes=settings.bash_disk_mb * 2**20, job_disk_bytes=settings.job_disk_mb * 2**20,
                            job_inodes=settings.job_files)
    return ToolContext(work_dir, ledger, sandbox=sandbox, max_bytes=settings.tool_output_bytes, retrieval=retrieval,
                       cancel=cancel, extraction=extraction_cache(settings))


@dataclass
class ToolResult:
    text: str  # what the model sees
    is_error: bool = False
    # Structured extras for the feed and records (events.jsonl keeps them as they are: read names its
    # range's id there as "source", grep and the catalog tools list theirs as "sources").
    details: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)  # the ledger ids the result shows the model, in order
    gist: str = ""  # what the call found, in one line, from the tool that knows (tools/gist.py)
    # A catalog tool's whole JSON result, for the CLI and the explorer to show: the model sees `text`
    # (cut to the output limit), the records keep `details`.
    data: dict[str, Any] | None = None
    ended: str = COMPLETED  # how the call ended: completed, timed_out, or a cut (cancel.CUT_ENDINGS)

    @classmethod
    def error(cls, message: str, **details: Any) -> ToolResult:
        return cls(message, is_error=True, details=details)

    @classmethod
    def cut(cls, name: str, cut: Cancelled, partial: str = "") -> ToolResult:
        """The result of a call the run's token cut: what it had, and that it did not finish. On resume
        the model sees this, and the call is not run again by itself."""
        note = (f"[{name} was cut before it finished: {CUT_CAUSES.get(cut.reason, cut.reason)}. Its result is "
                "incomplete and it was not run again; call it again if you still need it.]")
        return cls(f"{partial}\n\n{note}" if partial else note, is_error=True, details={"cut": cut.reason},
                   ended=cut.ended)

    def one_line(self) -> str:
        """The gist, or else (an error, a tool with nothing to count) the text's first line."""
        return self.gist or first_line(self.text)

    def record(self) -> dict[str, Any]:
        """The result as the CLI prints it and the explorer shows it."""
        return {"output": self.text, "is_error": self.is_error, "details": self.details,
                **({"result": self.data} if self.data is not None else {})}


ToolFunction = Callable[[ToolContext, dict[str, Any]], ToolResult]


@dataclass(frozen=True)
class Tool:
    name: str
    brief: str  # one line, for TOOL_DESCRIPTIONS=brief
    description: str
    parameters: dict[str, Any]  # the JSON schema of the arguments (an object)
    function: ToolFunction
    group: str = "builtin"  # "builtin", or the catalog's "high" / "low"
    default: bool = True  # offered when SEARCHBOX_TOOLS is unset (the built-ins always are)

    def openai_schema(self, descriptions: str = "full") -> dict[str, Any]:
        """The function-calling schema; "brief" keeps the one-line description and the arguments' names,
        types, defaults, choices and length limits (about half the prompt tokens)."""
        if descriptions == "brief":
            description, parameters = self.brief, _brief_schema(self.parameters)
        else:
            description, parameters = self.description, self.parameters
        return {"type": "function", "function": {"name": self.name, "description": description, "parameters": parameters}}

    def run(self, ctx: ToolContext, raw_args: dict[str, Any] | None) -> ToolResult:
        """Validate the arguments (coerced, clamped) and run. Never raises."""
        try:
            args, notes = validate_arguments(self, raw_args)
        except ToolArgumentError as exc:
            return ToolResult.error(str(exc))
        result = self.call(ctx, args)
        if notes:
            result.text += f"{ARGUMENT_NOTES}{'; '.join(notes)}]"
            result.details["argument_notes"] = notes
        return result

    def call(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        """Run on arguments already validated; any failure becomes an error result, never an exception."""
        try:
            return self.function(ctx, args)
        except Cancelled as cut:  # not a failure of the tool: the result says how the call ended
            return ToolResult.cut(self.name, cut)
        except (ToolArgumentError, ModelLoadError) as exc:
            return ToolResult.error(str(exc))
        except Exception as exc:  # a tool bug or an OS error must not end the run
            return ToolResult.error(f"{self.name} failed: {type(exc).__name__}: {exc}")


def tool(*, brief: str, description: str, properties: dict[str, Any], required: tuple[str, ...] | list[str] = (),
         group: str = "builtin", default: bool = True) -> Callable[[ToolFunction], Tool]:
    """Declare the function below as a tool named after it, with the schema of its arguments (an object
    with these properties) beside it."""
    parameters = {"type": "object", "properties": properties, "required": list(required)}

    def declare(function: ToolFunction) -> Tool:
        return Tool(function.__name__, brief, description, parameters, function, group, default)

    return declare


# What a brief schema leaves out: prose and most bounds (arguments are still validated against the full
# schema). maxItems and maxLength stay: a forced call's grammar is built from the schema the model is
# shown, and bounds its lists and strings by them (llm/grammars/schema_grammar.py).
_DETAIL_KEYS = {"description", "minLength", "minimum", "maximum", "minItems"}


def _brief_schema(schema: dict[str, Any]) -> dict[str, Any]:
    brief = {key: value for key, value in schema.items() if key not in _DETAIL_KEYS}
    if "properties" in brief:
        brief["properties"] = {name: _brief_schema(prop) for name, prop in brief["properties"].items()}
    if isinstance(brief.get("items"), dict):
        brief["items"] = _brief_schema(brief["items"])
    return brief
