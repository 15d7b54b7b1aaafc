"""The app behind a real reverse proxy, as docs/deploy.md sets one up: Debian's nginx on loopback with TLS (a
self-signed certificate, the only one Chromium is told to accept), HTTP basic auth and a path prefix
(GRADIO_ROOT_PATH=/searchbox). Headless Chromium runs a whole search through it: the page, the live feed, the
answer and its citation, both downloads, the run in the Jobs tab. Every request the page makes goes to the proxy's
https URL under the prefix; the console stays free of errors and the app's log of tracebacks.

The browser also sends an X-Forwarded-For of its own choosing: the app believes the header only from the proxy it
was told of (SEARCHBOX_TRUSTED_PROXIES), so the run is counted for the address nginx saw, not the one claimed.
The model is the scripted one of test_browser.py: this test is about the proxy.

Set SEARCHBOX_SCREENSHOTS=docs to refresh docs/deploy.md's screenshots.
"""

from __future__ import annotations

import io
import json
import os
import ssl
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_browser import CHROMIUM, CHROMIUM_ARGS, QUESTION, no_error_badges, scripted_answer

from searchbox.jobs.store import JobStore
from testkit.app_server import default_jobs_dir, running_app, server_tracebacks, throwaway_home
from testkit.reverse_proxy import INSTALL, NGINX, OPENSSL, PROXY_ADDRESS, nginx_in_front
from testkit.scripted_endpoint import ScriptedEndpoint

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium: apt-get install chromium"),
              pytest.mark.skipif(NGINX is None or OPENSSL is None, reason=f"needs Debian's nginx: {INSTALL}")]

PREFIX = "/searchbox"
USER, PASSWORD = "operator", "proxy-pass-7f3a9c"
CLAIMED = "203.0.113.9"  # the address the browser claims in its own X-Forwarded-For
SHOTS = ("proxy-live-run.png", "proxy-jobs-tab.png")


def test_a_whole_run_through_nginx_with_tls_basic_auth_and_a_path_prefix() -> None:
    from playwright.sync_api import expect, sync_playwright

    with throwaway_home("proxy") as home:
        shots = Path(os.environ.get("SEARCHBOX_SCREENSHOTS") or home / "shots")
        shots.mkdir(parents=True, exist_ok=True)
        console_errors: list[str] = []
        requests: list[str] = []
        failed: list[str] = []  # responses with an error status but for basic auth's challenges
        with ScriptedEndpoint(default=scripted_answer) as endpoint, \
                running_app(home, as_user=True, LLAMA_URL=endpoint.url, MODEL_ID="scripted", GRADIO_ROOT_PATH=PREFIX,
                            SEARCHBOX_TRUSTED_PROXIES=PROXY_ADDRESS) as app_url, \
                nginx_in_front(int(app_url.rstrip("/").rsplit(":", 1)[1]), home / "nginx", prefix=PREFIX, user=USER,
                               password=PASSWORD) as proxy, \
                sync_playwright() as p:
            tls = ssl.create_default_context(cafile=str(proxy.cert))
            assert httpx.get(proxy.url, verify=tls).status_code == 401
            assert httpx.get(proxy.url, verify=tls, auth=(USER, "not-the-password")).status_code == 401
            config = httpx.get(proxy.url + "config", verify=tls, auth=(USER, PASSWORD)).json()
            assert config["root"] == proxy.url.rstrip("/")  # the URLs the page is given are the proxy's

            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=[*CHROMIUM_ARGS, f"--ignore-certificate-errors-spki-list={proxy.spki}"])
            context = browser.new_context(viewport={"width": 1280, "height": 860}, accept_downloads=True,
                                          http_credentials={"username": USER, "password": PASSWORD},
                                          extra_http_headers={"X-Forwarded-For": CLAIMED})
            page = context.new_page()
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: console_errors.append(str(e)))
            page.on("request", lambda request: requests.append(request.url))
            page.goto(proxy.url, wait_until="domcontentloaded")
            question = page.get_by_label("Question")
            expect(question).to_be_visible(timeout=60_000)
            question.fill(QUESTION)
            page.get_by_label("Balanced").check()
            page.get_by_role("button", name="Search", exact=True).click()
            activity = page.locator("#activity")
            expect(activity.get_by_text("search_dataroom").first).to_be_visible(timeout=60_000)
            expect(page.locator("#plot-tokens .js-plotly-plot").first).to_be_visible(timeout=30_000)
            no_error_badges(page)
            page.evaluate("window.scrollTo(0, 0)")  # the question and the feed's start, not where the click left it
            page.screenshot(path=str(shots / SHOTS[0]))

            expect(page.get_by_text("Stopped:").first).to_be_visible(timeout=120_000)
            citation = page.locator("#answer a.cite").first
            expect(citation).to_be_visible(timeout=30_000)
            citation.click()
            expect(page.locator("#src-s1")).to_have_attribute("open", "", timeout=10_000)
            answer = download(page, page.get_by_role("button", name="Download ANSWER.md").first)
            assert b"[s1]" in answer

            page.get_by_role("tab", name="Jobs").click()
            row = page.locator("#jobs-table").get_by_role("gridcell").filter(has_text=QUESTION[:40]).first
            expect(row).to_be_visible(timeout=30_000)
            row.click()
            expect(page.locator("#job-plot-tokens .js-plotly-plot").first).to_be_visible(timeout=30_000)
            expect(page.locator("#job-answer a.cite").first).to_be_visible(timeout=30_000)
            bundle = download(page, page.get_by_role("button", name="Download run bundle").last)
            with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
                assert archive.read("work/ANSWER.md") == answer
            no_error_badges(page)
            page.screenshot(path=str(shots / SHOTS[1]))
            browser.close()

        assert not failed and not console_errors, (failed, console_errors)
        assert not [r for r in requests if not r.startswith((proxy.url, "data:", "blob:"))], requests
        assert not server_tracebacks(home), server_tracebacks(home)
        assert all((shots / name).stat().st_size > 10_000 for name in SHOTS)
        # The run is counted for the browser's real address, which nginx appended to the header; not for the one the
        # browser claimed, nor for the proxy's own.
        jobs = default_jobs_dir(home)
        [job] = [json.loads(path.read_text()) for path in jobs.glob("*/job.json")]
        store = JobStore(jobs)
        assert job["visitor"] == store.visitor_of("127.0.0.1")
        assert job["visitor"] not in (store.visitor_of(CLAIMED), store.visitor_of(PROXY_ADDRESS))


def download(page: Any, button: Any) -> bytes:
    """What a click on a download button saves, through the proxy."""
    from playwright.sync_api import expect

    expect(button).to_be_visible(timeout=30_000)
    with page.expect_download() as started:
        button.click()
    return Path(started.value.path()).read_bytes()
