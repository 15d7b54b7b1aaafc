"""Which slot of a pool of model servers is free: whoever hands out the runs (the app's scheduler, a sweep)
keeps the count. A run takes a slot before it starts and gives it back when it ends, so no server ever has more
runs in flight than its slots. A server that stops answering is dropped (its runs go to the others) and may be
restored once it answers again. The servers and their slots are read by llm/endpoints.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchbox.llm.endpoints import Server


@dataclass(frozen=True)
class Slot:
    """One of a server's parallel slots, numbered from 1."""

    server: Server
    number: int


class Pool:
    """Free slots per server; servers dropped for not answering get no more runs until restored."""

    def __init__(self, servers: list[Server]) -> None:
        self.servers = list(servers)  # the live ones, in pool order
        self.dropped: list[Server] = []
        self._order = list(servers)  # where a restored server goes back
        self._taken: dict[Server, set[int]] = {}

    def take(self) -> Slot | None:
        """A slot of the live server with the most free slots (ties: pool order), now taken; None when full."""
        free = [(self.free(s), -n, s) for n, s in enumerate(self.servers) if self.free(s) > 0]
        if not free:
            return None
        server = max(free, key=lambda f: f[:2])[2]
        taken = self._taken.setdefault(server, set())
        number = min(set(range(1, server.slots + 1)) - taken)
        taken.add(number)
        return Slot(server, number)

    def give_back(self, slot: Slot) -> None:
        self._taken.get(slot.server, set()).discard(slot.number)

    def in_use(self, server: Server) -> int:
        return len(self._taken.get(server, ()))

    def free(self, server: Server) -> int:
        return server.slots - self.in_use(server)

    def number(self, server: Server) -> int:
        """The server's place in the pool as it was given, from 1 (a name for it that shows no URL)."""
        return self._order.index(server) + 1

    def drop(self, server: Server) -> None:
        if server in self.servers:
            self.servers.remove(server)
            self.dropped.append(server)

    def restore(self, server: Server) -> None:
        """A dropped server answers again: back into the pool, in its place."""
        if server in self.dropped:
            self.dropped.remove(server)
            self.servers = [s for s in self._order if s in self.servers or s == server]

    @property
    def slots(self) -> int:
        return sum(s.slots for s in self.servers)
