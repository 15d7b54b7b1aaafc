"""A catalogue of hostile datarooms: bad zips and bad documents, each with the outcome expected.

`build_catalogue(folder)` writes every case into `folder` and returns them. An outcome is one of
- "refused": installing the dataroom raises DataroomError whose message contains `fragment`;
- "skipped": the dataroom installs, and extraction lists `member` as skipped or unreadable with
  `fragment` in the reason (a bad file never stops the run);
- "read": the dataroom installs and `member`, inside it, is read with `fragment` in its text.

Big cases are cheap to make: zeros in a stored member become holes in a sparse file, so a zip that
declares hundreds of megabytes takes no disk space and no compression time.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import struct
import subprocess
import tarfile
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dataroom_factories import make_deep_zip, make_docx, make_pdf, make_xlsx

from searchbox.dataroom import UnpackLimits
from searchbox.records.tree import MAX_DEPTH

MiB = 2**20
LIMITS = UnpackLimits()  # the real limits: every case runs against what users get
ABSOLUTE_ESCAPE = "/tmp/searchbox-hostile-evil.txt"
README = ("readme.md", "# Data room\n\nA good file beside the bad one: it must still be read.\n")


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "zip" (the archive is bad) or "document" (a file inside a good archive is bad)
    source: Path
    outcome: str  # "refused" | "skipped" | "read"
    fragment: str  # in the refusal message, the skipped file's reason, or the read file's text
    member: str = ""  # the dataroom path checked for "skipped" and "read"
    peak_mb: int | None = None  # when set, ingesting must allocate less than this (tracemalloc)


def build_catalogue(folder: Path) -> list[Case]:
    folder.mkdir(parents=True, exist_ok=True)
    cases = [make(folder) for make in _MAKERS]
    return [case for group in cases for case in (group if isinstance(group, list) else [group])]


# --- helpers -------------------------------------------------------------------------------------


Members = dict[str, bytes | str] | list[tuple[str, bytes | str]]


def _zip(path: Path, members: Members, method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are written on purpose
        for name, data in members.items() if isinstance(members, dict) else members:
            zf.writestr(name, data)
    return path


class _HoleFile(io.FileIO):
    """A file where writes of zeros become holes: a 200 MB stored member costs no disk and no time."""

    _ZEROS = bytes(MiB)

    def write(self, data: bytes) -> int:  # type: ignore[override]
        view = memoryview(data)
        if len(view) <= MiB and view == self._ZEROS[: len(view)]:
            self.seek(len(view), os.SEEK_CUR)
            return len(view)
        return super().write(data)  # the central directory always follows, so no hole is left open


def _sparse_zip(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    """Stored members of `head` followed by zeros up to `size` bytes."""
    with _HoleFile(path, "w") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED) as zf:
        for name, (head, size) in members.items():
            with zf.open(zipfile.ZipInfo(name), "w", force_zip64=size > 2**31) as out:
                out.write(head)
                left = size - len(head)
                while left:
                    out.write(bytes(min(MiB, left)))
                    left -= min(MiB, left)
    return path


def _flag_names(data: bytes, old: bytes, new: bytes, flag: int = 0) -> bytes:
    """Rewrite a member's name bytes in both headers (same length), optionally setting flag bits."""
    out = bytearray(data)
    for signature, flag_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        at = out.find(signature)
        while at != -1:
            if out[at + name_at : at + name_at + len(old)] == old:
                out[at + name_at : at + name_at + len(new)] = new
                (bits,) = struct.unpack_from("<H", out, at + flag_at)
                struct.pack_into("<H", out, at + flag_at, bits | flag)
            at = out.find(signature, at + 4)
    return bytes(out)


def _with_doc(folder: Path, name: str, member: str, data: bytes, method: int = zipfile.ZIP_DEFLATED) -> Path:
    return _zip(folder / f"{name}.zip", dict([README, (member, data)]), method)


# --- bad archives --------------------------------------------------------------------------------


