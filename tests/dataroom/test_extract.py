"""Text extraction from real files of every supported format, and the reasons for those it can't read."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pypdf
import pytest
from dataroom_factories import make_docx, make_eml, make_notebook, make_pdf, make_xlsx

from searchbox.dataroom import EXTRACTORS, ExtractedFile, Segment, extract_dataroom, extract_file, extractor
from searchbox.dataroom import extract as extract_module


def test_pdf_has_one_segment_per_page(tmp_path: Path) -> None:
    make_pdf(tmp_path / "report.pdf", ["Revenue grew 12 percent.", "Churn fell to 4 percent."])
    f = extract_file(tmp_path, "report.pdf")
    assert (f.path, f.status, f.reason) == ("report.pdf", "ok", "")
    assert [s.label for s in f.segments] == ["page 1", "page 2"]
    assert f.segments[1].text == "Churn fell to 4 percent."
    assert f.text == "Revenue grew 12 percent.\n\nChurn fell to 4 percent."


def test_encrypted_pdf(tmp_path: Path) -> None:
    make_pdf(tmp_path / "plain.pdf", ["Secret plan."])
    for name, user_password in [("locked.pdf", "pw"), ("owner-only.pdf", "")]:
        writer = pypdf.PdfWriter(clone_from=str(tmp_path / "plain.pdf"))
        writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
        writer.write(tmp_path / name)
    locked = extract_file(tmp_path, "locked.pdf")
    assert locked.status == "error" and "encrypted PDF" in locked.reason and locked.segments == []
    # Restrictions without a user password don't stop reading.
    assert extract_file(tmp_path, "owner-only.pdf").text == "Secret plan."


def test_corrupt_pdf(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog")
    f = extract_file(tmp_path, "broken.pdf")
    assert f.status == "error" and f.reason.startswith("could not read the file")


def test_docx_paragraphs_and_table_in_order(tmp_path: Path) -> None:
    make_docx(tmp_path / "memo.docx", ["Intro paragraph.", "Closing paragraph."], [["Name", "Amount"], ["Alpha", "10"]])
    f = extract_file(tmp_path, "memo.docx")
    assert f.status == "ok" and [s.label for s in f.segments] == [None]
    assert f.text == "Intro paragraph.\nName | Amount\nAlpha | 10\nClosing paragraph."


def test_xlsx_one_segment_per_sheet(tmp_path: Path) -> None:
    make_xlsx(
        tmp_path / "model.xlsx",
        {
            "Revenue": [["Quarter", "Amount", "Note"], ["Q1", 1200.0, None], ["Q2", 1300.5, "best"]],
            "Costs": [[datetime.datetime(2024, 1, 2), 3, True], [], ["x", None, None]],
        },
    )
    f = extract_file(tmp_path, "model.xlsx")
    assert f.status == "ok"
    assert [s.label for s in f.segments] == ["sheet Revenue", "sheet Costs"]
    assert f.segments[0].text == "Quarter | Amount | Note\nQ1 | 1200\nQ2 | 1300.5 | best"
    assert f.segments[1].text == "2024-01-02 | 3 | True\nx"


def test_csv_and_tsv_rows(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text('name,amount\n"Smith, J",1200.50\n\nJones,007\n')
    (tmp_path / "b.csv").write_text("name;amount\nSmith;1200,50\n")
    (tmp_path / "c.tsv").write_text("name\tamount\nSmith\t3\n")
    assert extract_file(tmp_path, "a.csv").text == "name | amount\nSmith, J | 1200.50\nJones | 007"
    assert extract_file(tmp_path, "b.csv").text == "name | amount\nSmith | 1200,50"
    assert extract_file(tmp_path, "c.tsv").text == "name | amount\nSmith | 3"


def test_json_is_pretty_printed(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"team":["Ana","Bo"],"city":"Zürich"}', encoding="utf-8")
    (tmp_path / "bad.json").write_text('{"unfinished": ')
    assert extract_file(tmp_path, "a.json").text == json.dumps(
        {"team": ["Ana", "Bo"], "city": "Zürich"}, indent=2, ensure_ascii=False
    )
    assert extract_file(tmp_path, "bad.json").text == '{"unfinished":'


def test_html_drops_scripts_and_keeps_title(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(
        "<html><head><title>Board memo</title><style>p {color: red}</style></head><body>"
        "<!-- a comment --><h1>Plan</h1><p>Hello <b>world</b>!</p><script>alert('pwned')</script>"
        "<noscript>enable js</noscript><table><tr><td>a</td><td>b</td></tr></table>"
        "<div>\n\n\n   spaced    out   </div></body></html>"
    )
    f = extract_file(tmp_path, "page.html")
    assert f.text == "Board memo\nPlan\nHello world!\na | b\n\nspaced out"
    for hidden in ("alert", "color", "enable js", "comment"):
        assert hidden not in f.text


def test_email_headers_body_and_attachments(tmp_path: Path) -> None:
    make_eml(tmp_path / "plain.eml", "Hello Bob,\nnumbers attached.", html="<p>Hello <b>Bob</b></p>", attachment="q1.pdf")
    make_eml(tmp_path / "html.eml", "", html="<p>Only <b>html</b> here</p><script>x()</script>")
    plain = extract_file(tmp_path, "plain.eml").text
    assert plain.splitlines()[:5] == [
        "From: Alice Example <alice@example.com>",
        "To: bob@example.com",
        "Cc: carol@example.com",
        "Date: Tue, 04 Mar 2025 10:00:00 +0000",
        "Subject: Quarterly numbers",
    ]
    assert "Hello Bob,\nnumbers attached." in plain and "<b>" not in plain
    assert plain.endswith("Attachments: q1.pdf")
    html = extract_file(tmp_path, "html.eml").text
    assert html.endswith("Subject: Quarterly numbers\n\nOnly html here")


def test_notebook_cells_and_outputs(tmp_path: Path) -> None:
    make_notebook(tmp_path / "analysis.ipynb")
    f = extract_file(tmp_path, "analysis.ipynb")
    assert [s.label for s in f.segments] == ["cell 1", "cell 2"]
    assert f.segments[0].text == "# Churn analysis\nMonthly churn by cohort."
    assert f.segments[1].text == "print(churn.mean())\n0.042\ncohort_size 1200"
    assert "iVBOR" not in f.text


def test_text_encodings(tmp_path: Path) -> None:
    french = "Le conseil d'administration a approuvé le budget de l'année prochaine et les dépenses prévues."
    (tmp_path / "cp1252.txt").write_bytes(french.encode("cp1252"))
    (tmp_path / "bom.md").write_bytes("\ufeff# Titre\r\nligne\r\n".encode("utf-8"))
    (tmp_path / "wide.txt").write_bytes("Grüße aus UTF-16".encode("utf-16"))
    (tmp_path / "Makefile").write_text("all:\n\techo hi\n")
    assert extract_file(tmp_path, "cp1252.txt").text == french
    assert extract_file(tmp_path, "bom.md").text == "# Titre\nligne"
    assert extract_file(tmp_path, "wide.txt").text == "Grüße aus UTF-16"
    assert extract_file(tmp_path, "Makefile").text == "all:\n\techo hi"


def test_binary_and_unsupported_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "fake.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    fake = extract_file(tmp_path, "fake.txt")
    assert (fake.status, fake.reason) == ("skipped", "binary content in a text file")
    png = extract_file(tmp_path, "logo.png")
    assert (png.status, png.reason, png.segments) == ("skipped", "unsupported file type .png", [])


def test_empty_file_is_ok_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_text("  \n")
    f = extract_file(tmp_path, "empty.md")
    assert (f.status, f.reason, f.text) == ("ok", "no text found in the file", "")


def test_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract_module, "MAX_TEXT_CHARS", 10)
    (tmp_path / "long.txt").write_text("0123456789abcdef")
    f = extract_file(tmp_path, "long.txt")
    assert (f.status, f.text) == ("ok", "0123456789") and "truncated" in f.reason
    monkeypatch.setattr(extract_module, "MAX_FILE_BYTES", 5)
    big = extract_file(tmp_path, "long.txt")
    assert big.status == "skipped" and "limit" in big.reason


def test_dataroom_is_sorted_and_never_raises(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.md").write_text("z")
    (tmp_path / "a.md").write_text("a")
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not really")
    (tmp_path / "broken.xlsx").write_bytes(b"nonsense")
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    files = extract_dataroom(tmp_path)
    assert [(f.path, f.status) for f in files] == [
        ("a.md", "ok"),
        ("b/z.md", "ok"),
        ("broken.docx", "error"),
        ("broken.xlsx", "error"),
        ("photo.jpg", "skipped"),
    ]
    assert all(f.reason for f in files if f.status != "ok")


def test_a_new_format_is_one_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract_module, "EXTRACTORS", dict(EXTRACTORS))

    @extractor(".shout")
    def extract_shout(path: Path) -> list[Segment]:
        return [Segment(None, path.read_text().upper())]

    (tmp_path / "a.shout").write_text("hello")
    assert extract_file(tmp_path, "a.shout") == ExtractedFile("a.shout", "ok", "", [Segment(None, "HELLO")])
