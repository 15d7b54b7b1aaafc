"""bash: a command line in work/, confined by the sandbox level BASH_SANDBOX picks."""

from __future__ import annotations

from typing import Any

from searchbox import inert
from searchbox.cancel import COMPLETED, CUT_CAUSES, TIMED_OUT, Cancelled
from searchbox.tools.builtin.bash_programs import programs_in
from searchbox.tools.builtin.common import LIMIT_NOTE
from searchbox.tools.sandbox import PlumbingError, SandboxUnavailable, discard_spill, run_sandboxed
from searchbox.tools.tool import ToolContext, ToolResult, tool
from searchbox.tools.truncate import Truncation, format_size, truncate_tail


@tool(
    brief="Run a bash command in the working folder (no network).",
    description="Run a bash command in the working folder, without network. Returns stdout and stderr together; "
    f"long output keeps its last {LIMIT_NOTE} and the whole of it is saved to a file the output names. "
    "A non-zero exit code is reported.",
    properties={
        "command": {"type": "string", "description": "the bash command line", "maxLength": 100_000},
        "timeout": {"type": "number", "description": "seconds before the command is killed (default 120)",
                    "minimum": 1, "maximum": 600},
    },
    required=["command"],
)
def bash(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    command = args["command"]
    timeout = min(args.get("timeout") or ctx.sandbox.default_timeout, ctx.sandbox.max_timeout)
    try:
        # Twice the shown size is kept, so the tail cut below always falls on whole lines.
        result = run_sandboxed(command, ctx.work_dir, timeout, output_cap_bytes=2 * ctx.max_bytes, spill=True,
                               config=ctx.sandbox, cancel=ctx.cancel)
    except (SandboxUnavailable, PlumbingError) as exc:
        return ToolResult(f"bash cannot run: {exc}", is_error=True, details={"command": command, "refused": str(exc)})
    # Without terminal control codes: the model, the feed and a terminal printing the result see the same text.
    cut = truncate_tail(inert.terminal(result.output), max_bytes=ctx.max_bytes)
    text = cut.text.rstrip("\n")
    spilled = cut.truncated or result.truncated_bytes > 0
    if spilled and result.spill_file:
        text += "\n\n" + _bash_note(cut, result.total_lines, result.spill_file, ctx.max_bytes)
    elif result.spill_file:
        discard_spill(ctx.work_dir, result.spill_file)
    status, ended = "", COMPLETED
    if result.cut:
        cut = Cancelled(result.cut)
        status, ended = (f"Command cut before it finished: {CUT_CAUSES.get(cut.reason, cut.reason)}. It was not "
                         "run again; run it again if you still need its result"), cut.ended
    elif result.timed_out:
        status, ended = f"Command timed out after {timeout:g} seconds", TIMED_OUT
    elif result.disk_exceeded:
        status = f"Command stopped: it used more than {ctx.sandbox.disk_bytes // 2**20} MB of disk"
    elif result.exit_code:
        status = f"Command exited with code {result.exit_code}"
    notes = [*result.notes]
    if result.removed:
        shown = inert.terminal(", ".join(result.removed[:5])) + (f" and {len(result.removed) - 5} more" if len(result.removed) > 5 else "")
        notes.append(f"the job's working folder may hold {ctx.sandbox.job_disk_bytes // 2**20} MB and "
                     f"{ctx.sandbox.job_inodes:,} files beyond the dataroom: removed what this command wrote past "
                     f"that ({shown})")
    for line in [status, *(f"[{note}]" for note in notes)]:
        if line:
            text = f"{text}\n\n{line}" if text else line
    details = {
        "command": command,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "disk_exceeded": result.disk_exceeded,
        "programs": programs_in(command),
        "airgap": result.airgap,
        "sandbox": result.level,
        "spill_file": result.spill_file if spilled else None,
        "truncated": spilled,
        "removed_past_budget": result.removed,
        "sandbox_notes": result.notes,
        "peak_memory_bytes": result.peak_memory_bytes,
        **({"cut": result.cut} if result.cut else {}),
    }
    text = text or "(no output)"
    lines = len(text.splitlines())
    gist = f"{'timed out' if result.timed_out else f'exit {result.exit_code}'}, {lines} line{'s' if lines != 1 else ''} of output"
    return ToolResult(text, is_error=bool(status or result.removed), details=details, ended=ended, gist=gist)


def _bash_note(cut: Truncation, total_lines: int, spill: str, max_bytes: int) -> str:
    if cut.partial_line:
        return f"[Showing the last {format_size(cut.shown_bytes)} of line {total_lines}. Full output: {spill}]"
    start = total_lines - cut.shown_lines + 1
    limit = "" if cut.truncated_by == "lines" else f" ({format_size(max_bytes)} limit)"
    return f"[Showing lines {start}-{total_lines} of {total_lines}{limit}. Full output: {spill}]"
