"""The output of a bash command: the last bytes in memory, all of it (up to a limit) in a spill file."""

from __future__ import annotations

import os
import selectors
import time

_READ_BYTES = 65536
DRAIN_SECONDS = 0.5  # after the kill: how long to wait for the last output in the pipe


class Capture:
    """Keeps the last `cap` bytes of the output in memory, and all of it (up to `spill_limit`) in the
    spill file `spill_fd` (owned here: closed by `close`)."""

    def __init__(self, cap: int, spill_fd: int | None, spill_limit: int) -> None:
        self.cap = cap
        self.spill_fd = spill_fd
        self.spill_limit = spill_limit
        self.tail = bytearray()
        self.total = 0
        self.newlines = 0
        self.ends_with_newline = False

    def close(self) -> None:
        if self.spill_fd is not None:
            os.close(self.spill_fd)
            self.spill_fd = None

    def read(self, fd: int) -> bool:
        """Read one chunk; False at the end of the output."""
        chunk = os.read(fd, _READ_BYTES)
        if not chunk:
            return False
        if self.spill_fd is not None and self.total < self.spill_limit:
            os.write(self.spill_fd, chunk[: self.spill_limit - self.total])
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.ends_with_newline = chunk.endswith(b"\n")
        self.tail += chunk
        if len(self.tail) > self.cap:
            del self.tail[: len(self.tail) - self.cap]
        return True

    def drain(self, fd: int) -> None:
        """Read what is left in the pipe. Bounded: a process that escaped the kill may hold it open."""
        end = time.monotonic() + DRAIN_SECONDS
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while (left := end - time.monotonic()) > 0 and selector.select(left) and self.read(fd):
                pass

    @property
    def dropped(self) -> int:
        return self.total - len(self.tail)

    def lines(self) -> int:
        return self.newlines + (1 if self.total and not self.ends_with_newline else 0)

    def text(self) -> str:
        data = bytes(self.tail)
        if self.dropped:  # the cut may have split a character: drop its continuation bytes
            skip = 0
            while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
                skip += 1
            data = data[skip:]
        return data.decode("utf-8", "replace")
