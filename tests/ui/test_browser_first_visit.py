"""A first visit in headless Chromium, as a new user makes it on a fresh install: Search with an
empty question, pick an example, run it (one turn, the Quick effort), open the Jobs tab at once,
then Compare and the dataroom explorer.

Every check is made and the failures are reported together: a panel showing "Error", a missing
input said only in a toast, a chart whose laid-out text boxes overlap (Plotly's own SVG text, as
drawn), a count axis with a fractional tick, example labels cut mid-word, an empty Jobs table after
a finished run, and a Compare tab that does not say what a sweep is or offer one to load.

SEARCHBOX_SCREENSHOTS=<folder> keeps a screenshot of each state (bench/first_visit_screenshots.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchbox.assets import BUILTIN_QUESTIONS
from testkit.app_server import running_app, server_tracebacks, throwaway_home
from testkit.scripted_endpoint import ScriptedEndpoint
from test_browser import CHROMIUM, CHROMIUM_ARGS, pytestmark, scripted_answer  # noqa: F401  (the same marks)

README_QUESTION = "Who audited the FY2025 financial statements?"

# Every visible SVG text of each chart under `root`, with its box as drawn; pairs that overlap by more
# than a pixel either way, and tick labels of count axes that are not whole numbers.
CHART_TEXT_JS = """(root) => {
  const found = {overlaps: [], fractional: [], charts: 0};
  for (const plot of document.querySelectorAll(root + ' .js-plotly-plot')) {
    if (!plot.offsetParent) continue;
    found.charts += 1;
    const name = plot.closest('[id]')?.id || '?';
    const boxes = [];
    for (const el of plot.querySelectorAll('svg.main-svg text')) {
      if (el.closest('.hoverlayer')) continue;
      const text = el.textContent.trim();
      const style = getComputedStyle(el);
      if (!text || style.display === 'none' || style.visibility === 'hidden' || style.opacity === '0') continue;
      const r = el.getBoundingClientRect();
      if (r.width < 1 || r.height < 1) continue;
      boxes.push({text, r});
      const tick = el.closest('.xtick, .ytick, [class*="angularaxistick"]');
      const counts = /plot-(budget|tools|tokens)$/.test(name);
      const countAxis = counts && tick && !(name.endsWith('tokens') && tick.classList.contains('ytick'))
                        && !(name.endsWith('tools') && tick.classList.contains('ytick'));
      if (countAxis && /[.]/.test(text)) found.fractional.push(name + ': tick ' + text);
    }
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r, b = boxes[j].r;
      const dx = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const dy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (dx > 1 && dy > 1) found.overlaps.push(name + ': "' + boxes[i].text + '" over "' + boxes[j].text + '"');
    }
  }
  return found;
}"""


class Walk:
    """The checks of one visit: each failure is kept, and the walk goes on."""

    def __init__(self, page: Any, shots: Path | None) -> None:
        self.page, self.shots, self.failures = page, shots, []

    def check(self, what: str, test: Callable[[], None]) -> bool:
        try:
            test()
            return True
        except (AssertionError, Exception) as exc:  # Playwright's timeouts too: the walk reports them all
            self.failures.append(f"{what}: {str(exc).splitlines()[0][:300]}")
            return False

    def shot(self, name: str) -> None:
        if self.shots is not None:
            self.page.screenshot(path=str(self.shots / f"first-visit-{name}.png"), full_page=True)

    def no_error_badge(self, where: str) -> None:
        from playwright.sync_api import expect

        self.check(f"{where}: no panel shows Error",
                   lambda: expect(self.page.get_by_text("Error", exact=True)).to_have_count(0, timeout=2_000))

    def charts_readable(self, where: str, root: str) -> None:
        found = self.page.evaluate(CHART_TEXT_JS, root)

        def readable() -> None:
            assert found["charts"], "no chart drawn"
            assert not found["overlaps"], found["overlaps"]
            assert not found["fractional"], found["fractional"]
        self.check(f"{where}: chart labels apart, counts in whole numbers", readable)


def test_a_first_visit_reaches_only_shippable_states() -> None:
    from playwright.sync_api import expect, sync_playwright

    env_shots = os.environ.get("SEARCHBOX_SCREENSHOTS")
    shots = Path(env_shots) if env_shots else None
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    with throwaway_home("first-visit") as home:
        with ScriptedEndpoint(default=scripted_answer) as endpoint, \
                running_app(home, as_user=True, LLAMA_URL=endpoint.url, MODEL_ID="scripted") as url, \
                sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1100})
            walk = Walk(page, shots)
            page.goto(url, wait_until="domcontentloaded")
            question = page.get_by_label("Question")
            expect(question).to_be_visible(timeout=60_000)
            walk.shot("1-start")

            # An empty question: said beside the input; the panels stay as they were.
            page.get_by_role("button", name="Search", exact=True).click()
            page.wait_for_timeout(2_000)
            walk.no_error_badge("empty search")
            walk.check("empty search: the reason is said beside the question",
                       lambda: expect(page.locator("#question-hint")).to_contain_text("Ask a question", timeout=3_000))
            walk.check("empty search: the panels are left as they were",
                       lambda: expect(page.get_by_text("The dashboard appears here once a run starts")).to_be_visible())
            walk.shot("2-empty-question")

            # The examples: the README's question among them, no label cut mid-word.
            walk.check("examples: the README's question is offered",
                       lambda: expect(page.get_by_text(README_QUESTION, exact=True).first).to_be_visible(timeout=3_000))

            def labels_whole() -> None:
                shown = page.evaluate("""(sel) => [...document.querySelectorAll(sel)]
                    .filter(e => e.offsetParent && !e.querySelector('button, td'))
                    .map(e => e.textContent.trim()).filter(t => t)""", ".gallery-item, .gallery td, .gallery button")
                assert shown, "no examples shown"
                questions = [README_QUESTION, *(json.loads(line)["question"] for line in BUILTIN_QUESTIONS.read_text().splitlines() if line.strip())]
                cut = [label for label in shown if label not in questions and not any(
                    label.endswith("…") and q.startswith(label[:-1].rstrip()) and q[len(label[:-1].rstrip())] == " "
                    for q in questions)]
                assert not cut, cut
            walk.check("examples: labels are whole words", labels_whole)

            ran = walk.check("examples: a click fills the question", lambda: (
                page.get_by_text(README_QUESTION, exact=True).first.click(),
                expect(question).to_have_value(README_QUESTION, timeout=3_000)))
            if not ran:
                question.fill(README_QUESTION)
            page.get_by_role("button", name="Search", exact=True).click()
            walk.check("the run: its answer is shown", lambda: expect(page.locator("#answer a.cite").first).to_be_visible(timeout=120_000))
            expect(page.get_by_role("button", name="Stop")).to_be_disabled(timeout=60_000)  # the run has ended
            walk.no_error_badge("finished run")
            page.wait_for_timeout(1_500)  # Plotly draws the last update a moment after it arrives
            walk.charts_readable("finished run", "#plot-tokens, #plot-tools, #plot-time, #plot-context, #plot-budget")
            walk.shot("3-finished-run")

            # The Jobs tab, opened at once: the run is there without Refresh.
            page.get_by_role("tab", name="Jobs").click()
            walk.check("jobs: the finished run is listed at once", lambda: expect(
                page.locator("#jobs-table").get_by_role("gridcell").filter(has_text=README_QUESTION[:30]).first
            ).to_be_visible(timeout=1_500))
            walk.no_error_badge("jobs")
            walk.shot("4-jobs")

            # Compare on a fresh install: says what a sweep is, how to make one, and offers the example.
            page.get_by_role("tab", name="Compare").click()
            walk.check("compare: says how to make a sweep",
                       lambda: expect(page.get_by_text("searchbox ablate").first).to_be_visible(timeout=3_000))
            walk.check("compare: no blank chart frames before a sweep is loaded",
                       lambda: expect(page.locator("#compare-charts")).to_be_hidden(timeout=1_000))
            walk.shot("5-compare-empty")
            loaded = walk.check("compare: the example sweep loads", lambda: (
                page.get_by_role("button", name="Load the example sweep").click(),
                expect(page.locator("#compare-charts .js-plotly-plot").first).to_be_visible(timeout=30_000)))
            walk.no_error_badge("compare")
            if loaded:
                page.wait_for_timeout(500)
                walk.shot("6-compare-example")

            page.get_by_role("tab", name="Dataroom explorer").click()
            page.get_by_role("button", name="Load dataroom").click()
            walk.check("explorer: the dataroom loads", lambda: expect(page.get_by_text("files read").first).to_be_visible(timeout=60_000))
            page.get_by_role("button", name="Run tool").click()
            walk.check("explorer: a tool runs", lambda: expect(
                page.get_by_role("gridcell", name="s1", exact=True).first).to_be_visible(timeout=120_000))
            walk.no_error_badge("explorer")
            walk.shot("7-explorer")
            browser.close()
        logged = server_tracebacks(home)
        if logged:
            walk.failures.append(f"the app logged tracebacks: {logged}")
    assert not walk.failures, "\n".join(walk.failures)
