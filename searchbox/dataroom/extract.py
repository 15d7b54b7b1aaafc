"""Text extraction from the files of a dataroom (design §2.6): one extractor per format.

An extractor takes a path and returns the file's text as segments (a PDF's pages, a workbook's
sheets, a notebook's cells). Adding a format is one function registered with `@extractor(...)`.
A file that cannot be read never stops extraction: it is reported with status "error" or
"skipped" and the reason.
"""

from __future__ import annotations

import csv
import datetime
import email
import io
import json
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from pathlib import Path

import docx
import openpyxl
import pypdf
from bs4 import BeautifulSoup, CData, NavigableString, PageElement, Tag
from docx.table import Table, _Row

from searchbox.records.tree import walk

try:  # ships with requests (a dependency of huggingface-hub); only needed for non-UTF-8 text
    from charset_normalizer import from_bytes as _detect_charset
except ImportError:
    _detect_charset = None

MAX_FILE_BYTES = 100 * 1024 * 1024
MAX_TEXT_CHARS = 20_000_000
_SNIFF_BYTES = 8192
_REASON_CHARS = 300
# C0 control bytes other than tab, newlines, form feed, backspace and escape (ANSI colours in logs).
_CONTROL_BYTES = bytes(b for b in range(32) if b not in b"\t\n\r\x0c\x08\x1b")
_MAX_CONTROL_SHARE = 0.02

# Elements whose text ends a line in HTML; everything else flows inline.
_HTML_BLOCKS = (
    "title p div br li tr h1 h2 h3 h4 h5 h6 section article header footer nav aside main "
    "pre blockquote table ul ol dl dt dd figure figcaption hr form fieldset address"
).split()
_HTML_CELLS = ("td", "th")
_HTML_DROP = ("script", "style", "noscript", "template")


@dataclass
class Segment:
    label: str | None
    text: str


@dataclass
class ExtractedFile:
    path: str  # posix, relative to the dataroom root
    status: str  # "ok" | "skipped" | "error"
    reason: str = ""
    segments: list[Segment] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.segments)

    @property
    def shown_text(self) -> str:
        """The text as `read` shows it, each page or sheet under its label: labels let the model say
        where a fact is, and a cited range of lines is a range of this text."""
        return "\n\n".join(f"[{s.label}]\n{s.text}" if s.label else s.text for s in self.segments)


class SkipFile(Exception):
    """Raised by an extractor for a file it should not index (e.g. binary data under .txt)."""


class ExtractionError(Exception):
    """Raised by an extractor with a reason a person understands (e.g. an encrypted PDF)."""


Extractor = Callable[[Path], list[Segment]]
EXTRACTORS: dict[str, Extractor] = {}


def extractor(*suffixes: str) -> Callable[[Extractor], Extractor]:
    """Register a function as the extractor of the given lower-case suffixes ("" = no suffix)."""

    def register(fn: Extractor) -> Extractor:
        for suffix in suffixes:
            EXTRACTORS[suffix] = fn
        return fn

    return register


def extract_dataroom(root: Path, extract: Callable[[Path, str], ExtractedFile] | None = None) -> list[ExtractedFile]:
    """Every file under `root`, sorted by path; never raises for a bad file. `extract` stands in for
    `extract_file` (the on-disk cache of extract_cache)."""
    root = Path(root)
    # Never below MAX_DEPTH: the unpacker refuses deeper paths, a dataroom it installed before it did may have them.
    paths = sorted((folder / n).relative_to(root).as_posix()
                   for folder, _, names in walk(root) for n in names if (folder / n).is_file())
    return [(extract or extract_file)(root, p) for p in paths]


def extract_file(root: Path, relpath: str) -> ExtractedFile:
    path = Path(root) / relpath
    suffix = path.suffix.lower()
    fn = EXTRACTORS.get(suffix)
    if fn is None:
        return ExtractedFile(relpath, "skipped", f"unsupported file type {suffix}")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return ExtractedFile(
                relpath, "skipped", f"file is {size / 2**20:.0f} MB, over the {MAX_FILE_BYTES // 2**20} MB limit"
            )
        segments = fn(path)
    except SkipFile as exc:
        return ExtractedFile(relpath, "skipped", str(exc))
    except ExtractionError as exc:
        return ExtractedFile(relpath, "error", str(exc))
    except Exception as exc:  # any parser failure on a bad file is reported, never raised
        detail = str(exc) or type(exc).__name__
        return ExtractedFile(relpath, "error", f"could not read the file: {detail}"[:_REASON_CHARS])
    segments, truncated = _cap(Segment(s.label, s.text.rstrip()) for s in segments if s.text.strip())
    reason = f"text truncated to the first {MAX_TEXT_CHARS:,} characters" if truncated else ""
    if not segments:
        reason = "no text found in the file"
    return ExtractedFile(relpath, "ok", reason, segments)


