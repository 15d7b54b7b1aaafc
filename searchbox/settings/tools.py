"""The tools' knobs: which tools a run offers and how they are shown to the model, and what bash and the
job's working folder may use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from searchbox.settings.knob import SettingsError, at_least, knob


@dataclass(frozen=True)
class ToolSettings:
    """The tools a run offers, how much of a result the model sees, and the bash sandbox's and working folder's
    limits."""

    TITLE: ClassVar[str] = "Tools and the sandbox"

    searchbox_tools: str | None = knob(
        None, "catalog tools a run gets: unset = catalog defaults, empty = none, a,b = exactly those"
    )
    tool_output_bytes: int = knob(
        50 * 1024, "the most one tool result adds to the context, in bytes (built-ins also stop at 2000 lines); "
        "search tools return fewer results to fit (unless set, the built-in runtime's model preset fits it)"
    )
    tool_descriptions: str = knob(
        "full", "how tools are described to the model: full, or brief (one line each, no argument descriptions: "
        "fewer prompt tokens for a small model on a CPU; unless set, the built-in runtime's model preset fits it)",
        choices=("full", "brief"),
    )
    bash_timeout_seconds: int = knob(60, "default timeout of one bash command (the model may ask for up to 10x)")
    bash_disk_mb: int = knob(2048, "disk space one bash command may use up before it is killed (a runaway writer)")
    bash_sandbox: str = knob(
        "auto",
        "how bash is confined: auto (namespaces where the host allows them, else Landlock + seccomp, else bash is "
        "disabled for the run), namespaces, landlock, or off (unconfined: the host's files in view; honoured only "
        "with SEARCHBOX_OPERATOR=1, for an operator on a trusted machine; otherwise refused for what auto finds)",
        choices=("auto", "namespaces", "landlock", "off"), deploy=True
    )
    job_disk_mb: int = knob(
        4096, "disk space a job's working folder may hold beyond its dataroom; what a bash command writes past it is "
        "removed after the command"
    )
    job_files: int = knob(20000, "files and folders a job's working folder may hold beyond its dataroom")


def check(settings: ToolSettings) -> None:
    """SettingsError for a value of this section's knobs that cannot be used."""
    if settings.tool_output_bytes < 1024:
        raise SettingsError("TOOL_OUTPUT_BYTES must be at least 1024")
    at_least(settings, 1, ("bash_timeout_seconds", "bash_disk_mb", "job_disk_mb", "job_files"))
