"""Build the built-in dataroom (``dataroom.zip``) and its question set (``questions.jsonl``).

Usage::

    python assets/dataroom_source/build.py [OUT_DIR]      # OUT_DIR defaults to assets/

The dataroom is the Project Heron data room of a fictional company, Quillmoor Hydrometrics, Inc.
Every document is original text written for this project.

Sources:

- ``content/<folder>/<file>``: plain sources. Markdown, text, CSV, HTML and JSON are copied as-is.
  ``*.pdf.md`` and ``*.docx.md`` are rendered to PDF / DOCX from a small Markdown subset, and
  ``*.eml.txt`` to RFC 822 e-mail (see render.py). ``content/_attachments/`` holds e-mail attachments.
- ``workbooks.py``: spreadsheets (XLSX) as data.
- ``notebooks.py``: Jupyter notebooks as data.
- ``questions.py``: the question set.

The output is byte-reproducible: entries are sorted, timestamps and permissions are fixed, PDFs are
rendered with reportlab's ``invariant=1``, and DOCX/XLSX packages are re-zipped with pinned dates.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import render  # noqa: E402
from notebooks import NOTEBOOKS  # noqa: E402
from questions import QUESTIONS, QUESTION_TYPES  # noqa: E402
from workbooks import WORKBOOKS  # noqa: E402

CONTENT = HERE / "content"
ATTACHMENTS = CONTENT / "_attachments"
WRAPPER = "quillmoor-dataroom"
DEFAULT_OUT = HERE.parent


# --------------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------------


def _attachments() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(ATTACHMENTS.iterdir()) if p.is_file()}


def render_source(path: Path, attachments: dict[str, bytes]) -> tuple[str, bytes]:
    """Return (archive path relative to the dataroom root, bytes) for one content file."""
    rel = path.relative_to(CONTENT).as_posix()
    text = path.read_text(encoding="utf-8") if path.suffix in (".md", ".txt") else None
    if rel.endswith(".pdf.md"):
        return rel[: -len(".md")], render.render_pdf(text)
    if rel.endswith(".docx.md"):
        return rel[: -len(".md")], render.render_docx(text)
    if rel.endswith(".eml.txt"):
        return rel[: -len(".txt")], render.render_eml(text, path.name, attachments)
    return rel, path.read_bytes()


def content_documents() -> dict[str, bytes]:
    attachments = _attachments()
    docs: dict[str, bytes] = {}
    for path in sorted(CONTENT.rglob("*")):
        if path.is_file() and ATTACHMENTS not in path.parents:
            rel, blob = render_source(path, attachments)
            docs[rel] = blob
    return docs


def workbook_documents() -> dict[str, bytes]:
    return {rel: render.render_xlsx(make(), title=title, author=author)
            for rel, (title, author, make) in sorted(WORKBOOKS.items())}


def notebook_documents() -> dict[str, bytes]:
    return {rel: render.render_ipynb(cells) for rel, cells in sorted(NOTEBOOKS.items())}


FORMAT_NAMES = {"pdf": "PDF", "docx": "Word", "xlsx": "Excel", "csv": "CSV", "html": "Web page",
                "eml": "E-mail", "md": "Markdown", "txt": "Text", "json": "JSON",
                "ipynb": "Notebook"}


def index_document(paths: list[str]) -> bytes:
    """A generated document index, as a data-room provider would export it."""
    rows = []
    folder = None
    for i, p in enumerate(sorted(paths), start=1):
        top = p.split("/")[0]
        if top != folder:
            folder = top
            rows.append(f'<tr class="folder"><th colspan="3">{html.escape(top)}</th></tr>')
        ext = p.rsplit(".", 1)[-1]
        rows.append(f"<tr><td>{i}</td><td>{html.escape(p)}</td>"
                    f"<td>{FORMAT_NAMES.get(ext, ext)}</td></tr>")
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
        "<title>Project Heron data room index</title></head>\n<body>\n"
        "<h1>Project Heron — data room index</h1>\n"
        "<p>Quillmoor Hydrometrics, Inc. Index generated 26 January 2026. "
        f"{len(paths) + 1} documents including this index.</p>\n"
        "<table>\n<thead><tr><th>No.</th><th>Document</th><th>Format</th></tr></thead>\n<tbody>\n"
        + "\n".join(rows) + "\n</tbody>\n</table>\n</body>\n</html>\n")
    return page.encode("utf-8")


def build_documents() -> dict[str, bytes]:
    docs: dict[str, bytes] = {}
    for part in (content_documents(), workbook_documents(), notebook_documents()):
        clash = docs.keys() & part.keys()
        assert not clash, f"duplicate documents: {sorted(clash)}"
        docs.update(part)
    docs["00_index/dataroom_index.html"] = index_document(list(docs))
    return docs


# --------------------------------------------------------------------------------------------
# Questions
# --------------------------------------------------------------------------------------------

KEYS = ("id", "question", "answer", "must_facts", "gold_files", "type")


def validate_questions(docs: dict[str, bytes]) -> None:
    ids = [q["id"] for q in QUESTIONS]
    assert len(ids) == len(set(ids)), "duplicate question ids"
    for q in QUESTIONS:
        extra = set(q) - set(KEYS) - {"computed_facts"}
        assert not extra and all(k in q for k in KEYS), (q["id"], extra)
        assert q["type"] in QUESTION_TYPES, q["id"]
        assert q["must_facts"] and q["gold_files"], q["id"]
        for f in q["gold_files"]:
            assert f in docs, f"{q['id']}: gold file {f} is not in the dataroom"


def questions_jsonl() -> bytes:
    lines = []
    for q in QUESTIONS:
        ordered = {k: q[k] for k in KEYS}
        if "computed_facts" in q:
            ordered["computed_facts"] = q["computed_facts"]
        lines.append(json.dumps(ordered, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def build(out_dir: Path = DEFAULT_OUT) -> dict[str, bytes]:
    docs = build_documents()
    validate_questions(docs)
    out_dir.mkdir(parents=True, exist_ok=True)
    render.write_zip(out_dir / "dataroom.zip", {f"{WRAPPER}/{k}": v for k, v in docs.items()})
    (out_dir / "questions.jsonl").write_bytes(questions_jsonl())
    return docs


def main(argv: list[str]) -> int:
    out_dir = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    docs = build(out_dir)
    counts: dict[str, int] = {}
    for name in docs:
        ext = name.rsplit(".", 1)[-1]
        counts[ext] = counts.get(ext, 0) + 1
    size = (out_dir / "dataroom.zip").stat().st_size
    print(f"wrote {out_dir / 'dataroom.zip'}: {len(docs)} documents, {size:,} bytes; "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"wrote {out_dir / 'questions.jsonl'}: {len(QUESTIONS)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