def _cap(segments: Iterable[Segment]) -> tuple[list[Segment], bool]:
    kept: list[Segment] = []
    room = MAX_TEXT_CHARS
    for s in segments:
        if len(s.text) > room:
            if room > 0:
                kept.append(Segment(s.label, s.text[:room]))
            return kept, True
        kept.append(s)
        room -= len(s.text) + 2  # the "\n\n" that joins segments
    return kept, False


# --- plain text, code, configuration -------------------------------------------------------------

_TEXT_SUFFIXES = (
    ".md .markdown .txt .text .rst .adoc .org .tex .bib .log .py .pyi .js .mjs .cjs .jsx .ts .tsx "
    ".java .kt .kts .scala .go .rs .c .h .cpp .cc .cxx .hpp .hh .cs .rb .php .swift .m .r .jl .lua "
    ".pl .dart .ex .exs .erl .hs .clj .sh .bash .zsh .fish .ps1 .bat .cmd .yaml .yml .toml .ini .cfg "
    ".conf .properties .env .xml .svg .sql .css .scss .less .graphql .proto .tf .gradle .cmake .mk "
    ".dockerfile .jsonl .ndjson .srt .vtt"
).split()


@extractor("", *_TEXT_SUFFIXES)
def extract_text(path: Path) -> list[Segment]:
    return [Segment(None, _decode(path.read_bytes()))]