def _escapes(folder: Path) -> list[Case]:
    members = {
        "dotdot": "../evil.txt",
        "dotdot_nested": "docs/../../evil.txt",
        "absolute": ABSOLUTE_ESCAPE,
        "drive_letter": "C:/evil.txt",
        "backslash_dotdot": "..\\evil.txt",
        "plumbing_answer_above": "../work/ANSWER.md",
        "plumbing_session_above": "../../session.jsonl",
    }
    return [
        Case(f"escape_{tag}", "zip", _zip(folder / f"escape_{tag}.zip", dict([README, (m, "evil")])),
             "refused", "points outside the dataroom")
        for tag, m in members.items()
    ]


def _plumbing_names(folder: Path) -> list[Case]:
    # Names of the job's own files: they must land inside dataroom/, never beside it.
    top = _zip(folder / "plumbing_top.zip", {
        "work/ANSWER.md": "# fake answer", "session.jsonl": "{}", "job.json": "{}", "config.json": "{}",
        "query.txt": "fake", "input.zip": "PK", "sources.json": "[]",
    })
    wrapped = _zip(folder / "plumbing_wrapped.zip", {"work/ANSWER.md": "# fake answer"})
    return [
        Case("plumbing_names_at_top", "zip", top, "read", "fake answer", "work/ANSWER.md"),
        Case("plumbing_single_wrapper", "zip", wrapped, "read", "fake answer", "ANSWER.md"),
    ]


def _symlink(folder: Path) -> Case:
    path = folder / "symlink.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(*README)
        link = zipfile.ZipInfo("passwd")
        link.create_system = 3  # unix: the mode bits below are read
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "/etc/passwd")
    return Case("symlink_entry", "zip", path, "refused", "symbolic link (passwd)")


def _hardlink_tar(folder: Path) -> Case:
    # zip has no hard links; a tar (which has) renamed .zip is the usual way one arrives.
    path = folder / "hardlink_tar.zip"
    with tarfile.open(path, "w") as tf:
        link = tarfile.TarInfo("passwd")
        link.type, link.linkname = tarfile.LNKTYPE, "/etc/passwd"
        tf.addfile(link)
    return Case("hardlink_tar_renamed_zip", "zip", path, "refused", "is not a zip archive")


def _info_zip(folder: Path) -> list[Case]:
    """Archives made by Info-ZIP's `zip`: a symlink, a hard link, a password. Skipped without it."""
    if shutil.which("zip") is None:
        return []
    src = folder / "infozip-src"
    src.mkdir()
    (src / "a.txt").write_text("the plan")
    (src / "link").symlink_to("/etc/passwd")
    os.link(src / "a.txt", src / "hard.txt")  # Info-ZIP stores a hard link as a second copy

    def run(*args: str) -> None:
        subprocess.run(["zip", "-q", *args], cwd=src, check=True)

    run("-y", "../infozip_symlink.zip", "a.txt", "link")
    run("../infozip_hardlink.zip", "a.txt", "hard.txt")
    run("-P", "secret", "../infozip_password.zip", "a.txt")
    return [
        Case("infozip_symlink", "zip", folder / "infozip_symlink.zip", "refused", "symbolic link (link)"),
        Case("infozip_hardlink", "zip", folder / "infozip_hardlink.zip", "read", "the plan", "hard.txt"),
        Case("infozip_password", "zip", folder / "infozip_password.zip", "refused", "password-protected"),
    ]


def _encrypted_flag(folder: Path) -> Case:
    path = folder / "encrypted_flag.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("secret.txt", "the plan")
        zf.infolist()[-1].flag_bits |= 0x1  # written into the central directory at close
    return Case("encrypted_flag", "zip", path, "refused", "password-protected")


