"""Who may write to the process's stdout (public through ``pegboard.cli``).

A command's stdout is its output: in the console script, whatever a plugin
(or a library it imports, or a child it starts) prints while the plugins are
imported goes to stderr instead (``plugin_output_to_stderr``). A command that
speaks a protocol on stdout (an MCP server on stdio) takes the real stdout
for itself with ``claim_stdout``, so that nothing else printed later can be
read as one of its messages.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

__all__ = ["claim_stdout", "plugin_output_to_stderr"]

# The real fd 1, kept above the standard range while the plugins' import
# output is diverted to stderr (None when nothing is diverted).
_diverted: int | None = None


def _private_copy(fd: int) -> int:
    """A close-on-exec duplicate of ``fd`` that cannot land on 0, 1 or 2."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


def _flush_both() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass


@contextmanager
def plugin_output_to_stderr() -> Iterator[None]:
    """fd 1 and ``sys.stdout`` point at stderr inside the block; restored after
    (unless a command claimed stdout inside it). Nested uses are one."""
    global _diverted
    if _diverted is not None:
        yield
        return
    _flush_both()
    try:
        saved = _private_copy(1)
        os.dup2(2, 1)
    except OSError:
        yield  # no fd 1 to divert (closed): nothing can reach it either
        return
    before = sys.stdout
    sys.stdout = sys.stderr
    _diverted = saved
    try:
        yield
    finally:
        if _diverted is not None:
            _flush_both()
            os.dup2(saved, 1)
            os.close(saved)
            sys.stdout = before
            _diverted = None


def claim_stdout() -> BinaryIO:
    """The real stdout, for a command that speaks a protocol there (``pegboard
    serve``'s JSON-RPC on stdio): an unbuffered binary stream on a private copy
    of it. From then on, for the rest of the process, fd 1 and ``sys.stdout``
    point at stderr, so that nothing else a plugin, a library or a child
    process prints can reach the protocol's reader."""
    global _diverted
    _flush_both()
    if _diverted is not None:
        real, _diverted = _diverted, None  # already diverted: keep it that way
    else:
        real = _private_copy(1)
        os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(real, "wb", buffering=0)