def _decode(data: bytes) -> str:
    """Bytes of a text file as str; refuse binary content hiding behind a text suffix."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16")
    elif _looks_binary(data[:_SNIFF_BYTES]):
        raise SkipFile("binary content in a text file")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            best = _detect_charset(data).best() if _detect_charset else None
            text = str(best) if best is not None else data.decode("latin-1")
    return text.replace("\r\n", "\n")


def _looks_binary(sample: bytes) -> bool:
    """NULs, or more control bytes than any text has: every byte decodes as latin-1, so without
    this check random data under .txt would be indexed as gibberish."""
    if b"\x00" in sample:
        return True
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return controls > _MAX_CONTROL_SHARE * len(sample)


# --- structured text -----------------------------------------------------------------------------


@extractor(".json", ".geojson")
def extract_json(path: Path) -> list[Segment]:
    text = _decode(path.read_bytes())
    try:
        return [Segment(None, json.dumps(json.loads(text), indent=2, ensure_ascii=False))]
    except json.JSONDecodeError:  # not valid JSON, but still text worth searching
        return [Segment(None, text)]


@extractor(".csv", ".tsv")
def extract_table(path: Path) -> list[Segment]:
    text = _decode(path.read_bytes())
    if path.suffix.lower() == ".tsv":
        dialect: type[csv.Dialect] | csv.Dialect = csv.excel_tab
    else:
        try:  # semicolon CSVs are common outside the English-speaking world
            dialect = csv.Sniffer().sniff(text[:65536], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    try:
        rows = csv.reader(io.StringIO(text), dialect)
        return [Segment(None, "\n".join(" | ".join(row) for row in rows if any(row)))]
    except csv.Error:  # e.g. a cell beyond csv's field size limit: the raw text still reads well
        return [Segment(None, text)]


# --- web and mail --------------------------------------------------------------------------------


@extractor(".html", ".htm", ".xhtml")
def extract_html(path: Path) -> list[Segment]:
    return [Segment(None, html_to_text(path.read_bytes()))]


def html_to_text(markup: bytes | str) -> str:
    """Readable text of an HTML document: one line per block, scripts and styles dropped."""
    soup = BeautifulSoup(markup, "lxml")
    lines = (" ".join(line.split()) for line in "".join(_html_pieces(soup)).splitlines())
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):  # at most one blank line in a row
            out.append(line)
    return "\n".join(out).strip()


def _html_pieces(soup: BeautifulSoup) -> Iterator[str]:
    """The document's text in order, a newline after each block and " | " between cells.

    An explicit stack, never recursion or tree edits: a file of 100,000 nested elements must
    read in linear time without hitting the recursion limit.
    """
    stack: list[PageElement | str] = [soup]
    while stack:
        node = stack.pop()
        if isinstance(node, str) and not isinstance(node, PageElement):  # a separator pushed below
            yield node
        elif isinstance(node, Tag):
            if node.name in _HTML_DROP:
                continue
            if node.name in _HTML_BLOCKS:
                stack.append("\n")
            stack.extend(reversed(_with_cell_separators(node.contents)))
        elif type(node) in (NavigableString, CData):  # not comments, doctypes, declarations
            yield str(node)


def _with_cell_separators(children: list[PageElement]) -> list[PageElement | str]:
    out: list[PageElement | str] = []
    seen_cell = False
    for child in children:
        if isinstance(child, Tag) and child.name in _HTML_CELLS:
            if seen_cell:
                out.append(" | ")
            seen_cell = True
        out.append(child)
    return out


_MAIL_HEADERS = ("From", "To", "Cc", "Date", "Subject")


@extractor(".eml")
def extract_email(path: Path) -> list[Segment]:
    with path.open("rb") as f:
        msg: EmailMessage = email.message_from_binary_file(f, policy=policy.default)
    lines = [f"{h}: {msg[h]}" for h in _MAIL_HEADERS if msg[h] is not None]
    body = msg.get_body(preferencelist=("plain", "html"))
    if body is not None:
        content = _part_text(body).strip()
        lines += ["", html_to_text(content) if body.get_content_subtype() == "html" else content]
    attachments = [a.get_filename() or "(unnamed)" for a in msg.iter_attachments()]
    if attachments:
        lines += ["", "Attachments: " + ", ".join(attachments)]
    return [Segment(None, "\n".join(lines))]


def _part_text(part: EmailMessage) -> str:
    try:
        return part.get_content()
    except (LookupError, UnicodeError):  # an unknown or wrong charset label
        return (part.get_payload(decode=True) or b"").decode("latin-1")


# --- office documents ----------------------------------------------------------------------------


@extractor(".pdf")
def extract_pdf(path: Path) -> list[Segment]:
    reader = pypdf.PdfReader(path)
    if reader.is_encrypted and not reader.decrypt(""):  # an empty user password opens many PDFs
        raise ExtractionError("encrypted PDF: it needs a password to be read")
    return [Segment(f"page {n}", page.extract_text() or "") for n, page in enumerate(reader.pages, 1)]


@extractor(".docx")
def extract_docx(path: Path) -> list[Segment]:
    _check_inflated_size(path)
    document = docx.Document(str(path))
    blocks: list[str] = []
    for block in document.iter_inner_content():  # paragraphs and tables in document order
        if isinstance(block, Table):
            blocks.extend(_docx_row(row) for row in block.rows)
        else:
            blocks.append(block.text)
    return [Segment(None, "\n".join(b for b in blocks if b.strip()))]


def _check_inflated_size(path: Path) -> None:
    """A DOCX or XLSX is a zip its parser inflates into memory: refuse one that would expand past
    the file size limit (a zip bomb dressed as a document). zipfile never inflates a member past
    its declared size, so the declared sizes are a true bound."""
    with zipfile.ZipFile(path) as zf:
        inflated = sum(info.file_size for info in zf.infolist())
    if inflated > MAX_FILE_BYTES:
        raise SkipFile(
            f"the document expands to {inflated / 2**20:.0f} MB when opened, "
            f"over the {MAX_FILE_BYTES // 2**20} MB limit"
        )


def _docx_row(row: _Row) -> str:
    cells: list[str] = []
    seen: set[int] = set()
    for cell in row.cells:  # a merged cell is returned once per grid column it spans
        if id(cell._tc) not in seen:
            seen.add(id(cell._tc))
            cells.append(cell.text.strip())
    return " | ".join(cells)


@extractor(".xlsx", ".xlsm")
def extract_xlsx(path: Path) -> list[Segment]:
    _check_inflated_size(path)
    workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        segments = []
        for sheet in workbook.worksheets:
            sheet.reset_dimensions()  # some writers store wrong dimensions; read every row
            rows = (_xlsx_row(r) for r in sheet.iter_rows(values_only=True))
            segments.append(Segment(f"sheet {sheet.title}", "\n".join(r for r in rows if r)))
        return segments
    finally:
        workbook.close()  # read-only mode keeps the file open until closed


def _xlsx_row(values: tuple) -> str:
    cells = [_xlsx_cell(v) for v in values]
    while cells and not cells[-1]:
        cells.pop()
    return " | ".join(cells)


def _xlsx_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


# --- notebooks -----------------------------------------------------------------------------------


@extractor(".ipynb")
def extract_notebook(path: Path) -> list[Segment]:
    notebook = json.loads(_decode(path.read_bytes()))
    segments = []
    for n, cell in enumerate(notebook.get("cells", []), 1):
        parts = [_joined(cell.get("source", ""))]
        for output in cell.get("outputs", []):
            if "text" in output:
                parts.append(_joined(output["text"]))
            elif "text/plain" in output.get("data", {}):
                parts.append(_joined(output["data"]["text/plain"]))
            elif output.get("output_type") == "error":
                parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
        segments.append(Segment(f"cell {n}", "\n".join(p.rstrip() for p in parts if p.strip())))
    return segments


def _joined(source: str | list[str]) -> str:
    # nbformat stores multi-line strings either whole or as a list of lines.
    return source if isinstance(source, str) else "".join(source)
