"""Build the second dataroom (``pydocs_dataroom.zip``): documentation shipped inside installed Python
packages, written by their projects and not for searchbox, so that retrieval is measured on text
nobody here tuned it for.

Usage::

    python assets/pydocs_source/build.py [OUT_DIR]      # OUT_DIR defaults to assets/

What goes in (every source is permissively licensed: MIT, BSD or Apache-2.0):

- ``package_readmes/<project>.md|.rst``: the long description (the PyPI page, usually the README) of
  each package in ``READMES``, taken from its ``METADATA``;
- ``scikit-learn_datasets/*.rst``: scikit-learn's descriptions of its bundled datasets;
- ``fastapi_agent_skill/``, ``typer_agent_skill/``, ``playwright_skills/``: the Markdown guides
  that FastAPI, Typer and Playwright ship for coding agents;
- ``LICENSES.md``: for each project, its version, licence and the full licence text.

The documents come from the packages installed in the running interpreter, so the output depends on
their versions (recorded in ``LICENSES.md``); with the same versions it is byte-reproducible (sorted
entries, fixed timestamps and permissions). The question set over it, ``pydocs_questions.jsonl``, is
written by hand against this text; tests/dataroom/test_pydocs_dataroom.py checks every answer against it.
"""

from __future__ import annotations

import email
import email.policy
import io
import sys
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

WRAPPER = "pydocs-dataroom"
DEFAULT_OUT = Path(__file__).resolve().parent.parent
ZIP_NAME = "pydocs_dataroom.zip"
_DATE = (2026, 1, 1, 0, 0, 0)

# Distributions whose README (METADATA long description) becomes package_readmes/<name>.
READMES = (
    "charset-normalizer", "h11", "httpcore", "idna", "narwhals", "pandas", "pytest-timeout",
    "python-dotenv", "python-multipart", "pytz", "rapidfuzz", "rich", "scikit-learn",
    "semantic-version", "sortedcontainers", "sse-starlette", "starlette", "threadpoolctl", "typer",
    "uvicorn", "annotated-types", "diskcache", "mpmath",
)
# (distribution, folder inside its installed package tree, folder in the dataroom, suffixes).
TREES = (
    ("scikit-learn", "sklearn/datasets/descr", "scikit-learn_datasets", (".rst",)),
    ("fastapi", "fastapi/.agents/skills/fastapi", "fastapi_agent_skill", (".md",)),
    ("typer", "typer/.agents/skills/typer", "typer_agent_skill", (".md",)),
    ("playwright", "playwright/driver/package/lib/tools/skills", "playwright_skills", (".md",)),
)
_PERMISSIVE = ("MIT", "BSD", "Apache")


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    licence: str
    licence_text: str


def _metadata(dist: metadata.Distribution) -> email.message.EmailMessage:
    return email.message_from_string(dist.read_text("METADATA") or "", policy=email.policy.compat32)


def project(name: str) -> Project:
    """Name, version and licence of an installed distribution; refuses one without a permissive
    licence or without its licence text, since the dataroom must carry both."""
    dist = metadata.distribution(name)
    meta = _metadata(dist)
    licence = meta.get("License-Expression") or meta.get("License") or ""
    if not any(word in licence for word in _PERMISSIVE):
        raise SystemExit(f"{name}: licence {licence!r} is not one this dataroom accepts")
    # The project's own licence: the top-level licence files of its .dist-info, not those of code it
    # bundles (pandas lists a dozen).
    files = [f for f in dist.files or [] if f.parent.name in ("licenses", f"{f.parts[0]}")
             and f.parts[0].endswith(".dist-info") and f.name.upper().startswith(("LICENSE", "LICENCE", "COPYING"))]
    if not files:
        raise SystemExit(f"{name}: no licence file in its .dist-info")
    text = "\n\n".join(f.read_text(encoding="utf-8").strip() for f in sorted(files, key=lambda f: f.as_posix()))
    return Project(meta["Name"], meta["Version"], licence.strip(), text)


def readme(name: str) -> tuple[str, str]:
    """(file name, text) of a distribution's long description; .md or .rst from its content type."""
    meta = _metadata(metadata.distribution(name))
    body = meta.get_payload()
    if not isinstance(body, str) or len(body.strip()) < 1000:
        raise SystemExit(f"{name}: no long description worth indexing")
    kind = (meta.get("Description-Content-Type") or "").lower()
    suffix = ".md" if "markdown" in kind else ".rst"
    return f"{meta['Name'].lower()}{suffix}", body.strip() + "\n"


def tree(name: str, inside: str, suffixes: tuple[str, ...]) -> dict[str, str]:
    """Relative path -> text of the documentation files under one installed folder."""
    dist = metadata.distribution(name)
    root = Path(str(dist.locate_file(inside)))
    if not root.is_dir():
        raise SystemExit(f"{name}: {inside} is not installed")
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in suffixes}


def licences_page(projects: list[Project], used: dict[str, list[str]]) -> str:
    lines = ["# Licences of the documents in this dataroom", "",
             "Every document here was written by the project named below and is redistributed under its",
             "licence, reproduced in full. Versions are those the dataroom was built from.", "",
             "| project | version | licence | documents |", "| --- | --- | --- | --- |"]
    lines += [f"| {p.name} | {p.version} | {p.licence} | {len(used[p.name])} |" for p in projects]
    for p in projects:
        lines += ["", f"## {p.name} {p.version} ({p.licence})", "",
                  "Documents: " + ", ".join(f"`{d}`" for d in used[p.name]), "", "```", p.licence_text, "```"]
    return "\n".join(lines) + "\n"


def documents() -> dict[str, str]:
    """Dataroom path -> text, LICENSES.md included."""
    docs: dict[str, str] = {}
    used: dict[str, list[str]] = {}
    projects: dict[str, Project] = {}
    for name in READMES:
        projects[name] = projects.get(name) or project(name)
        file_name, text = readme(name)
        docs[f"package_readmes/{file_name}"] = text
        used.setdefault(projects[name].name, []).append(f"package_readmes/{file_name}")
    for name, inside, folder, suffixes in TREES:
        projects[name] = projects.get(name) or project(name)
        for rel, text in tree(name, inside, suffixes).items():
            docs[f"{folder}/{rel}"] = text
            used.setdefault(projects[name].name, []).append(f"{folder}/{rel}")
    ordered = sorted({p.name: p for p in projects.values()}.values(), key=lambda p: p.name.lower())
    docs["LICENSES.md"] = licences_page(ordered, {k: sorted(v) for k, v in used.items()})
    return docs


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


def main(argv: list[str]) -> None:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    docs = documents()
    write_zip(out / ZIP_NAME, {f"{WRAPPER}/{k}": v.encode("utf-8") for k, v in docs.items()})
    size = (out / ZIP_NAME).stat().st_size
    print(f"wrote {out / ZIP_NAME}: {len(docs)} documents, {sum(len(v) for v in docs.values()):,} characters, "
          f"{size:,} bytes")


if __name__ == "__main__":
    main(sys.argv)
