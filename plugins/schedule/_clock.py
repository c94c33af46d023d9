"""The one clock the schedule plugin reads: the tools, the worker and the
timing rules all ask ``now()``, so a test or a host that simulates time can
drive every part of it with ``use_clock`` instead of sleeping through minutes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["FakeClock", "now", "use_clock"]

_clock: Callable[[], float] = time.time


def now() -> float:
    """The current Unix time, from the clock in use (``time.time`` unless
    ``use_clock`` installed another)."""
    return _clock()


@contextmanager
def use_clock(clock: Callable[[], float]) -> Iterator[None]:
    """Read the time from ``clock`` (Unix seconds) inside the block, for
    every tool, scheduler and listing of this process."""
    global _clock
    before, _clock = _clock, clock
    try:
        yield
    finally:
        _clock = before


class FakeClock:
    """A clock that stands still until moved: ``clock.advance(90)``,
    ``clock.set(timestamp)``. For tests and simulations."""

    def __init__(self, start: float):
        self.time = float(start)

    def __call__(self) -> float:
        return self.time

    def advance(self, seconds: float) -> float:
        self.time += seconds
        return self.time

    def set(self, timestamp: float) -> float:
        self.time = float(timestamp)
        return self.time
