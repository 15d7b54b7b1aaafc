"""Kept prompt prefixes on disk: the KV state of a prefix one process evaluated, for the next process.

A file holds one prefix: a header (its key: every setting the state depends on, and the prefix's tokens;
the state's length and sha256) and the state's bytes. Files are named by the key's hash, so a lookup is
one open. A file is used only when its header names exactly the key asked for and its bytes have the
length and sha256 the header gives: a truncated, altered or foreign file is ignored (and removed), so the
prefix is evaluated again and saved anew, never trusted. The store is bounded: after each save the least
recently used files go while all of them hold more than `max_bytes`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAGIC = b"searchbox kept prefix 1\n"
SUFFIX = ".kv"
_LENGTH_BYTES = 8  # the header's length, before it
_MAX_HEADER = 16 * 2**20  # a key lists up to n_ctx tokens: generous, yet no file makes us read gigabytes of header


@dataclass(frozen=True)
class PrefixKey:
    setup: dict[str, Any]  # what the state depends on besides the tokens: the GGUF's digest, the context's settings
    tokens: tuple[int, ...]

    def as_json(self) -> dict[str, Any]:
        return {"setup": self.setup, "tokens": list(self.tokens)}

    @property
    def name(self) -> str:
        canonical = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest() + SUFFIX


@dataclass(frozen=True)
class PrefixStore:
    directory: Path
    max_bytes: int

    def load(self, key: PrefixKey) -> bytes | None:
        """The state kept for exactly this key, or None (none kept, or a file that does not check out)."""
        path = self.directory / key.name
        try:
            state = self._read_verified(path, key)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ignoring the kept prefix %s: %s", path.name, exc)
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: evicted last
        return state

    def save(self, key: PrefixKey, state: bytes) -> None:
        """Keep the state for this key (atomically: a reader never sees half a file), then bound the store."""
        header = json.dumps({**key.as_json(), "state_bytes": len(state),
                             "sha256": hashlib.sha256(state).hexdigest()}).encode()
        size = len(MAGIC) + _LENGTH_BYTES + len(header) + len(state)
        if size > self.max_bytes:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(MAGIC + len(header).to_bytes(_LENGTH_BYTES, "little") + header)
                    out.write(state)
                os.replace(temp, self.directory / key.name)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
            self._bound()
        except OSError as exc:  # a full or read-only disk costs the next process time, not this run
            log.warning("could not keep a prompt prefix in %s: %s", self.directory, exc)

    def _read_verified(self, path: Path, key: PrefixKey) -> bytes:
        # Never through a link, never a special file, never more than the store may hold.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as source:
            info = os.fstat(source.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ValueError("not a regular file")
            if info.st_size > self.max_bytes:
                raise ValueError(f"{info.st_size} bytes, more than the store holds")
            if source.read(len(MAGIC)) != MAGIC:
                raise ValueError("not a kept prefix of this format")
            length = int.from_bytes(source.read(_LENGTH_BYTES), "little")
            if length > _MAX_HEADER:
                raise ValueError("header too long")
            header = json.loads(source.read(length))
            if not isinstance(header, dict) or {k: header.get(k) for k in ("setup", "tokens")} != key.as_json():
                raise ValueError("kept for another model, context or prefix")
            state = source.read()
        if len(state) != header.get("state_bytes") or hashlib.sha256(state).hexdigest() != header.get("sha256"):
            raise ValueError("its bytes do not match its checksum")
        return state

    def _bound(self) -> None:
        files = []
        for path in self.directory.glob(f"*{SUFFIX}"):
            try:
                info = path.lstat()
            except FileNotFoundError:  # removed by another process meanwhile
                continue
            files.append((info.st_mtime_ns, info.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files, key=lambda row: row[0]):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size
