"""Where a firing goes: the host's ``pegboard_schedule_deliver``, or a command
(``pegboard schedule worker --exec CMD``) that reads the firing as JSON on
its standard input and exits 0 once it has delivered it."""

from __future__ import annotations

import inspect
import json
import os
import shlex
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ._firing import Firing

__all__ = ["Deliver", "DeliveryError", "ExecDelivery", "HostDelivery"]

Deliver = Callable[[Firing], Awaitable[Any]]
"""Hand one firing over; return normally once it is delivered, raise (or
return False) when it was not."""

HOOK = "pegboard_schedule_deliver"


class DeliveryError(Exception):
    """A firing was not delivered: the message says why (for the worker's log
    and the firing's record)."""


class HostDelivery:
    """Through ``pegboard_schedule_deliver``: the first implementation (in
    hook order: the host first) that does not return None takes the firing."""

    def __init__(self, hook: Any):
        self._hook = hook

    def implementations(self) -> list[Any]:
        caller = getattr(self._hook, HOOK, None)
        return list(reversed(caller.get_hookimpls())) if caller is not None else []

    async def __call__(self, firing: Firing) -> bool:
        for impl in self.implementations():
            outcome = impl.function(*[{"firing": firing}[name] for name in impl.argnames])
            if inspect.isawaitable(outcome):
                outcome = await outcome
            if outcome is None:
                continue
            if outcome is False:
                raise DeliveryError(f"{impl.plugin_name} did not take it ({HOOK} returned False)")
            return True
        raise DeliveryError(f"nothing delivers firings here: no {HOOK} implementation took it")


class ExecDelivery:
    """Run a command per firing: the firing as one JSON line on its standard
    input, ``PEGBOARD_FIRING_ID``, ``PEGBOARD_JOB_ID`` and
    ``PEGBOARD_SESSION_ID`` in its environment, in the job's project folder
    when this machine has it. Exit 0 means delivered; another status, or
    running past ``timeout_s`` (the command's process group is killed),
    means not."""

    def __init__(self, command: str, timeout_s: float):
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("--exec needs a command")
        self.timeout_s = timeout_s

    async def __call__(self, firing: Firing) -> bool:
        import asyncio

        env = {**os.environ, "PEGBOARD_FIRING_ID": firing.id, "PEGBOARD_JOB_ID": firing.job_id,
               "PEGBOARD_SESSION_ID": firing.session_id}
        cwd = firing.root if firing.root and Path(firing.root).is_dir() else None
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, env=env, cwd=cwd, start_new_session=True)
        except OSError as exc:
            raise DeliveryError(f"could not start {self.argv[0]}: {exc.strerror or exc}") from None
        payload = (json.dumps(firing.to_json()) + "\n").encode()
        try:
            await asyncio.wait_for(process.communicate(payload), self.timeout_s)
        except asyncio.TimeoutError:
            _kill_group(process.pid)
            await process.wait()
            raise DeliveryError(f"{self.argv[0]} ran longer than {self.timeout_s:g} s and was stopped") from None
        except BaseException:
            _kill_group(process.pid)   # the worker is stopping mid-delivery: leave nothing running
            raise
        if process.returncode != 0:
            raise DeliveryError(f"{self.argv[0]} exited {process.returncode}")
        return True


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
