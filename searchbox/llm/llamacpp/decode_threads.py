"""How many threads llama.cpp decodes with on a CPU: as many cores as other work leaves idle, looked at again
each second.

A token is decoded by llama.cpp's threads in lock-step, so one thread whose core another process holds stalls
the rest: on 2 cores, idle, 2 threads decode the packaged 1.5B at 13.2 tokens/s and 1 at 7.0; with one core
kept busy, 2 decode at 4.1 and 1 at 6.8 (bench/cpu_speed.py). llama-cpp-python's default, half the logical
CPUs, is right for the busy machine and halves the idle one. Prompt evaluation is batched and keeps every CPU
this process may use. The output does not depend on the count (each value of a product is one thread's sum),
so a seeded run writes the same tokens whatever the load.

Other work is measured by cpu_load (the busy time of the CPUs it may run on less its own); where nothing can be
measured (not Linux) the count stays llama-cpp-python's default.
"""

from __future__ import annotations

import time

from searchbox.llm.llamacpp.cpu_load import BusyClock, other_cpus

CHECK_SECONDS = 1.0  # how often the count is decided again while tokens are decoded


class DecodeThreads:
    """The decode thread count, between 1 and `most`, decided from how busy other work kept the CPUs since it
    was last decided (at most once each CHECK_SECONDS)."""

    def __init__(self, cpus: int, most: int) -> None:
        self.cpus, self.most = cpus, most
        self.current = most
        self._clock = BusyClock()
        self._last = self._clock.sample()

    @property
    def measured(self) -> bool:
        return self._last is not None

    def choose(self) -> int:
        if self._last is None or time.monotonic() - self._last.wall < CHECK_SECONDS:
            return self.current
        now = self._clock.sample()
        if now is None:
            return self.current
        others, self._last = other_cpus(self._last, now), now
        self.current = max(1, min(self.most, round(self.cpus - others)))
        return self.current
