"""Every knob's default, choices and meaning, section by section: for docs/knobs.md (`python -m searchbox knobs
--markdown`), the CLI's knob list and the UI."""

from __future__ import annotations

import inspect
from dataclasses import fields
from typing import Any

from searchbox.settings.resolved import SECTIONS

KNOBS_PAGE_INTRO = """# Knobs

Every knob is an environment variable with a default, and each can be overridden for one run: `--set KNOB=VALUE`
on the command line, a field of the app's form, or an entry of a sweep's matrix. A run records the resolved
values in its `config.json` (secrets as `set`). This page is generated from the sections of `Settings` in
`searchbox/settings/` (one module each) by `python -m searchbox knobs --markdown > docs/knobs.md`; a test fails
when it is stale.
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
