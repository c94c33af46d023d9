"""Listing servers whose tools were never recorded, so that the first toolbox
that needs them has them (no refresh step).

Light: the plugin's entry point imports this; the SDK is imported only in
the worker thread that connects, and only when a server is unlisted.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from ._config import ServerSpec

__all__ = ["discover"]


def discover(specs: list[ServerSpec], data_dir: Path) -> dict[str, tuple[str | None, bool]]:
    """Connect to each server at once, record its tool list, disconnect.

    Blocks until every server has answered or used up its own startup
    timeout. Runs in a thread of its own, so that it works whether or not the
    caller's thread already runs an event loop (an async host loading a
    toolbox). Returns, per server, (None on success or why it failed, whether
    it needs the person to sign in).
    """
    outcome: dict[str, tuple[str | None, bool]] = {}
    failure: list[BaseException] = []

    def work() -> None:
        try:
            outcome.update(asyncio.run(_discover(specs, data_dir)))
        except BaseException as exc:  # reported below, in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=work, name="pegboard-mcp-discovery", daemon=True)
    thread.start()
    # Each server is bounded by its own startup timeout; the margin covers stopping them.
    thread.join(max(s.config.startup_timeout_s for s in specs) + 15.0)
    for spec in specs:
        if spec.name not in outcome:
            outcome[spec.name] = (f"listing failed: {failure[0]}" if failure else
                                  f"did not answer within {spec.config.startup_timeout_s:g} s", False)
    return outcome


async def _discover(specs: list[ServerSpec], data_dir: Path) -> dict[str, tuple[str | None, bool]]:
    from ._manager import NeedsSignIn
    from ._pool import ServerPool

    pool = ServerPool(specs, data_dir=data_dir, log_dir=data_dir / "logs")
    out: dict[str, tuple[str | None, bool]] = {}

    async def one(spec: ServerSpec) -> None:
        try:
            await pool.connection(spec.name).ensure_started()
            out[spec.name] = (None, False)
        except NeedsSignIn as exc:
            out[spec.name] = (str(exc), True)
        except Exception as exc:
            out[spec.name] = (str(exc), False)

    try:
        await asyncio.gather(*(one(s) for s in specs))
    finally:
        await pool.aclose()
    return out