def _bombs(folder: Path) -> list[Case]:
    ratio = _zip(folder / "bomb_ratio.zip", {"zeros.bin": bytes(16 * MiB)})
    # Stored members (ratio 1) that add up past the total limit; sparse, so free to make.
    total = _sparse_zip(folder / "bomb_total.zip", {f"part{i}.bin": (b"", 190 * MiB) for i in range(3)})
    one = _sparse_zip(folder / "bomb_one_file.zip", {"huge.txt": (b"log line\n", LIMITS.max_file_bytes + 1)})
    # The directory says 10 KB; the member inflates to 8 MB. Sizes are never trusted.
    liar = bytearray(_zip(folder / "bomb_lying_sizes.zip", {"liar.bin": bytes(8 * MiB)}).read_bytes())
    central = liar.rfind(b"PK\x01\x02")
    liar[central + 24 : central + 28] = (10_000).to_bytes(4, "little")
    (folder / "bomb_lying_sizes.zip").write_bytes(bytes(liar))
    return [
        Case("bomb_by_ratio", "zip", ratio, "refused", "looks like a zip bomb"),
        Case("bomb_by_total_size", "zip", total, "refused", "in total"),
        Case("bomb_one_file_over_limit", "zip", one, "refused", "per file"),
        Case("bomb_lying_sizes", "zip", folder / "bomb_lying_sizes.zip", "refused", "damaged or incomplete"),
    ]


def _nested_zip(folder: Path) -> Case:
    # An inner bomb stays an opaque file: never unpacked, and not indexed.
    inner = _zip(folder / "inner.zip", {"zeros.bin": bytes(32 * MiB)}).read_bytes()
    path = _zip(folder / "nested_zip.zip", dict([README, ("archive/inner.zip", inner)]))
    return Case("nested_zip_kept_opaque", "zip", path, "skipped", "unsupported file type .zip", "archive/inner.zip")


def _entries(folder: Path) -> list[Case]:
    limit = LIMITS.max_entries
    over = _zip(folder / "entries_over.zip", {f"f{i}.txt": "" for i in range(20_000)}, zipfile.ZIP_STORED)
    under = _zip(folder / "entries_under.zip", {f"d/f{i}.txt": "x" for i in range(limit - 1)}, zipfile.ZIP_STORED)
    return [
        Case("entries_20000", "zip", over, "refused", f"more than {limit} entries (20000 found)"),
        Case(f"entries_{limit - 1}", "zip", under, "read", "x", f"f{limit - 2}.txt"),
    ]


def _depth(folder: Path) -> list[Case]:
    # Python 3.11's os.walk and Path.rglob recurse once per level: 1,000 levels died of RecursionError.
    cases = [Case(f"path_{n}_levels_deep", "zip", make_deep_zip(folder / f"path_{n}_levels.zip", n), "refused",
                  f"a path {MAX_DEPTH + 1} levels deep (d/d/d/...)") for n in (40, 1000)]
    deepest = make_deep_zip(folder / f"path_{MAX_DEPTH}_levels.zip", MAX_DEPTH)
    member = "d/" * (MAX_DEPTH - 1) + "deep.txt"
    return [*cases, Case(f"path_{MAX_DEPTH}_levels_deep", "zip", deepest, "read", "deep text", member)]


def _names(folder: Path) -> list[Case]:
    # Without the UTF-8 flag a name is cp437, so any bytes decode; with it, bad bytes are damage.
    raw = _flag_names(_zip(folder / "t.zip", {"bbbb.txt": "x"}).read_bytes(), b"bbbb", b"\x80\x81\xff\x9b")
    (folder / "names_cp437.zip").write_bytes(raw)
    bad = _flag_names(_zip(folder / "t.zip", {"aaaa.txt": "x"}).read_bytes(), b"aaaa", b"\xff\xfe\xfd\xfc", 0x800)
    (folder / "names_bad_utf8.zip").write_bytes(bad)
    (folder / "t.zip").unlink()
    dup = folder / "names_duplicate.zip"
    _zip(dup, [("docs/a.txt", "one"), ("docs/a.txt", "two")])
    return [
        Case("names_cp437_bytes", "zip", folder / "names_cp437.zip", "read", "x", "Çü\xa0¢.txt"),
        Case("names_invalid_utf8", "zip", folder / "names_bad_utf8.zip", "refused", "not valid UTF-8"),
        Case("names_duplicate", "zip", dup, "refused", "docs/a.txt more than once"),
    ]


