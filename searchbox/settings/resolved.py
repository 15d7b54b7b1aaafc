"""Settings: every section's knobs in one frozen value (design §2.1), read flat (`settings.turn_budget`).

Each section is a dataclass of its own module (llm, retrieval, loop, tools, answers, storage, app, uploads),
each knob with its meaning beside it; `Settings` inherits them all, so each knob's environment variable is
still its name in upper case. `resolve()` layers: field default < retrieval preset < environment < per-run
overrides. `as_config()` gives the resolved values a run records (secrets left out). Settings also
remember which knobs a user set (`explicit`) and which were fitted to the run (`derived`, by
agent/run_settings.py), so what is fitted never overrides the user's own.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from searchbox.settings import answers, app, llm, loop, retrieval, tools, uploads
from searchbox.settings.answers import AnswerSettings
from searchbox.settings.app import AppSettings
from searchbox.settings.bundles import RETRIEVAL_PRESET_KNOBS, RETRIEVAL_PRESETS
from searchbox.settings.knob import SettingsError, coerce
from searchbox.settings.llm import LlmSettings
from searchbox.settings.loop import LoopSettings
from searchbox.settings.retrieval import RetrievalSettings
from searchbox.settings.storage import StorageSettings
from searchbox.settings.tools import ToolSettings
from searchbox.settings.uploads import UploadSettings
from searchbox.settings.urls import without_userinfo

# The sections, in the order docs/knobs.md and a run's config.json list their knobs.
SECTIONS = (LlmSettings, RetrievalSettings, LoopSettings, ToolSettings, AnswerSettings, StorageSettings, AppSettings,
            UploadSettings)


def _bookkeeping() -> Any:
    """A field that is not a knob: no environment variable, not in as_config() or knob_docs()."""
    return field(default=frozenset(), compare=False)


# A dataclass takes its bases' fields last base first: the bases are SECTIONS reversed, so the knobs come in
# SECTIONS' order.
@dataclass(frozen=True)
class Settings(UploadSettings, AppSettings, StorageSettings, AnswerSettings, ToolSettings, LoopSettings,
               RetrievalSettings, LlmSettings):
    """Every knob, resolved; see the module's docstring."""

    # Knobs given by the environment or an override, as opposed to defaults and retrieval presets.
    explicit: frozenset[str] = _bookkeeping()
    # Knobs whose value was fitted to the run (see with_derived).
    derived: frozenset[str] = _bookkeeping()

    @classmethod
    def resolve(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Resolve every knob: default < preset < environment < overrides."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        explicit: set[str] = set()
        for f in knob_fields():
            name = f.name.upper()
            if f.name in overrides and overrides[f.name] is not None:
                values[f.name] = coerce(f, overrides[f.name])
                explicit.add(f.name)
            elif name in env:
                values[f.name] = coerce(f, env[name])
                explicit.add(f.name)
        unknown = set(overrides) - {f.name for f in knob_fields()}
        if unknown:
            raise SettingsError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        if "llama_api_key" not in values and env.get("OPENAI_API_KEY"):
            # The OpenAI clients' own variable; not explicit, which is how connect() knows to say it was read.
            values["llama_api_key"] = env["OPENAI_API_KEY"]
        preset = values.get("retrieval_preset", cls.retrieval_preset)
        for key, value in RETRIEVAL_PRESETS[preset].items():
            if key not in explicit:
                values[key] = value
        settings = cls(**values, explicit=frozenset(explicit))
        settings.validate()
        return settings

    def with_overrides(self, **overrides: Any) -> Settings:
        """These knobs changed, as a user's choice; a new retrieval preset also sets the knobs it bundles,
        unless given here."""
        values = {k: coerce(_field(k), v) for k, v in overrides.items()}
        preset = values.get("retrieval_preset")
        if preset is not None and preset != self.retrieval_preset:
            bundle = {**RETRIEVAL_PRESETS["default"], **RETRIEVAL_PRESETS[preset]}
            for key in RETRIEVAL_PRESET_KNOBS:
                if key not in values:
                    values[key] = bundle.get(key, _field(key).default)
        settings = dataclasses.replace(self, **values, explicit=self.explicit | set(overrides),
                                       derived=self.derived - set(overrides))
        settings.validate()
        return settings

    def with_derived(self, **values: Any) -> Settings:
        """These knobs fitted to the run (the model's limits, this machine's retrieval models, the prompt's day):
        recorded as derived, not explicit."""
        settings = dataclasses.replace(self, **{k: coerce(_field(k), v) for k, v in values.items()},
                                       explicit=self.explicit - set(values), derived=self.derived | set(values))
        settings.validate()
        return settings

    def derived_config(self) -> dict[str, Any]:
        """The derived knobs and their values, under their environment-variable names, as a run records them."""
        return {name.upper(): getattr(self, name) for name in sorted(self.derived)}

    @property
    def assists(self) -> tuple[str, ...]:
        """The assists that are on (loop.assists_on): HARNESS_ASSISTS, and those whose knob the user set."""
        return loop.assists_on(self, self.explicit)

    def validate(self) -> None:
        """SettingsError for a knob whose value cannot be used: each section checks its own."""
        llm.check(self)
        retrieval.check(self)
        loop.check(self, self.explicit)
        tools.check(self)
        answers.check(self)
        app.check(self)
        uploads.check(self)

    def as_config(self) -> dict[str, Any]:
        """The resolved knobs a run records; secrets are reported only as set or not."""
        config: dict[str, Any] = {}
        for f in knob_fields():
            value = getattr(self, f.name)
            if f.metadata["secret"]:
                value = "set" if value else "unset"
            elif isinstance(value, str) and "://" in value:  # an endpoint's user:password@ is a secret too
                value = without_userinfo(value)
            config[f.name.upper()] = value
        return config


def knob_fields() -> tuple[dataclasses.Field, ...]:
    """The fields of Settings that are knobs (the bookkeeping fields are not)."""
    return tuple(f for f in fields(Settings) if "help" in f.metadata)


def _field(name: str) -> dataclasses.Field:
    for f in knob_fields():
        if f.name == name:
            return f
    raise SettingsError(f"unknown setting: {name}")
