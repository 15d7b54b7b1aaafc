"""A job's form fields as the Ask form's (ui.visitors): the same names as the /search endpoint's parameters,
the same choices and defaults, and nothing else. A field the form does not have is refused: a knob a visitor
may not set (403), or one of no meaning here (400)."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData, UploadFile

from searchbox.settings import Settings
from searchbox.settings.resolved import knob_fields
from searchbox.ui.api.body import ZIP_FIELD
from searchbox.ui.api.errors import ApiError
from searchbox.ui.visitors import BUDGET_RANGE, ENDPOINT_CHOICE, RunRequest, form_choices, form_defaults

CHOICE_FIELDS = ("llm", "retrieval", "embed_backend", "rerank_backend", "harness")
TOOL_FIELDS = ("high", "low")
TEXT_FIELDS = ("question", "endpoint", "model_id", "jina_key")
FIELDS = ("question", ZIP_FIELD, "budget", "force", *TOOL_FIELDS, *CHOICE_FIELDS, "endpoint", "model_id", "jina_key")
# Knobs the form sets under a field of its own.
SET_BY = {"turn_budget": "budget", "force_budget": "force", "searchbox_tools": "high and low",
          "retrieval_preset": "retrieval", "llm_gguf": "llm", "llama_url": "endpoint", "jina_api_key": "jina_key"}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def run_request(form: FormData, settings: Settings, upload: str | None) -> RunRequest:
    """The run the form asks for, each field it leaves out at the page's default; ApiError for a field or a
    value the page would not send."""
    refuse_unknown(form, settings)
    values: dict[str, Any] = form_defaults(settings)
    choices = form_choices(settings)
    given = {name: _texts(form, name) for name in FIELDS if name != ZIP_FIELD and name in form}
    for name in (*TEXT_FIELDS, *CHOICE_FIELDS, "budget", "force"):
        if name in given:
            values[name] = _one(name, given[name])
    question = str(values.pop("question", "")).strip()
    if not question:
        raise ApiError(400, "Ask a question: the form's `question` field is empty or missing.")
    values["budget"] = _budget(values["budget"])
    values["force"] = _flag("force", values["force"])
    for name in TOOL_FIELDS:
        if name in given:
            values[name] = [tool.strip() for text in given[name] for tool in text.split(",") if tool.strip()]
        if unknown := [tool for tool in values[name] if tool not in choices[name]]:
            raise ApiError(400, f"No {name}-level tool {', '.join(map(repr, unknown))}; the {name}-level tools are: "
                                f"{', '.join(choices[name])}.")
    for name in CHOICE_FIELDS:
        if values[name] not in choices[name]:
            raise ApiError(400, f"`{name}` may be one of {', '.join(map(repr, choices[name]))}, not {values[name]!r}.")
    own_endpoint = values["endpoint"].strip() or values["model_id"].strip()
    if own_endpoint and not settings.searchbox_visitor_endpoints:
        raise ApiError(403, "`endpoint` and `model_id` are knobs a visitor may not set on this app: its runs use the "
                            "app's own model (SEARCHBOX_VISITOR_ENDPOINTS=1 opens them).")
    if own_endpoint and values["llm"] != ENDPOINT_CHOICE:
        raise ApiError(400, f"An `endpoint` is for `llm={ENDPOINT_CHOICE}`.")
    return RunRequest(question=question, upload=upload, **values)


def refuse_unknown(form: FormData, settings: Settings) -> None:
    knobs = {f.name for f in knob_fields()}
    for name in dict.fromkeys(form.keys()):
        if name in FIELDS:
            continue
        knob = name.lower()
        if knob in SET_BY:
            raise ApiError(400, f"`{name}` is set with the field `{SET_BY[knob]}` here.")
        if knob in knobs:
            raise ApiError(403, f"`{name}` is a knob a visitor may not set on this app; a job's fields are: "
                                f"{', '.join(FIELDS)}.")
        raise ApiError(400, f"No field `{name}`; a job's fields are: {', '.join(FIELDS)}.")


def _texts(form: FormData, name: str) -> list[str]:
    items = form.getlist(name)
    if any(isinstance(item, UploadFile) for item in items):
        raise ApiError(400, f"`{name}` is text, not a file.")
    return [str(item) for item in items]


def _one(name: str, items: list[str]) -> str:
    if len(items) != 1:
        raise ApiError(400, f"`{name}` is given {len(items)} times; give it once.")
    return items[0]


def _budget(value: Any) -> int:
    low, high = BUDGET_RANGE
    try:
        budget = int(str(value).strip())
    except ValueError:
        raise ApiError(400, f"`budget` is a whole number of turns, {low} to {high}, not {value!r}.") from None
    if not low <= budget <= high:
        raise ApiError(400, f"`budget` is {low} to {high} turns here, not {budget}.")
    return budget


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in _TRUE | _FALSE:
        raise ApiError(400, f"`{name}` is true or false, not {value!r}.")
    return text in _TRUE
