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

import sys
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # assets/: what the room builders share
from room_sources import Project, distribution_metadata, licence_field, licences_page, project, write_zip  # noqa: E402

WRAPPER = "pydocs-dataroom"
DEFAULT_OUT = Path(__file__).resolve().parent.parent
ZIP_NAME = "pydocs_dataroom.zip"

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


def readme(name: str) -> tuple[str, str]:
    """(file name, text) of a distribution's long description; .md or .rst from its content type."""
    meta = distribution_metadata(metadata.distribution(name))
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



def documents() -> dict[str, str]:
    """Dataroom path -> text, LICENSES.md included."""
    docs: dict[str, str] = {}
    used: dict[str, list[str]] = {}
    projects: dict[str, Project] = {}
    for name in READMES:
        projects[name] = projects.get(name) or project(name, licence_field)
        file_name, text = readme(name)
        docs[f"package_readmes/{file_name}"] = text
        used.setdefault(projects[name].name, []).append(f"package_readmes/{file_name}")
    for name, inside, folder, suffixes in TREES:
        projects[name] = projects.get(name) or project(name, licence_field)
        for rel, text in tree(name, inside, suffixes).items():
            docs[f"{folder}/{rel}"] = text
            used.setdefault(projects[name].name, []).append(f"{folder}/{rel}")
    ordered = sorted({p.name: p for p in projects.values()}.values(), key=lambda p: p.name.lower())
    docs["LICENSES.md"] = licences_page(ordered, {k: sorted(v) for k, v in used.items()}, [
        "Every document here was written by the project named below and is redistributed under its",
        "licence, reproduced in full. Versions are those the dataroom was built from."])
    return docs



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
