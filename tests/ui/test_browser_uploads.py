"""An upload over the cap, in headless Chromium: the page says why it was refused (issue #32)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from test_browser import CHROMIUM, CHROMIUM_ARGS
from testkit.app_server import running_app, throwaway_home

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(
    CHROMIUM is None, reason="the browser test needs Debian's chromium: apt-get install chromium (see README)")]


def small_room(folder: Path, name: str) -> str:
    path = folder / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("notes/a.md", f"{name}: the lease ends in 2029.")
    return str(path)


def test_an_upload_over_the_cap_is_refused_with_its_reason_on_the_page() -> None:
    from playwright.sync_api import expect, sync_playwright

    with throwaway_home("browser-uploads") as home, \
            running_app(home, GRADIO_TEMP_DIR=str(home / "gradio"), SEARCHBOX_UPLOADS_PER_ADDRESS="1") as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1300})
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_role("tab", name="Dataroom explorer").click()
        explorer = page.locator('[role="tabpanel"]:visible')
        chooser = explorer.locator("input[type=file][accept=\".zip\"]")
        chooser.set_input_files(small_room(home, "first.zip"))
        explorer.get_by_role("button", name="Load dataroom").click()
        expect(explorer.get_by_text("1 of 1 files read").first).to_be_visible(timeout=60_000)
        explorer.get_by_role("button", name="Clear").first.click()
        chooser.set_input_files(small_room(home, "second.zip"))
        expect(page.get_by_text("Your address already has 1 upload kept here").first).to_be_visible(timeout=30_000)
        browser.close()


def test_an_uploaded_room_is_embedded_while_the_visitor_types() -> None:
    """Issue #47: the upload preview starts embedding the room for search and shows how far it got."""
    from playwright.sync_api import expect, sync_playwright

    with throwaway_home("browser-preview-index") as home, \
            running_app(home, GRADIO_TEMP_DIR=str(home / "gradio")) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1300})
        page.goto(url, wait_until="domcontentloaded")
        question = page.get_by_label("Question")
        expect(question).to_be_visible(timeout=60_000)
        page.locator("input[type=file]").first.set_input_files(small_room(home, "room.zip"))
        status = page.locator("#index-status")
        expect(status.get_by_text("Ready for search: 1 of 1 chunks embedded.")).to_be_visible(timeout=120_000)
        browser.close()
