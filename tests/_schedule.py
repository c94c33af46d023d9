"""The schedule plugin's tests drive time with one fake clock (never by sleeping)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pegboard.plugins.schedule import FakeClock, use_clock

__all__ = ["clock"]


@pytest.fixture
def clock(request: pytest.FixtureRequest) -> Iterator[FakeClock]:
    """Every part of the plugin reads this clock, which starts at the test
    module's ``START`` and moves only when the test moves it."""
    fake = FakeClock(request.module.START)
    with use_clock(fake):
        yield fake
