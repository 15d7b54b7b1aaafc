"""Text the model or a document controls, made inert wherever it is shown (design §5): one rule per kind
of place, all of them here, so that every view applies the same one.

A hostile document can talk the model into writing anything, into an answer, a tool's arguments or a
file name; a dataroom's own file names and texts are anybody's. Nothing of it may act: no tag, no
image or other element that loads from outside the app (a visitor's browser would send whatever its
URL holds: the dataroom, to the document's author), no script link, no terminal control code.

- Markdown (gr.Markdown; gr.Chatbot content and titles): `markdown` for text the model or a document
  wrote, `literal` for a value shown as written inside the app's own Markdown, `code` for one shown
  as code. HTML is escaped: Gradio's sanitizer (sanitize_html, kept on) removes scripts and event
  attributes but keeps <img>, <video>, <link> and <style>, so it is no defence against loading.
  Images become their alt text and a link, which goes nowhere until clicked; javascript:, vbscript:
  and data: links go nowhere at all; no ```mermaid block can form (Gradio renders its labels as HTML).
- HTML the app builds (gr.HTML, and gr.Error, whose message Gradio's toast renders as HTML): `html`.
- Plotly text (axis categories, trace names, hover and bar text): `plotly`. Plotly reads <a href>
  and <span style="..."> in them (a style can load a url()); its entities show as the characters.
- gr.Dataframe cells: values as they are, in columns whose datatype is one of TEXT_CELL_TYPES: Gradio
  6 sets those as text (never "markdown", "html" or "image", which it renders).
- gr.Chatbot's metadata "log" and gr.Dropdown choices: values as they are (Gradio 6 sets them as text).
- A terminal (what the CLI prints) and the model's view of bash output: `terminal`.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable
from typing import Any

TEXT_CELL_TYPES = frozenset({"str", "number", "bool", "date"})

# Fenced blocks (closed or running to the end) and one-line code spans. They become escaped
# <pre>/<code> HTML: shown as written, never linked; and since every segment is escaped, safety does
# not depend on this split agreeing with the Markdown renderer's. (A <pre> block's text is not read
# as Markdown; text after an inline <code> is: its Markdown punctuation is escaped too.)
_CODE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<block>.*?)(?:^ {0,3}(?P=fence)[`~]*[ \t]*$|\Z)"
                   r"|(?<![\\`])(?P<ticks>`+)(?P<span>[^`\n]|[^`\n][^\n]*?[^`\n])(?P=ticks)(?!`)", re.M | re.S)
# A link's destination, inline or in a reference definition (at a line's start, inside quotes or lists).
_BAD_LINK = re.compile(r"(\]\(\s*|^[ \t>*+\-\d.)]*\[[^\]\n]*\]:\s*)(?:javascript|vbscript|data):", re.I | re.M)
# ![alt](url "title") in escaped text (quote=False keeps the title's quotes).
_IMAGE = re.compile(r"""!\[(?P<alt>[^\]\n]*)\]\(\s*(?P<url>[^\s()]*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)""")
# A fence the code split left in the prose: one inside a quote or a list, where Gradio's renderer
# still opens a block (a ```mermaid one is drawn with its labels as HTML).
_FENCE_RUN = re.compile(r"`{3,}")
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>])")

# ECMA-48 control sequences: CSI (ESC [ or C1 CSI) with its parameters and final byte; the string
# controls OSC, DCS, SOS, PM and APC up to their terminator (BEL or ST); any other ESC sequence. An
# unterminated string control loses only its introducer: its text stays, as text. Then single
# controls: C0 but tab and newline (a lone CR rewrites the line a terminal shows), DEL, C1, and the
# bidi embeddings, overrides and isolates that make a terminal show text in another order.
_TERMINAL_CONTROL = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def markdown(text: str) -> str:
    """Untrusted Markdown, inert: HTML escaped, code shown as written, images as links."""
    return split_code(text, prose)


def split_code(text: str, prose_of: Callable[[str], str],
               seen_code: Callable[[str], None] = lambda code: None) -> str:
    """Markdown with its code as escaped HTML and the rest through `prose_of` (which must make it inert:
    `prose`, or a function built on it); `seen_code` is told each piece of code as written."""
    out, last = [], 0
    for found in _CODE.finditer(text):
        out.append(prose_of(text[last:found.start()]))
        seen_code(found.group(0))
        if found.group("fence"):
            out.append(f"<pre><code>{html_lib.escape(found.group('block').removesuffix(chr(10)), quote=False)}</code></pre>")
        else:
            out.append(f"<code>{_as_written(found.group('span'))}</code>")
        last = found.end()
    out.append(prose_of(text[last:]))
    return "".join(out)


def prose(text: str) -> str:
    """Markdown outside code, inert; its Markdown formatting and links stay."""
    text = _BAD_LINK.sub(r"\1#blocked:", html_lib.escape(text, quote=False))
    text = _IMAGE.sub(_image_as_link, text)
    text = _FENCE_RUN.sub(lambda run: "&#96;" * len(run.group()), text)
    # Any image syntax the pattern missed (reference-style ![x][r], nested brackets): "[" as an
    # entity is text to Markdown, so no image can start there.
    return text.replace("![", "!&#91;")


def literal(value: Any) -> str:
    """A value (a file name, an entry's name, an error) shown as written inside the app's Markdown: on
    one line, nothing in it formatting, linking or tagging."""
    return _as_written(" ".join(str(value).split()))


def code(value: Any) -> str:
    """A value shown as inline code inside the app's Markdown (a backtick in it cannot end the span)."""
    return f"<code>{literal(value)}</code>"


def html(value: Any) -> str:
    """A value as text, or as a double-quoted attribute's value, in HTML the app builds."""
    return html_lib.escape(str(value), quote=False).replace('"', "&quot;")


def plotly(value: Any) -> str:
    """A value as Plotly text: its tags escaped, shown as written."""
    return html_lib.escape(str(value), quote=False)


def terminal(text: str) -> str:
    """Text without terminal control codes: what is left is what a terminal shows, and all of it."""
    return _TERMINAL_CONTROL.sub("", text)


def _as_written(text: str) -> str:
    # A colon as an entity: "http://..." is no autolink then (GFM links a URL even with its dots escaped).
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", html_lib.escape(text, quote=False)).replace(":", "&#58;")


def _image_as_link(image: re.Match[str]) -> str:
    url = image.group("url")
    shown = _MARKDOWN_PUNCTUATION.sub(r"\\\1", url)
    return f"{image.group('alt') or 'image'} (image not loaded: [{shown}]({url}))"
