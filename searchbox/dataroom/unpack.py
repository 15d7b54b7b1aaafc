"""Install a dataroom (a .zip or a folder) as the read-only `work/dataroom` of a job (design §2.2, §5).

Everything the user hands us is hostile until checked: member paths must stay inside the dataroom,
links, encryption, zip bombs and paths deeper than MAX_DEPTH are refused, and sizes are counted on the
bytes actually written, not on what the archive declares. Work happens in a temporary folder beside `dest` (inside the job
folder) and is moved into place only when every check passed, so a refusal leaves nothing behind.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from searchbox.records.tree import MAX_DEPTH, walk

KiB = 1024
MiB = 1024 * KiB
_BLOCK = MiB
_JUNK_DIRS = {"__MACOSX"}
_JUNK_FILES = {".DS_Store"}
_DRIVE = re.compile(r"^[A-Za-z]:")
_ZIP_MAGIC = b"PK\x03\x04"


class DataroomError(Exception):
    """The dataroom cannot be used; the message tells a person what is wrong and what to do."""


@dataclass(frozen=True)
class UnpackLimits:
    max_entries: int = 5000
    max_total_bytes: int = 512 * MiB
    max_file_bytes: int = 200 * MiB
    # Uncompressed / compressed size, per member and for the whole archive.
    max_ratio: float = 200.0
    # Below this many bytes the ratio is not checked: small repetitive files legitimately compress
    # very well, and the total-size limit already bounds what many small members can add up to.
    ratio_exempt_bytes: int = MiB


def install_dataroom(source: Path, dest: Path, limits: UnpackLimits = UnpackLimits()) -> Path:
    """Copy or unpack `source` into `dest`, strip a single wrapper folder, make it read-only.

    `dest` must not exist or be an empty folder; its parent (the job folder) must exist. On any
    refusal a DataroomError is raised and `dest` is left as it was.

    Symlinks in a folder source are never copied: one that points inside the folder is skipped
    (its target is copied in its own place), one that points outside is refused.
    """
    source, dest = Path(source), Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FileExistsError(f"{dest} must not exist or must be an empty folder")
    staging = Path(tempfile.mkdtemp(prefix=".dataroom-", dir=dest.parent))
    try:
        if source.is_dir():
            _copy_folder(source, staging, limits)
        elif source.is_file():
            _unpack_zip(source, staging, limits)
        else:
            raise DataroomError(f"The dataroom {source} was not found. Check the path and try again.")
        content = _strip_wrapper(staging)
        if not any(_files(content)):
            raise DataroomError(
                f"The dataroom {source.name} contains no files. Add the documents to it and try again."
            )
        content.rename(dest)  # same filesystem (both in the job folder), so this is atomic
    except OSError as exc:  # e.g. a name the filesystem rejects, or a full disk
        raise DataroomError(
            f"The dataroom {source.name} could not be unpacked ({exc.strerror or exc}). "
            "Check the file names in it and try again."
        ) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # recursive, but staging holds MAX_DEPTH levels at most
    _make_read_only(dest)
    return dest


def _unpack_zip(source: Path, staging: Path, limits: UnpackLimits) -> None:
    name = source.name
    if not zipfile.is_zipfile(source):
        with source.open("rb") as f:
            if f.read(4) == _ZIP_MAGIC:  # starts like a zip but has no directory: cut short
                raise _damaged(name, "the end of the archive is missing")
        raise DataroomError(
            f"{name} is not a zip archive. Pack the documents into a .zip file and upload that."
        )
    try:
        with zipfile.ZipFile(source) as zf:
            infos = zf.infolist()
            quota = _Quota(name, limits, packed_total=sum(i.compress_size for i in infos))
            members = _checked_members(infos, quota)
            for info, parts in members:
                target = staging.joinpath(*parts)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src:
                    quota.copy(src, target, info.filename, packed=info.compress_size)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise _damaged(name, str(exc)) from exc
    except UnicodeDecodeError as exc:  # the UTF-8 flag is set on a name that is not UTF-8
        raise _damaged(name, "a file name is marked as UTF-8 but is not valid UTF-8") from exc
    except NotImplementedError as exc:  # e.g. deflate64 or AES: zipfile cannot read them
        raise DataroomError(
            f"{name} uses a compression method that cannot be read ({exc}). "
            "Re-create it with a standard zip tool (deflate compression) and upload it again."
        ) from exc


def _checked_members(
    infos: list[zipfile.ZipInfo], quota: _Quota
) -> list[tuple[zipfile.ZipInfo, tuple[str, ...]]]:
    """Validate the whole central directory before anything is written; return what to extract."""
    name, limits = quota.name, quota.limits
    if len(infos) > limits.max_entries:
        raise _too_many(name, len(infos), limits)
    files: set[tuple[str, ...]] = set()
    folders: set[tuple[str, ...]] = set()
    members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]] = []
    for info in infos:
        parts = _safe_parts(info.filename, name)
        if stat.S_ISLNK(info.external_attr >> 16):
            raise DataroomError(
                f"{name} contains a symbolic link ({info.filename}); links are not allowed in a "
                "dataroom. Re-create the zip without links and upload it again."
            )
        if info.flag_bits & 0x1:
            raise DataroomError(
                f"{name} contains password-protected files ({info.filename}). "
                "Upload a zip made without a password."
            )
        quota.check_member(info.filename, info.file_size, info.compress_size)
        if _is_junk(parts) or not parts:
            continue
        if len(parts) > MAX_DEPTH:
            raise _too_deep(name, parts)
        folders.update(parts[:i] for i in range(1, len(parts)))
        members.append((info, parts))
        if info.is_dir():
            folders.add(parts)
            continue
        if parts in files:
            raise DataroomError(
                f"{name} contains {'/'.join(parts)} more than once. "
                "Re-create the zip so that each file appears once."
            )
        files.add(parts)
    clash = files & folders
    if clash:
        raise DataroomError(
            f"{name} contains {'/'.join(min(clash))} both as a file and as a folder. "
            "Rename one of them and upload the zip again."
        )
    quota.check_total(sum(i.file_size for i in infos))
    return members


def _safe_parts(member: str, name: str) -> tuple[str, ...]:
    """The path components of a member, refusing any path that could land outside the dataroom."""
    parts = tuple(p for p in member.split("/") if p not in ("", "."))
    if (
        "\\" in member
        or "\x00" in member
        or member.startswith("/")
        or _DRIVE.match(member)
        or ".." in parts
        or (not parts and not member.endswith("/"))
    ):
        raise DataroomError(
            f"{name} contains a path that points outside the dataroom ({member!r}). "
            "Re-create the zip from the folder itself, with relative paths only."
        )
    return parts


def _copy_folder(source: Path, staging: Path, limits: UnpackLimits) -> None:
    root = source.resolve()
    quota = _Quota(source.name, limits)
    entries = 0
    # One level more than a dataroom may have, so that a name down there is seen and refused.
    for here, dirnames, filenames in walk(root, MAX_DEPTH + 1):
        rel_here = here.relative_to(root)
        if len(rel_here.parts) == MAX_DEPTH and (dirnames or filenames):
            raise _too_deep(source.name, (*rel_here.parts, (dirnames or filenames)[0]))
        dirnames[:] = [d for d in dirnames if d not in _JUNK_DIRS and not _skip_link(here / d, root)]
        names = [n for n in filenames if n not in _JUNK_FILES and not _skip_link(here / n, root)]
        entries += len(dirnames) + len(names)
        if entries > limits.max_entries:
            raise _too_many(source.name, entries, limits)
        target_dir = staging / rel_here
        for d in dirnames:
            (target_dir / d).mkdir()
        for n in names:
            path = here / n
            if not path.is_file():  # sockets, fifos, devices: not documents
                continue
            rel = path.relative_to(root).as_posix()
            quota.check_member(rel, path.stat().st_size, packed=None)
            with path.open("rb") as src:
                quota.copy(src, target_dir / n, rel, packed=None)


def _skip_link(path: Path, root: Path) -> bool:
    """True for a symlink that stays inside `root` (skipped); refuse one that leads outside."""
    if not path.is_symlink():
        return False
    if not path.resolve().is_relative_to(root):
        raise DataroomError(
            f"The dataroom folder contains a link that points outside it "
            f"({path.relative_to(root).as_posix()}). Replace the link with the file itself."
        )
    return True


class _Quota:
    """Counts the bytes written and refuses as soon as a size or ratio limit is passed."""

    def __init__(self, name: str, limits: UnpackLimits, packed_total: int | None = None) -> None:
        self.name = name
        self.limits = limits
        self.packed_total = packed_total
        self.total = 0

    def copy(self, src: BinaryIO, target: Path, member: str, packed: int | None) -> None:
        written = 0
        try:
            with target.open("xb") as out:
                while block := src.read(_BLOCK):
                    written += len(block)
                    self.check_member(member, written, packed)
                    self.check_total(self.total + written)
                    out.write(block)
        except OSError as exc:
            raise DataroomError(
                f"{member} in {self.name} could not be written ({exc.strerror or exc}). "
                "Rename or remove that file and try again."
            ) from exc
        self.total += written

    def check_member(self, member: str, size: int, packed: int | None) -> None:
        limits = self.limits
        if size > limits.max_file_bytes:
            raise DataroomError(
                f"{member} in {self.name} is larger than the limit of {_human(limits.max_file_bytes)} "
                "per file. Remove or split that file and upload the dataroom again."
            )
        if packed is not None and size > limits.ratio_exempt_bytes and size > limits.max_ratio * max(packed, 1):
            raise _bomb(self.name, f"{member} expands {size / max(packed, 1):.0f} times", limits)

    def check_total(self, total: int) -> None:
        limits = self.limits
        if total > limits.max_total_bytes:
            raise DataroomError(
                f"{self.name} unpacks to more than the limit of {_human(limits.max_total_bytes)} in "
                "total. Remove large files or split the dataroom, then upload it again."
            )
        packed = self.packed_total
        if packed is not None and total > limits.ratio_exempt_bytes and total > limits.max_ratio * max(packed, 1):
            raise _bomb(self.name, f"the archive expands {total / max(packed, 1):.0f} times", limits)


def _strip_wrapper(staging: Path) -> Path:
    """When everything sits in one top-level folder, that folder is the dataroom."""
    children = list(staging.iterdir())
    if len(children) == 1 and children[0].is_dir():
        return children[0]
    return staging


def _files(root: Path) -> list[Path]:
    return [folder / n for folder, _, names in walk(root) for n in names if (folder / n).is_file()]


def _make_read_only(dest: Path) -> None:
    # A level below the deepest folder a dataroom may hold, so that one is entered and made read-only too.
    # It holds no links: the unpacker refused or skipped them.
    for folder, _, names in walk(dest, MAX_DEPTH + 1):
        for n in names:
            os.chmod(folder / n, 0o444)
        os.chmod(folder, 0o555)


def _is_junk(parts: tuple[str, ...]) -> bool:
    return bool(parts) and (parts[-1] in _JUNK_FILES or any(p in _JUNK_DIRS for p in parts))


def _damaged(name: str, detail: str) -> DataroomError:
    return DataroomError(
        f"{name} is damaged or incomplete ({detail}). "
        "Re-create the zip, or upload it again if the transfer was cut short."
    )


def _too_many(name: str, count: int, limits: UnpackLimits) -> DataroomError:
    return DataroomError(
        f"{name} has more than {limits.max_entries} entries ({count} found). "
        "Remove files or split the dataroom, then try again."
    )


def _too_deep(name: str, parts: tuple[str, ...]) -> DataroomError:
    shown = "/".join(parts[:3]) + "/..." if len(parts) > 3 else "/".join(parts)  # a deep path is long
    return DataroomError(
        f"{name} contains a path {len(parts)} levels deep ({shown}), more than the {MAX_DEPTH} a dataroom "
        "may have. Move the files into shallower folders and upload the dataroom again."
    )


def _bomb(name: str, what: str, limits: UnpackLimits) -> DataroomError:
    return DataroomError(
        f"{name} looks like a zip bomb: {what} when unpacked, more than the compression ratio limit "
        f"of {limits.max_ratio:.0f}. Upload the documents in an ordinary zip."
    )


def _human(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.3g} MB"
    if n >= KiB:
        return f"{n / KiB:.3g} KB"
    return f"{n} bytes"
