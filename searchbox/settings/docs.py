"""Every knob's default, choices and meaning, section by section: for docs/knobs.md (`python -m searchbox knobs
--markdown`), .env.example (`python -m searchbox knobs --env-example`), the CLI's knob list and the UI."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import fields
from typing import Any

from searchbox.settings.resolved import SECTIONS

KNOBS_PAGE_INTRO = """# Knobs

Every knob is an environment variable with a default, and each can be overridden for one run: `--set KNOB=VALUE`
on the command line, a field of the app's form, or an entry of a sweep's matrix. A run records the resolved
values in its `config.json` (secrets as `set`). This page is generated from the sections of `Settings` in
`searchbox/settings/` (one module each) by `python -m searchbox knobs --markdown > docs/knobs.md`; a test fails
when it is stale. At start-up the app and the CLI name every environment variable that looks like a knob but is
not one, with the knob meant; [.env.example](../.env.example) lists the knobs an operator sets for a deployment
([Deploying](deploy.md)).
"""


def knob_docs() -> list[dict[str, Any]]:
    """Section, name, default, choices and help of every knob, in the order Settings declares them."""
    return [
        {
            "section": section.TITLE,
            "name": f.name.upper(),
            "default": f.default,
            "choices": f.metadata["choices"],
            "help": f.metadata["help"],
            "secret": f.metadata["secret"],
            "deploy": f.metadata["deploy"],
        }
        for section in SECTIONS
        for f in fields(section)
    ]


def knobs_markdown() -> str:
    """docs/knobs.md: the intro, then each section's heading, what it covers and a table row per knob."""
    parts = [KNOBS_PAGE_INTRO]
    docs = knob_docs()
    for section in SECTIONS:
        rows = ["| knob | default | meaning |", "|---|---|---|"]
        for k in (k for k in docs if k["section"] == section.TITLE):
            choices = f" ({' / '.join(k['choices'])})" if k["choices"] else ""
            default = "unset" if k["default"] in (None, "") else f"`{k['default']}`"
            rows.append(f"| `{k['name']}` | {default} | {k['help']}{choices} |")
        about = " ".join(inspect.getdoc(section).split())
        parts.append(f"## {section.TITLE}\n\n{about}\n\n" + "\n".join(rows) + "\n")
    return "\n".join(parts)


ENV_EXAMPLE_INTRO = """\
# searchbox: what an operator sets, by section. Every variable is optional: uncomment a line to set it.
# Every other knob, and what each one does in full: docs/knobs.md. This file is generated from searchbox/settings/
# by `python -m searchbox knobs --env-example > .env.example`; a test fails when it is stale.
# searchbox reads its environment, not this file: copy it to .env and load that with systemd's EnvironmentFile=,
# `docker run --env-file .env`, or `set -a; . ./.env; set +a` in the shell that starts `python app.py`
# (docs/deploy.md). At start-up the app and the CLI name every variable that looks like a knob but is not one.
"""

# Gradio's own variables that a deployment sets beside the knobs: app.py takes its host and port from the first
# two, and Gradio serves its pages under the third, the path prefix a reverse proxy forwards.
WEB_SERVER_VARIABLES = (
    ("GRADIO_SERVER_NAME", "127.0.0.1",
     "the address the app listens on (python app.py --host; 0.0.0.0: every interface)"),
    ("GRADIO_SERVER_PORT", "7860", "the app's port (python app.py --port)"),
    ("GRADIO_ROOT_PATH", "",
     "the path prefix a reverse proxy serves the app under, such as /searchbox (docs/deploy.md)"),
)


def env_example() -> str:
    """.env.example: the knobs an operator sets for a deployment (`deploy`), section by section, each commented out
    at its default under its meaning, then the web server's own variables."""
    docs = [k for k in knob_docs() if k["deploy"]]
    parts = [ENV_EXAMPLE_INTRO]
    for section in SECTIONS:
        knobs = [k for k in docs if k["section"] == section.TITLE]
        if knobs:
            parts.append(f"# --- {section.TITLE} ---\n\n" + "\n".join(_env_line(k["name"], k["default"], _meaning(k))
                                                                for k in knobs))
    parts.append("# --- The app's web server (Gradio's own variables, not knobs) ---\n\n"
                 + "\n".join(_env_line(name, default, meaning) for name, default, meaning in WEB_SERVER_VARIABLES))
    return "\n".join(parts)


def _meaning(k: dict[str, Any]) -> str:
    return k["help"] + (f" ({' / '.join(k['choices'])})" if k["choices"] else "")


def _env_line(name: str, default: Any, meaning: str) -> str:
    """The meaning as comment lines, then the variable at its default, commented out."""
    value = "" if default is None else str(default).lower() if isinstance(default, bool) else str(default)
    comment = textwrap.fill(meaning, width=118, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)
    return f"{comment}\n# {name}={value}\n"
