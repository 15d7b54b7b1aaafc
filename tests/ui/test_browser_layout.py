"""The app in headless Chromium, the look of it: on a phone-sized screen the columns stack, so the
run's status and activity feed sit below the Search button, and starting a search must bring them
into view; every label is drawn in one font."""

from __future__ import annotations

from typing import Any

from testkit.app_server import running_app, throwaway_home
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from test_browser import CHROMIUM, CHROMIUM_ARGS, pytestmark  # noqa: F401  (the same skip without chromium)


def scripted(body: dict[str, Any]) -> Reply:
    if not any(m["role"] == "tool" for m in body["messages"]) and body.get("tools"):
        return Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": "audit", "limit": 3}}], delay_s=0.5)
    return Reply(text="Audited, per the report [s1].", delay_s=0.5)


def test_a_search_on_a_phone_scrolls_to_the_run() -> None:
    from playwright.sync_api import expect, sync_playwright

    with throwaway_home("mobile") as home, ScriptedEndpoint(default=scripted) as endpoint, \
            running_app(home, as_user=True, LLAMA_URL=endpoint.url, MODEL_ID="scripted") as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        page.goto(url, wait_until="domcontentloaded")
        question = page.get_by_label("Question")
        expect(question).to_be_visible(timeout=60_000)
        feed = page.locator("#activity")
        question.fill("Who audited the FY2025 financial statements?")
        search = page.get_by_role("button", name="Search", exact=True)
        search.scroll_into_view_if_needed()  # as a visitor scrolls down to the button
        expect(feed).not_to_be_in_viewport(ratio=0.9)
        search.click()
        expect(feed).to_be_in_viewport(ratio=0.9, timeout=10_000)
        expect(page.locator("#run-status")).to_be_in_viewport()
        expect(feed).to_contain_text("grep", timeout=60_000)
        browser.close()


def test_each_label_is_drawn_in_one_font() -> None:
    """Chromium's own account of the fonts that drew a node's text (CSS.getPlatformFontsForNode)."""
    from playwright.sync_api import expect, sync_playwright

    with throwaway_home("fonts") as home, running_app(home, as_user=True) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(url, wait_until="domcontentloaded")
        search = page.get_by_role("button", name="Search", exact=True)
        expect(search).to_be_visible(timeout=60_000)
        page.evaluate("document.fonts.ready")
        cdp = page.context.new_cdp_session(page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
        for selector in ("button.primary", "#run-status em"):
            node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
            fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
            assert len(fonts) == 1 and not fonts[0]["isCustomFont"], (selector, fonts)
        browser.close()
