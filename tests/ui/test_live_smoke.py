"""A live smoke test: the real app in headless Chromium against a real LLM endpoint, on the built-in
dataroom, asked one question of the built-in set as a visitor asks it.

    LIVE=1 LLAMA_URL=http://127.0.0.1:8080/v1 [MODEL_ID=...] python -m pytest -q tests/ui/test_live_smoke.py

It checks what a working deployment shows: tool calls in the activity feed (and the run's record),
sources in the sources panel, and an answer that cites one of them, with a link that opens it. The
app gets the environment's knobs (CONTEXT_WINDOW for a server with a small context, FORCE_TOOL_STEPS,
TOOL_CALL_PARSING, ...), not the tests' limits for the packaged models, and LIVE_TIMEOUT_SECONDS
(default 1800) bounds the run. Skipped, with the reason, unless LIVE=1 and LLAMA_URL are set; an
endpoint that does not answer fails it.
"""

from __future__ import annotations

import json
import os

import httpx
import pytest

from testkit.app_server import PACKAGED_KNOBS, default_jobs_dir, running_app, server_tracebacks, throwaway_home
from searchbox.settings.resolved import knob_fields
from test_browser import CHROMIUM, CHROMIUM_ARGS, no_error_badges

LLAMA_URL = os.environ.get("LLAMA_URL", "")
pytestmark = [
    pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("LIVE") != "1", reason="a live test: set LIVE=1 and LLAMA_URL to a real endpoint"),
    pytest.mark.skipif(not LLAMA_URL, reason="LIVE=1 but no LLAMA_URL: the live test needs a real endpoint"),
    pytest.mark.skipif(CHROMIUM is None, reason="the live test needs Debian's chromium: apt-get install chromium"),
]
QUESTION = "Who audited the FY2025 financial statements?"  # a literal question of the built-in set
TIMEOUT_S = int(os.environ.get("LIVE_TIMEOUT_SECONDS", "1800"))
MODEL_LIMITS = ("CONTEXT_WINDOW", "MAX_OUTPUT_TOKENS", "MAX_STEPS_PER_TURN", "FORCE_TOOL_STEPS")


def app_knobs() -> dict[str, str]:
    """The app's environment: the tests' app helper fits the model's limits to the packaged models;
    here they are the environment's or the defaults, as in a deployment (its other knobs, such as the
    packaged retrieval models that work offline, stay unless the environment sets them)."""
    defaults = {f.name.upper(): f.default for f in knob_fields()}
    knobs = {name: os.environ[name] if name in os.environ else str(defaults[name]) for name in PACKAGED_KNOBS
             if name in os.environ or name in MODEL_LIMITS}
    return {**knobs, "LLAMA_URL": LLAMA_URL, "MODEL_ID": os.environ.get("MODEL_ID", "")}


def test_a_live_model_searches_and_answers_with_citations_in_the_app() -> None:
    from playwright.sync_api import expect, sync_playwright

    models = LLAMA_URL.rstrip("/").removesuffix("/chat/completions").removesuffix("/v1") + "/v1/models"
    try:
        httpx.get(models, timeout=10.0).raise_for_status()
    except httpx.HTTPError as exc:
        pytest.fail(f"LLAMA_URL does not answer ({models}: {exc})")

    with throwaway_home("live") as home, running_app(home, as_user=True, **app_knobs()) as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1300})
        page.goto(url, wait_until="domcontentloaded")
        question = page.get_by_label("Question")
        expect(question).to_be_visible(timeout=60_000)
        question.fill(QUESTION)
        page.get_by_role("button", name="Search", exact=True).click()
        expect(page.get_by_text("Stopped:").first).to_be_visible(timeout=TIMEOUT_S * 1000)
        [job] = [d for d in default_jobs_dir(home).iterdir() if (d / "run_meta.json").exists()]
        meta = json.loads((job / "run_meta.json").read_text(encoding="utf-8"))
        called = meta.get("tool_counts") or {}
        assert called, f"the model called no tool (stop reason {meta.get('stop_reason')})"
        activity = page.locator("#activity")
        for name in called:
            expect(activity.get_by_text(name).first).to_be_visible()
        sources = page.locator(".sources details")
        expect(sources.first).to_be_attached(timeout=30_000)
        citation = page.locator("#answer a.cite").first
        expect(citation).to_be_visible(timeout=30_000)
        target = (citation.get_attribute("href") or "").removeprefix("#")
        citation.click()
        expect(page.locator(f'[id="{target}"]').first).to_have_attribute("open", "", timeout=10_000)
        assert meta["citations"]["valid"] >= 1, meta["citations"]
        no_error_badges(page)
        browser.close()
    assert not server_tracebacks(home), server_tracebacks(home)
