"""Renderers that turn the plain-text sources of the dataroom into binary documents.

Every renderer returns ``bytes`` and is deterministic: the same source gives the same bytes on the
same library versions. PDF uses reportlab with ``invariant=1``; DOCX and XLSX are re-zipped with a
fixed timestamp and their core properties are pinned to :data:`FIXED_DT`.

Source markup for ``*.pdf.md`` / ``*.docx.md`` files (a small Markdown subset):

``%key: value``     metadata lines at the very top (title, author, subject, footer, pagesize)
``# / ## / ###``    headings
``- item``          bullet
``| a | b |``       table row (first row is the header; ``|---|`` separator lines are skipped)
``<<<pagebreak>>>`` page break
``**bold**``        bold inline text
blank line          paragraph break; consecutive lines are joined into one paragraph
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from email.message import EmailMessage

from pathlib import Path

FIXED_DT = _dt.datetime(2026, 1, 1, 0, 0, 0)
ZIP_DATE = (2026, 1, 1, 0, 0, 0)


# --------------------------------------------------------------------------------------------
# Parsing the markup
# --------------------------------------------------------------------------------------------


@dataclass
class Block:
    kind: str  # "h1" | "h2" | "h3" | "p" | "bullet" | "table" | "pagebreak"
    text: str = ""
    rows: list[list[str]] = field(default_factory=list)


@dataclass
class MarkDoc:
    meta: dict[str, str]
    blocks: list[Block]


def parse_markup(source: str) -> MarkDoc:
    meta: dict[str, str] = {}
    lines = source.splitlines()
    while lines and lines[0].startswith("%"):
        key, _, value = lines.pop(0)[1:].partition(":")
        meta[key.strip()] = value.strip()
    blocks: list[Block] = []
    para: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if para:
            blocks.append(Block("p", " ".join(s.strip() for s in para)))
            para.clear()
        if table:
            blocks.append(Block("table", rows=[r[:] for r in table]))
            table.clear()

    for raw in lines:
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            flush()
        elif stripped == "<<<pagebreak>>>":
            flush()
            blocks.append(Block("pagebreak"))
        elif stripped.startswith("|"):
            if para:
                flush()
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if all(re.fullmatch(r":?-{2,}:?", c) for c in cells):
                continue
            table.append(cells)
        elif m := re.match(r"^(#{1,3}) (.*)$", stripped):
            flush()
            blocks.append(Block(f"h{len(m.group(1))}", m.group(2)))
        elif stripped.startswith("- "):
            flush()
            blocks.append(Block("bullet", stripped[2:]))
        elif para == [] and blocks and blocks[-1].kind == "bullet" and raw.startswith("  "):
            blocks[-1].text += " " + stripped  # continuation line of a bullet
        else:
            if table:
                flush()
            para.append(stripped)
    flush()
    return MarkDoc(meta, blocks)


def _bold_runs(text: str) -> list[tuple[str, bool]]:
    parts = re.split(r"(\*\*.+?\*\*)", text)
    return [(p[2:-2], True) if p.startswith("**") else (p, False) for p in parts if p]


# --------------------------------------------------------------------------------------------
# PDF (reportlab)
# --------------------------------------------------------------------------------------------


def render_pdf(source: str) -> bytes:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4, landscape
    from reportlab.lib.styles import getSampleStyleSheet, ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import (ListFlowable, ListItem, PageBreak, Paragraph,
                                    SimpleDocTemplate, Spacer, Table, TableStyle)
    from xml.sax.saxutils import escape

    doc = parse_markup(source)
    meta = doc.meta
    pagesize = landscape(A4) if meta.get("pagesize") == "landscape" else A4
    styles = getSampleStyleSheet()
    body = ParagraphStyle("body", parent=styles["BodyText"], fontName="Helvetica", fontSize=9.5,
                          leading=13, spaceAfter=5)
    cell = ParagraphStyle("cell", parent=body, fontSize=8.5, leading=10.5, spaceAfter=0)
    head = {"h1": ParagraphStyle("h1", parent=styles["Heading1"], fontSize=16, leading=20),
            "h2": ParagraphStyle("h2", parent=styles["Heading2"], fontSize=12.5, leading=16),
            "h3": ParagraphStyle("h3", parent=styles["Heading3"], fontSize=10.5, leading=13)}

    def inline(text: str) -> str:
        return "".join(f"<b>{escape(t)}</b>" if b else escape(t) for t, b in _bold_runs(text))

    story = []
    bullets: list = []

    def flush_bullets() -> None:
        if bullets:
            story.append(ListFlowable([ListItem(b, leftIndent=12) for b in bullets],
                                      bulletType="bullet", start="\u2022", leftIndent=12))
            bullets.clear()

    for block in doc.blocks:
        if block.kind != "bullet":
            flush_bullets()
        if block.kind in head:
            story.append(Paragraph(inline(block.text), head[block.kind]))
        elif block.kind == "p":
            story.append(Paragraph(inline(block.text), body))
        elif block.kind == "bullet":
            bullets.append(Paragraph(inline(block.text), body))
        elif block.kind == "pagebreak":
            story.append(PageBreak())
        elif block.kind == "table":
            ncols = max(len(r) for r in block.rows)
            rows = [[Paragraph(inline(c), cell) for c in r + [""] * (ncols - len(r))]
                    for r in block.rows]
            width = pagesize[0] - 40 * mm
            # The first column holds labels: give it twice the share of the others.
            unit = width / (ncols + 1) if ncols > 2 else width / ncols
            widths = [unit * 2] + [unit] * (ncols - 1) if ncols > 2 else [unit] * ncols
            table = Table(rows, colWidths=widths, repeatRows=1)
            table.setStyle(TableStyle([
                ("GRID", (0, 0), (-1, -1), 0.4, colors.grey),
                ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#dde4ee")),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]))
            story.append(table)
            story.append(Spacer(1, 4 * mm))
    flush_bullets()

    footer = meta.get("footer", "")

    def on_page(canvas, _doc) -> None:
        canvas.saveState()
        canvas.setFont("Helvetica", 7.5)
        canvas.setFillColor(colors.grey)
        canvas.drawString(20 * mm, 10 * mm, footer)
        canvas.drawRightString(pagesize[0] - 20 * mm, 10 * mm, f"Page {canvas.getPageNumber()}")
        canvas.restoreState()

    buf = io.BytesIO()
    SimpleDocTemplate(
        buf, pagesize=pagesize, invariant=1,
        leftMargin=20 * mm, rightMargin=20 * mm, topMargin=18 * mm, bottomMargin=18 * mm,
        title=meta.get("title", ""), author=meta.get("author", ""),
        subject=meta.get("subject", ""), creator="Quillmoor document export",
        producer="Quillmoor document export",
    ).build(story, onFirstPage=on_page, onLaterPages=on_page)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# OOXML helpers (DOCX / XLSX are zip files with timestamps inside)
# --------------------------------------------------------------------------------------------

_CORE_DATES = re.compile(rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:\2>)")


def normalize_ooxml(data: bytes) -> bytes:
    """Re-zip an OOXML package with fixed entry timestamps and pinned core-property dates."""
    stamp = FIXED_DT.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            blob = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                blob = _CORE_DATES.sub(lambda m: m.group(1) + stamp + m.group(3), blob)
            dst.writestr(_zipinfo(info.filename), blob)
    return out.getvalue()


def _zipinfo(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    info.external_attr = 0o100644 << 16
    return info


# --------------------------------------------------------------------------------------------
# DOCX (python-docx)
# --------------------------------------------------------------------------------------------


def render_docx(source: str) -> bytes:
    import docx
    from docx.enum.text import WD_BREAK
    from docx.shared import Pt

    doc = parse_markup(source)
    meta = doc.meta
    d = docx.Document()
    d.styles["Normal"].font.name = "Calibri"
    d.styles["Normal"].font.size = Pt(10.5)
    core = d.core_properties
    core.title = meta.get("title", "")
    core.author = meta.get("author", "")
    core.subject = meta.get("subject", "")
    core.comments = ""
    core.last_modified_by = meta.get("author", "")
    core.created = core.modified = core.last_printed = FIXED_DT
    core.revision = int(meta.get("revision", "1"))

    def add_runs(par, text: str) -> None:
        for t, bold in _bold_runs(text):
            par.add_run(t).bold = bold

    for block in doc.blocks:
        if block.kind in ("h1", "h2", "h3"):
            d.add_heading(block.text, level=int(block.kind[1]))
        elif block.kind == "p":
            add_runs(d.add_paragraph(), block.text)
        elif block.kind == "bullet":
            add_runs(d.add_paragraph(style="List Bullet"), block.text)
        elif block.kind == "pagebreak":
            d.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
        elif block.kind == "table":
            ncols = max(len(r) for r in block.rows)
            table = d.add_table(rows=len(block.rows), cols=ncols)
            table.style = "Table Grid"
            for i, row in enumerate(block.rows):
                for j, value in enumerate(row):
                    par = table.cell(i, j).paragraphs[0]
                    add_runs(par, f"**{value}**" if i == 0 and value else value)
            d.add_paragraph()
    buf = io.BytesIO()
    d.save(buf)
    return normalize_ooxml(buf.getvalue())


# --------------------------------------------------------------------------------------------
# XLSX (openpyxl)
# --------------------------------------------------------------------------------------------


@dataclass
class Sheet:
    """One worksheet. ``rows`` hold str / int / float / None values.

    Numbers are written as numbers with ``number_format``; strings are written as text. Figures that
    the question set relies on are kept as display strings (see workbooks.py), because text
    extraction reads the raw cell value (``29880``), not the formatted one (``29,880``).
    """

    name: str
    rows: list[list]
    widths: list[int] = field(default_factory=list)
    number_format: str = "#,##0;(#,##0)"
    bold_rows: tuple[int, ...] = (0,)
    freeze: str | None = "A2"


def render_xlsx(sheets: list[Sheet], title: str = "", author: str = "") -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    wb = Workbook()
    wb.remove(wb.active)
    wb.properties.title = title
    wb.properties.creator = author
    wb.properties.lastModifiedBy = author
    wb.properties.created = FIXED_DT
    for spec in sheets:
        ws = wb.create_sheet(spec.name)
        for row in spec.rows:
            ws.append(row)
        for r in spec.bold_rows:
            for c in ws[r + 1]:
                c.font = Font(bold=True)
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, (int, float)):
                    c.number_format = spec.number_format
        for i, w in enumerate(spec.widths, start=1):
            ws.column_dimensions[get_column_letter(i)].width = w
        if spec.freeze:
            ws.freeze_panes = spec.freeze
    buf = io.BytesIO()
    wb.save(buf)
    return normalize_ooxml(buf.getvalue())


# --------------------------------------------------------------------------------------------
# E-mail (.eml, RFC 822 via the email package)
# --------------------------------------------------------------------------------------------

_EML_HEADERS = ("From", "To", "Cc", "Date", "Subject", "Message-ID", "In-Reply-To", "References")


def render_eml(source: str, name: str, attachments: dict[str, bytes]) -> bytes:
    """Source: header lines (``Key: value``), a blank line, then the plain-text body.

    ``Attach: <file name>`` header lines name attachments whose bytes are passed in ``attachments``.
    """
    head, _, body = source.partition("\n\n")
    msg = EmailMessage()
    attach_names: list[str] = []
    for line in head.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "Attach":
            attach_names.append(value)
        elif key in _EML_HEADERS:
            msg[key] = value
        else:
            raise ValueError(f"{name}: unknown header {key!r}")
    stem = name.split(".")[0]
    if "Message-ID" not in msg:
        msg["Message-ID"] = f"<{stem}@mail.quillmoor.example>"
    msg["MIME-Version"] = "1.0"
    text = body.rstrip() + "\n"
    # Plain 7bit/8bit bodies (no quoted-printable soft breaks), as most mail clients send them.
    msg.set_content(text, cte="7bit" if text.isascii() else "8bit")
    for att in attach_names:
        blob = attachments[att]
        maintype, subtype = _mime_of(att)
        msg.add_attachment(blob, maintype=maintype, subtype=subtype, filename=att)
    if msg.is_multipart():
        msg.set_boundary(f"==quillmoor-{stem}==")
    return msg.as_bytes()


def _mime_of(name: str) -> tuple[str, str]:
    ext = name.rsplit(".", 1)[-1].lower()
    return {"csv": ("text", "csv"), "pdf": ("application", "pdf"),
            "xlsx": ("application", "vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            "txt": ("text", "plain")}.get(ext, ("application", "octet-stream"))


# --------------------------------------------------------------------------------------------
# Jupyter notebook
# --------------------------------------------------------------------------------------------


def render_ipynb(cells: list[dict]) -> bytes:
    """Cells: ``{"type": "markdown"|"code", "source": str, "outputs": [str, ...]}``."""
    nb_cells = []
    for i, c in enumerate(cells, start=1):
        src = c["source"].strip("\n").splitlines(keepends=True)
        if c["type"] == "markdown":
            nb_cells.append({"cell_type": "markdown", "id": f"cell-{i:02d}", "metadata": {},
                             "source": src})
        else:
            outputs = [{"name": "stdout", "output_type": "stream",
                        "text": o.strip("\n").splitlines(keepends=True)} for o in c.get("outputs", [])]
            nb_cells.append({"cell_type": "code", "execution_count": i, "id": f"cell-{i:02d}",
                             "metadata": {}, "outputs": outputs, "source": src})
    nb = {"cells": nb_cells,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                      "name": "python3"},
                       "language_info": {"name": "python", "version": "3.11.7"}},
          "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode()


# --------------------------------------------------------------------------------------------
# The dataroom archive
# --------------------------------------------------------------------------------------------


def write_zip(path: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (archive name -> bytes) sorted, with fixed timestamps and permissions."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted(files):
            info = _zipinfo(name)
            zf.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    path.write_bytes(buf.getvalue())
