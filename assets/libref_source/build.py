"""Build the third dataroom (``libref_dataroom.zip``): the reference documentation that scientific
Python libraries ship inside their own source, their docstrings, rendered as one Markdown page per
module. Written by those projects, not for searchbox, and at the size people upload (its figures:
docs/findings/2026-12-06-third-dataroom.md).

Usage::

    python assets/libref_source/build.py [OUT_DIR]            # libref_dataroom.zip; OUT_DIR defaults to assets/
    python assets/libref_source/build.py --large OUT_DIR      # libref_large_dataroom.zip, about ten times larger

What goes in (every project is permissively licensed: MIT, BSD or Apache-2.0):

- ``<package>/<module path>.md``: for each module of the packages in ``BASE`` (``LARGE`` with
  ``--large``) whose rendered page reaches the size floor, its docstring, then each public class
  (with its constructor's signature), public method and public function that has a docstring.
  Modules are read with ``ast``, never imported, so nothing runs and generated docstrings (filled in
  at import time) stay as their source writes them. Folders of tests and of vendored code (other
  projects' code under their own licences) are left out, as are files this Python cannot parse;
- ``LICENSES.md``: for each project, its version, licence and the full licence text, and the Python
  version whose ``ast`` rendered the signatures.

The large room (``--large``) is not committed: benchmarks build it on demand into a cache folder. It
holds every module of more packages above a lower floor, the small room's pages among them.

The output depends on the installed versions (recorded in ``LICENSES.md``); with the same versions
it is byte-reproducible (sorted entries, fixed timestamps and permissions). The question set over
the small room, ``libref_questions.jsonl``, is written by hand against this text;
tests/dataroom/test_libref_dataroom.py checks every answer against it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # assets/: what the room builders share
from room_sources import licences_page, project, write_zip  # noqa: E402

WRAPPER = "libref-dataroom"
DEFAULT_OUT = Path(__file__).resolve().parent.parent
ZIP_NAME = "libref_dataroom.zip"
LARGE_ZIP_NAME = "libref_large_dataroom.zip"

# (distribution, import package) pairs, and the size floor of a page in characters: a module with
# fewer characters of documentation is mostly code, not a document.
BASE = (("scikit-learn", "sklearn"), ("scipy", "scipy"))
BASE_MIN_CHARS = 10_000
LARGE = BASE + (
    ("networkx", "networkx"), ("numpy", "numpy"), ("pandas", "pandas"), ("sympy", "sympy"), ("mpmath", "mpmath"),
    ("torch", "torch"), ("transformers", "transformers"), ("ray", "ray"), ("plotly", "plotly"),
    ("huggingface-hub", "huggingface_hub"), ("sentence-transformers", "sentence_transformers"),
    ("pydantic", "pydantic"), ("gradio", "gradio"), ("rich", "rich"), ("reportlab", "reportlab"), ("pypdf", "pypdf"),
    ("python-docx", "docx"), ("click", "click"), ("Jinja2", "jinja2"), ("pillow", "PIL"), ("beautifulsoup4", "bs4"),
)
LARGE_MIN_CHARS = 3_000
# Folders never read: tests, and code a project vendors from others (under the others' licences).
_SKIPPED_FOLDERS = {
    "tests", "test", "testing", "_testing", "externals", "_vendor", "vendor", "vendored", "_vendored",
    "third_party", "thirdparty", "thirdparty_files", "_lib",
}


def _signature(args: ast.arguments) -> str:
    """The parameters as the source writes them, defaults included, without self or cls."""
    params = ast.unparse(args)
    for bound in ("self", "cls"):
        if params == bound:
            return ""
        if params.startswith(bound + ", "):
            return params[len(bound) + 2:]
    return params


def _public(node: ast.stmt) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_")


def _class_section(node: ast.ClassDef) -> list[str]:
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    methods = []
    for member in node.body:
        doc = ast.get_docstring(member) if _public(member) and not isinstance(member, ast.ClassDef) else None
        if doc:
            methods += [f"### {node.name}.{member.name}({_signature(member.args)})", "", doc, ""]
    doc = ast.get_docstring(node)
    if not doc and not methods:
        return []
    return [f"## class {node.name}({_signature(init.args) if init else ''})", ""] + ([doc, ""] if doc else []) + methods


def render_module(module: str, source: str, origin: str) -> str:
    """One module's page: its docstring, then each public class, method and function with a docstring."""
    tree = ast.parse(source)
    lines = [f"# {module}", "", f"Docstrings of `{origin}`.", ""]
    if doc := ast.get_docstring(tree):
        lines += [doc, ""]
    for node in tree.body:
        if not _public(node):
            continue
        if isinstance(node, ast.ClassDef):
            lines += _class_section(node)
        elif doc := ast.get_docstring(node):
            lines += [f"## {node.name}({_signature(node.args)})", "", doc, ""]
    return "\n".join(lines).rstrip() + "\n"


def module_pages(distribution: str, package: str, min_chars: int) -> dict[str, str]:
    """Dataroom path (``<package>/<module path>.md``) -> page, for each module of an installed package
    whose page has at least `min_chars` characters."""
    root = Path(str(metadata.distribution(distribution).locate_file(package)))
    if not (root / "__init__.py").is_file():
        raise SystemExit(f"{distribution}: package {package} is not installed")
    pages = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        if _SKIPPED_FOLDERS & set(rel.parts[:-1]) or path.name.startswith(("test_", "conftest")):
            continue
        try:
            source = path.read_text(encoding="utf-8")
            module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
            page = render_module(module, source, rel.as_posix())
        except (SyntaxError, UnicodeDecodeError, ValueError):  # not Python this interpreter reads
            continue
        if len(page) >= min_chars:
            pages[rel.with_suffix(".md").as_posix()] = page
    return pages



def documents(sources: tuple[tuple[str, str], ...], min_chars: int) -> dict[str, str]:
    """Dataroom path -> text, LICENSES.md included."""
    docs: dict[str, str] = {}
    used: dict[str, list[str]] = {}
    projects = []
    for distribution, package in sources:
        projects.append(project(distribution))
        pages = module_pages(distribution, package, min_chars)
        docs.update(pages)
        used[projects[-1].name] = sorted(pages)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    docs["LICENSES.md"] = licences_page(sorted(projects, key=lambda p: p.name.lower()), used, [
        "Every document here is the documentation a project below wrote in its source code (its docstrings),",
        "redistributed under that project's licence, reproduced in full. Versions are those the dataroom was",
        f"built from; the signatures were rendered by the `ast` module of Python {python}."])
    return docs



def build(out: Path, large: bool = False) -> Path:
    """Write the small (or the large) room into `out` and return the zip's path."""
    out.mkdir(parents=True, exist_ok=True)
    docs = documents(LARGE, LARGE_MIN_CHARS) if large else documents(BASE, BASE_MIN_CHARS)
    target = out / (LARGE_ZIP_NAME if large else ZIP_NAME)
    write_zip(target, {f"{WRAPPER}/{k}": v.encode("utf-8") for k, v in docs.items()})
    print(f"wrote {target}: {len(docs)} documents, {sum(len(v) for v in docs.values()):,} characters, "
          f"{target.stat().st_size:,} bytes")
    return target


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT, help="folder for the zip (default: assets/)")
    parser.add_argument("--large", action="store_true", help=f"build {LARGE_ZIP_NAME}, about ten times larger")
    args = parser.parse_args(argv)
    build(args.out, args.large)


if __name__ == "__main__":
    main(sys.argv[1:])
