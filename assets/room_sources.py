"""What the datarooms built from installed packages share (``pydocs_source/build.py``,
``libref_source/build.py``): each project's name, version and licence text, refused unless the licence is
permissive; the ``LICENSES.md`` page that carries them; and a byte-reproducible zip."""

from __future__ import annotations

import email
import email.policy
import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

PERMISSIVE = ("MIT", "BSD", "Apache")
_DATE = (2026, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    licence: str
    licence_text: str


def licence_name(meta: email.message.EmailMessage) -> str:
    """The SPDX expression, else the licence classifiers, else the free-text License field (which
    some projects fill with their copyright notice)."""
    if meta.get("License-Expression"):
        return meta["License-Expression"].strip()
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    return ", ".join(classifiers) or (meta.get("License") or "").strip()


def licence_field(meta: email.message.EmailMessage) -> str:
    """The SPDX expression, else the free-text License field: how the pydocs room names licences (its
    committed zip was built so)."""
    return (meta.get("License-Expression") or meta.get("License") or "").strip()


def distribution_metadata(dist: metadata.Distribution) -> email.message.EmailMessage:
    return email.message_from_string(dist.read_text("METADATA") or "", policy=email.policy.compat32)


def project(name: str, licence_of: Callable[[email.message.EmailMessage], str] = licence_name) -> Project:
    """Name, version and licence of an installed distribution; refuses one without a permissive
    licence or without its licence text, since the dataroom must carry both."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise SystemExit(f"{name} is not installed: install the requirements first") from None
    meta = distribution_metadata(dist)
    licence = licence_of(meta)
    if not any(word in licence for word in PERMISSIVE):
        raise SystemExit(f"{name}: licence {licence!r} is not one this dataroom accepts")
    # The project's own licence: the top-level licence files of its .dist-info, not those of the code
    # it bundles (numpy, pandas and torch list dozens in subfolders).
    files = [f for f in dist.files or [] if f.parent.name in ("licenses", f.parts[0]) and f.parts[0].endswith(".dist-info")
             and f.name.upper().startswith(("LICENSE", "LICENCE", "COPYING"))]
    if not files:
        raise SystemExit(f"{name}: no licence file in its .dist-info")
    text = "\n\n".join(f.read_text(encoding="utf-8").strip() for f in sorted(files, key=lambda f: f.as_posix()))
    return Project(meta["Name"], meta["Version"], licence, text)


def licences_page(projects: list[Project], used: dict[str, list[str]], preamble: list[str]) -> str:
    """LICENSES.md: `preamble` (what the documents are), a table of the projects, then each one's licence text."""
    lines = ["# Licences of the documents in this dataroom", "", *preamble, "",
             "| project | version | licence | documents |", "| --- | --- | --- | --- |"]
    lines += [f"| {p.name} | {p.version} | {p.licence} | {len(used[p.name])} |" for p in projects]
    for p in projects:
        lines += ["", f"## {p.name} {p.version} ({p.licence})", "",
                  "Documents: " + ", ".join(f"`{d}`" for d in used[p.name]), "", "```", p.licence_text, "```"]
    return "\n".join(lines) + "\n"


def write_zip(path: Path, files: dict[str, bytes]) -> None:
    """Sorted entries, fixed timestamps and permissions: the same input gives the same bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name], compresslevel=9)
    path.write_bytes(buf.getvalue())
