"""Kept prompt prefixes on disk: the KV state of a prefix one process evaluated, for the next process.

A file holds one prefix: a header (its key: every setting the state depends on, and the prefix's tokens),
the state's sha256 and the state's bytes. Files are named by the key's hash, so a lookup is one open. A
file is used only when its header is, byte for byte, the header of the key asked for (compared, never
parsed: no header can make a load raise or read more than the key's own length) and its bytes have the
sha256 it gives: a truncated, altered or foreign file is ignored and removed, so the prefix is evaluated
again and saved anew, never trusted. What the checksum cannot tell, a state of another text saved under
this key, the runtime checks after loading it (kv_state.restore_checked). The store is bounded:
after each save the least recently used files go while all of them hold more than `max_bytes`.
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

MAGIC = b"searchbox kept prefix 2\n"  # 1 had a JSON header that a load parsed
SUFFIX = ".kv"
_LENGTH_BYTES = 8  # the header's length, before it
_DIGEST_BYTES = 32  # the state's sha256, after the header


@dataclass(frozen=True)
class PrefixKey:
    setup: dict[str, Any]  # what the state depends on besides the tokens: the GGUF's digest, the context's settings
    tokens: tuple[int, ...]

    def as_json(self) -> dict[str, Any]:
        return {"setup": self.setup, "tokens": list(self.tokens)}

    @property
    def header(self) -> bytes:
        """The file's header for this key: the same bytes for the same key in every process."""
        return json.dumps(self.as_json(), sort_keys=True).encode()

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

    def discard(self, key: PrefixKey, why: str) -> None:
        """Remove the state kept for this key: it did not check out once loaded."""
        log.warning("removing the kept prefix %s: %s", key.name, why)
        with contextlib.suppress(OSError):
            (self.directory / key.name).unlink(missing_ok=True)

    def save(self, key: PrefixKey, state: bytes) -> None:
        """Keep the state for this key (atomically: a reader never sees half a file), then bound the store."""
        header = key.header
        size = len(MAGIC) + _LENGTH_BYTES + len(header) + _DIGEST_BYTES + len(state)
        if size > self.max_bytes:
            return
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # only this user's processes write here
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(MAGIC + len(header).to_bytes(_LENGTH_BYTES, "little") + header)
                    out.write(hashlib.sha256(state).digest())
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
            expected = key.header
            # Its length first: a header of any other length is another key's, or no header at all, and is not read.
            if int.from_bytes(source.read(_LENGTH_BYTES), "little") != len(expected) or source.read(len(expected)) != expected:
                raise ValueError("kept for another model, context or prefix")
            digest = source.read(_DIGEST_BYTES)
            state = source.read()
        if hashlib.sha256(state).digest() != digest:
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
