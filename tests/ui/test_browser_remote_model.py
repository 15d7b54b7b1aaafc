"""The seed deployers' set-up (issue 45): the app on a CPU, its model on a server that needs a key and is asked
nothing streamed (`LLAMA_URL` at a loopback llama-server with `--api-key`, `LLM_STREAM=off`,
`MAX_OUTPUT_TOKENS=512`), a run from the page in headless Chromium. The run goes through, and the key is
nowhere a visitor or a record could show it: not in the page, the job folder's files, the downloaded bundle
or the app's log.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest

from testkit.app_server import default_jobs_dir, running_app, server_tracebacks, throwaway_home
from testkit.llama_server import ALIAS, LLAMA_SERVER, llama_server, missing

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium: apt-get install chromium (see README)"),
    pytest.mark.skipif(missing(LLAMA_SERVER) is not None, reason=f"{missing(LLAMA_SERVER)}"),
]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
KEY = "sk-deployers-secret-7f3a9c"
QUESTION = "When does the lease of the Duluth headquarters expire?"


def test_a_run_from_the_page_on_a_keyed_unstreamed_llama_server_shows_the_key_nowhere(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with throwaway_home("deployers") as home, \
            llama_server(tmp_path, n_ctx=8192, threads=1, api_key=KEY) as llm_url, \
            running_app(home, as_user=True, LLAMA_URL=llm_url, LLAMA_API_KEY=KEY, LLM_STREAM="off", MODEL_ID=ALIAS,
                        MAX_OUTPUT_TOKENS="512", CONTEXT_WINDOW="8192") as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1300}, accept_downloads=True)
        page.goto(url, wait_until="domcontentloaded")
        question = page.get_by_label("Question")
        expect(question).to_be_visible(timeout=60_000)
        question.fill(QUESTION)
        page.get_by_role("button", name="Search", exact=True).click()
        expect(page.get_by_text("Stopped:").first).to_be_visible(timeout=600_000)
        feed = page.locator("#activity").inner_text()
        assert "error_llm" not in feed and "401" not in feed, feed[-2000:]
        bundle_button = page.get_by_role("button", name="Download run bundle")
        expect(bundle_button).to_be_visible(timeout=30_000)
        with page.expect_download() as download:
            bundle_button.click()
        bundle = Path(download.value.path()).read_bytes()
        html = page.content()
        browser.close()

        jobs = [d for d in default_jobs_dir(home).iterdir() if d.is_dir()]
        assert len(jobs) == 1, jobs
        job = jobs[0]
        assert (job / "config.json").read_text().count('"LLM_STREAM": "off"') == 1
        assert KEY not in html
        leaks = [str(f.relative_to(job)) for f in job.rglob("*")
                 if f.is_file() and not f.is_symlink() and KEY.encode() in f.read_bytes()]
        assert not leaks, leaks
        with zipfile.ZipFile(io.BytesIO(bundle)) as zf:
            assert "config.json" in {Path(n).name for n in zf.namelist()}
            assert not [n for n in zf.namelist() if KEY.encode() in zf.read(n)]
        assert KEY not in (home / "app.log").read_text(errors="replace")
        assert not server_tracebacks(home)
