"""Progress at the terminal (public as ``pegboard.cli.progress``).

A command, or the code it runs, says what is under way::

    with progress("Starting MCP server github") as shown:
        ...
        shown.step("listed 12 tools")      # a line of its own
        shown.update("Listing tools")       # the spinner's text

In the ``pegboard`` command, with stderr a terminal, a spinner with the text
and the seconds so far turns on stderr while the block runs, and each step
is a line above it; the spinner's line is cleared when the block ends. On
a pipe nothing is shown unless asked (``PEGBOARD_PROGRESS=1``: the text and
the steps as plain lines), and ``PEGBOARD_PROGRESS=0`` shows nothing even at
a terminal. Anywhere else (a host embedding pegboard, a test's in-process
run) nothing is shown at all: a library does not write to its host's
stderr. ``NO_COLOR`` (set and not empty) keeps colours out; a terminal whose
``TERM`` is ``dumb`` gets lines, not a spinner. A question put to the person
at the terminal pauses the spinner (``paused()``).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["Progress", "enable_progress", "paused", "progress"]

FRAME_S = 0.1
FIRST_FRAME_S = 0.2     # a block shorter than this draws nothing at all
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_CLEAR = "\r\x1b[2K"

_enabled = False


def enable_progress() -> None:
    """Called by the ``pegboard`` console script: this process is the command."""
    global _enabled
    _enabled = True


def _colour(text: str, code: str) -> str:
    return text if os.environ.get("NO_COLOR") else f"\x1b[{code}m{text}\x1b[0m"


class Progress:
    """One thing under way (``progress(text)``'s ``as`` value)."""

    def __init__(self, display: _Display | None, text: str):
        self._display = display
        self.text = text
        """What the spinner says."""
        self.started = time.monotonic()
        """When the block began (``time.monotonic()``)."""

    def update(self, text: str) -> None:
        """Change the spinner's text (nothing is printed on a pipe)."""
        self.text = text

    def step(self, text: str) -> None:
        """A line of its own, above the spinner (or on its own on a pipe, when asked)."""
        if self._display is not None:
            self._display.line(text)


class _Display:
    """The process's one spinner line on stderr, shared by every block under way."""

    def __init__(self, stream: TextIO, spin: bool):
        self.stream = stream
        self.spin = spin
        self.active: list[Progress] = []
        self.paused = 0
        self.drawn = False
        self.lock = threading.RLock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None

    def write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed or gone: progress is never worth a failure
            pass

    def clear(self) -> None:
        if self.drawn:
            self.write(_CLEAR)
            self.drawn = False

    def line(self, text: str) -> None:
        with self.lock:
            self.clear()
            self.write(text + "\n")
            self.draw()

    def draw(self) -> None:
        with self.lock:
            if not self.spin or self.paused or not self.active:
                return
            newest = self.active[-1]
            seconds = time.monotonic() - min(p.started for p in self.active)
            if seconds < FIRST_FRAME_S:
                return
            frame = _colour(_FRAMES[int(seconds / FRAME_S) % len(_FRAMES)], "36")
            more = f" (+{len(self.active) - 1} more)" if len(self.active) > 1 else ""
            self.write(f"{_CLEAR}{frame} {newest.text}{more} {_colour(f'{seconds:.0f} s', '2')}")
            self.drawn = True

    def start(self, shown: Progress) -> None:
        with self.lock:
            self.active.append(shown)
            if not self.spin:
                self.write(shown.text + "\n")
                return
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._turn, name="pegboard-progress", daemon=True)
                self.thread.start()

    def finish(self, shown: Progress) -> None:
        with self.lock:
            if shown in self.active:
                self.active.remove(shown)
            if not self.active:
                self.clear()
                self.wake.set()

    def _turn(self) -> None:
        while True:
            self.wake.wait(FRAME_S)
            self.wake.clear()
            with self.lock:
                if not self.active:
                    self.thread = None
                    return
                self.draw()


_display: _Display | None = None
_display_lock = threading.Lock()


def _the_display() -> _Display | None:
    """The display for this process's stderr, or None when nothing is to be shown."""
    global _display
    asked = os.environ.get("PEGBOARD_PROGRESS", "").strip()
    if not _enabled or asked == "0":
        return None
    stream = sys.__stderr__
    if stream is None:
        return None
    try:
        terminal = stream.isatty()
    except (OSError, ValueError):
        terminal = False
    if not terminal and asked != "1":
        return None
    with _display_lock:
        if _display is None or _display.stream is not stream:
            _display = _Display(stream, spin=terminal and os.environ.get("TERM") != "dumb")
        return _display


@contextmanager
def progress(text: str) -> Iterator[Progress]:
    """Show that ``text`` is under way while the block runs (see the module's
    docstring for where it shows and where it stays silent)."""
    display = _the_display()
    shown = Progress(display, text)
    if display is None:
        yield shown
        return
    display.start(shown)
    try:
        yield shown
    finally:
        display.finish(shown)


@contextmanager
def paused() -> Iterator[None]:
    """No spinner while the block runs (a prompt at the terminal)."""
    display = _display
    if display is None:
        yield
        return
    with display.lock:
        display.paused += 1
        display.clear()
    try:
        yield
    finally:
        with display.lock:
            display.paused -= 1
            display.draw()
