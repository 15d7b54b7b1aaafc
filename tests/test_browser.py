"""The app in headless Chromium (Debian's chromium, driven by Playwright; no browser download):
submit a question, watch tool calls appear while the run goes, reload the page and find the run
followed again, see the token chart drawn, click a citation, and save screenshots. The LLM is a scripted endpoint so the answer cites a real source;
everything else (app, scheduler, loop, tools, retrieval) is real.

Set SEARCHBOX_SCREENSHOTS=docs to refresh the README's screenshots.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from app_server import running_app
from scripted_endpoint import Reply, ScriptedEndpoint

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
QUESTION = "Who audited Quillmoor's FY2025 financial statements?"


def scripted_answer(body: dict[str, Any]) -> Reply:
    """Search first, read what was found, then answer citing the first source; slow enough to watch."""
    tool_results = sum(1 for m in body["messages"] if m["role"] == "tool")
    if not body.get("tools"):
        return Reply(text="The auditor is named in the audit report [s1].")
    if tool_results == 0:
        return Reply(tool_calls=[{"name": "search_dataroom", "arguments": {"query": "independent auditor FY2025", "k": 3}}],
                     delay_s=0.3, usage={"prompt_tokens": 900, "completion_tokens": 30})
    if tool_results == 1:
        return Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": "audit", "ignoreCase": True, "limit": 5}}],
                     delay_s=0.3, usage={"prompt_tokens": 2400, "completion_tokens": 25})
    # Three forced turns of ~4 s each: the run is still going after the page is reloaded.
    return Reply(text="The FY2025 statements were audited by the firm named in the audit report [s1].",
                 delay_s=0.15, usage={"prompt_tokens": 3100, "completion_tokens": 40})


def test_search_watch_chart_and_citation(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    shots = Path(os.environ.get("SEARCHBOX_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with ScriptedEndpoint(default=scripted_answer) as endpoint, \
            running_app(tmp_path, LLAMA_URL=endpoint.url, MODEL_ID="scripted") as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1300})
        page.goto(url, wait_until="domcontentloaded")
        question = page.get_by_label("Question")
        expect(question).to_be_visible(timeout=60_000)
        question.fill(QUESTION)
        page.get_by_label("Balanced").check()
        page.screenshot(path=str(shots / "ask-panel.png"), full_page=False)

        page.get_by_role("button", name="Search", exact=True).click()
        activity = page.locator("#activity")
        expect(activity.get_by_text("search_dataroom").first).to_be_visible(timeout=60_000)
        page.screenshot(path=str(shots / "live-run.png"), full_page=False)

        page.reload(wait_until="domcontentloaded")  # the same browser comes back: its run is followed again
        activity = page.locator("#activity")
        expect(activity.get_by_text("search_dataroom").first).to_be_visible(timeout=60_000)

        expect(page.locator("#plot-tokens .js-plotly-plot").first).to_be_visible(timeout=90_000)
        expect(page.get_by_text("Stopped:").first).to_be_visible(timeout=120_000)
        citation = page.locator("#answer a.cite").first
        expect(citation).to_be_visible(timeout=30_000)
        citation.click()
        expect(page.locator("#src-s1")).to_have_attribute("open", "", timeout=10_000)
        page.screenshot(path=str(shots / "finished-run.png"), full_page=True)
        browser.close()
    for name in ("ask-panel.png", "live-run.png", "finished-run.png"):
        assert (shots / name).stat().st_size > 10_000