def _damaged(folder: Path) -> list[Case]:
    whole = _zip(folder / "whole.zip", {"a.txt": random.Random(1).randbytes(20_000), "b.txt": "b"}).read_bytes()
    (folder / "whole.zip").unlink()
    (folder / "truncated.zip").write_bytes(whole[:10_000])
    corrupt = bytearray(_zip(folder / "corrupt.zip", {"a.txt": "hello world " * 500}).read_bytes())
    corrupt[40:80] = bytes(b ^ 0xFF for b in corrupt[40:80])  # inside the deflated data
    (folder / "corrupt.zip").write_bytes(bytes(corrupt))
    (folder / "empty_file.zip").write_bytes(b"")
    return [
        Case("truncated", "zip", folder / "truncated.zip", "refused", "damaged or incomplete"),
        Case("corrupt_member_data", "zip", folder / "corrupt.zip", "refused", "damaged or incomplete"),
        Case("zero_bytes", "zip", folder / "empty_file.zip", "refused", "is not a zip archive"),
    ]


# --- bad documents inside a good archive ---------------------------------------------------------


def _bad_documents(folder: Path) -> list[Case]:
    noise = random.Random(7)
    make_pdf(folder / "doc.pdf", ["Revenue grew 12 percent."])
    pdf = (folder / "doc.pdf").read_bytes()
    garbage = noise.randbytes(4096)
    docs = {
        "pdf_truncated": ("report.pdf", pdf[: len(pdf) // 3], "could not read the file"),
        "docx_garbage": ("memo.docx", garbage, "could not read the file"),
        "xlsx_garbage": ("model.xlsx", b"PK\x03\x04" + garbage, "could not read the file"),
        "md_random_bytes": ("notes.md", bytes(noise.randrange(1, 256) for _ in range(65_536)), "binary"),
        "txt_nuls": ("data.txt", bytes(100_000), "binary"),
    }
    return [
        Case(f"document_{tag}", "document", _with_doc(folder, f"document_{tag}", member, data), "skipped", reason, member)
        for tag, (member, data, reason) in docs.items()
    ]


def _office_bombs(folder: Path) -> list[Case]:
    # A DOCX/XLSX is itself a zip that its parser inflates into memory.
    make_docx(folder / "good.docx", ["hello"], [["a", "b"]])
    make_xlsx(folder / "good.xlsx", {"Sheet": [["hello"]]})
    cases = []
    for doc in ("good.docx", "good.xlsx"):
        bomb = io.BytesIO()
        with zipfile.ZipFile(folder / doc) as zin, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zout:
            for info in zin.infolist():  # the part holding "hello" grows to 120 MB of text
                zout.writestr(info.filename, zin.read(info).replace(b"hello", b"A" * (120 * MiB)))
        member = "bomb" + Path(doc).suffix
        path = _with_doc(folder, f"document_{member.replace('.', '_')}", member, bomb.getvalue())
        cases.append(Case(f"document_{member.replace('.', '_')}", "document", path, "skipped", "over the 100 MB limit", member))
    return cases


def _deep_html(folder: Path) -> Case:
    depth = 100_000
    page = "<html><body>" + "<div>" * depth + "deep text" + "</div>" * depth + "</body></html>"
    # Stored: deflated, its 1 MB of tags would trip the unpacker's ratio limit before extraction.
    path = _with_doc(folder, "document_html_100000_divs", "deep.html", page.encode(), zipfile.ZIP_STORED)
    return Case("document_html_100000_divs", "document", path, "read", "deep text", "deep.html")


def _huge_text(folder: Path) -> Case:
    # 200 MB (decimal) is under the unpacker's 200 MiB per-file limit and over extraction's 100 MB:
    # it unpacks, then extraction skips it by its size without reading it.
    path = _sparse_zip(folder / "document_text_200mb.zip", {
        README[0]: (README[1].encode(), len(README[1].encode())),
        "big.txt": (b"a log line\n" * 100, 200_000_000),
    })
    return Case("document_text_200mb", "document", path, "skipped", "over the 100 MB limit", "big.txt", peak_mb=32)


_MAKERS: list[Callable[[Path], Case | list[Case]]] = [
    _escapes, _plumbing_names, _symlink, _hardlink_tar, _info_zip, _encrypted_flag, _bombs, _nested_zip,
    _entries, _depth, _names, _damaged, _bad_documents, _office_bombs, _deep_html, _huge_text,
]
