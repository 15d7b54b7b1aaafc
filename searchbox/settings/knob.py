"""A knob: a dataclass field with its default, its meaning and its choices, and how a value given as text
(an environment variable, a form field, a matrix entry) becomes the field's type."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any


class SettingsError(ValueError):
    """A knob was given a value that cannot be used."""


def knob(default: Any, help: str, *, choices: tuple[str, ...] = (), secret: bool = False, deploy: bool = False) -> Any:
    """A field that is a knob: its environment variable is its name in upper case; `help` is its meaning,
    as docs/knobs.md, `python -m searchbox knobs` and the app show it; a `secret` one is recorded only as
    set or unset; a `deploy` one is what an operator sets for a deployment, and .env.example lists it."""
    return field(default=default, metadata={"help": help, "choices": choices, "secret": secret, "deploy": deploy})


def coerce(f: dataclasses.Field, raw: Any) -> Any:
    """`raw` as the knob's type (its annotation, a string under `from __future__ import annotations`),
    checked against its choices."""
    name = f.name.upper()
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    try:
        if kind == "bool":
            value: Any = raw if isinstance(raw, bool) else str(raw).strip().lower() in {"1", "true", "yes", "on"}
        elif kind == "int":
            value = int(raw)
        elif kind == "int | None":
            value = None if raw is None or str(raw).strip() == "" else int(raw)
        else:
            value = str(raw).strip()
    except (TypeError, ValueError):
        raise SettingsError(f"{name} must be a whole number, got {raw!r}") from None
    choices = f.metadata["choices"]
    if choices and value not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def at_least(settings: object, minimum: int, names: tuple[str, ...]) -> None:
    """SettingsError for the first of these knobs below `minimum` (1: "at least 1", 0: "0 or more")."""
    for name in names:
        if getattr(settings, name) < minimum:
            bound = "at least 1" if minimum == 1 else f"{minimum} or more"
            raise SettingsError(f"{name.upper()} must be {bound}")
