"""Real files for the dataroom tests: zips (good and hostile) and documents of every format."""

from __future__ import annotations

import json
import os
import zipfile
from email.message import EmailMessage
from pathlib import Path

import docx
import openpyxl
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas


def make_zip(path: Path, members: dict[str, bytes | str], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def make_deep_zip(path: Path, components: int, text: str = "deep text") -> Path:
    """A zip as a zip tool makes one of a chain of folders: an entry per folder d/, d/d/, ... and deep.txt at the
    bottom, `components` path components in all; readme.md at the top, so no wrapper folder is stripped."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.md", "# Data room\n")
        for level in range(1, components):
            zf.writestr("d/" * level, "")
        zf.writestr("d/" * (components - 1) + "deep.txt", text)
    return path


def snapshot(folder: Path) -> dict[str, int]:
    """Every path under `folder` with its size, to prove nothing else was written there."""
    return {
        os.path.relpath(os.path.join(d, n), folder): os.path.getsize(os.path.join(d, n))
        for d, dirs, files in os.walk(folder)
        for n in files + dirs
    }


def make_pdf(path: Path, pages: list[str]) -> Path:
    pdf = canvas.Canvas(str(path), pagesize=A4)
    for text in pages:
        pdf.drawString(72, 750, text)
        pdf.showPage()
    pdf.save()
    return path


def make_docx(path: Path, paragraphs: list[str], table: list[list[str]]) -> Path:
    document = docx.Document()
    for p in paragraphs[:1]:
        document.add_paragraph(p)
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    for r, row in enumerate(table):
        for c, value in enumerate(row):
            grid.cell(r, c).text = value
    for p in paragraphs[1:]:
        document.add_paragraph(p)
    document.save(str(path))
    return path


def make_xlsx(path: Path, sheets: dict[str, list[list[object]]]) -> Path:
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    workbook.save(path)
    return path


def make_eml(path: Path, body: str, html: str | None = None, attachment: str | None = None) -> Path:
    msg = EmailMessage()
    msg["From"] = "Alice Example <alice@example.com>"
    msg["To"] = "bob@example.com"
    msg["Cc"] = "carol@example.com"
    msg["Subject"] = "Quarterly numbers"
    msg["Date"] = "Tue, 04 Mar 2025 10:00:00 +0000"
    if body:
        msg.set_content(body)
    if html is not None:
        if body:
            msg.add_alternative(html, subtype="html")
        else:
            msg.set_content(html, subtype="html")
    if attachment:
        msg.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename=attachment)
    path.write_bytes(msg.as_bytes())
    return path


def make_notebook(path: Path) -> Path:
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Churn analysis\n", "Monthly churn by cohort."]},
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 1,
                "source": "print(churn.mean())",
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["0.042\n"]},
                    {"output_type": "execute_result", "execution_count": 1, "metadata": {},
                     "data": {"text/plain": ["cohort_size 1200"], "image/png": "iVBORw0KGgo="}},
                ],
            },
        ],
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path
