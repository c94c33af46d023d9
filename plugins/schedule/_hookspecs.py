"""The hook the schedule plugin adds, for hosts.

* ``pegboard_schedule_deliver(firing)``: a job's firing is due; the host
  runs its prompt as a turn of the session that made the job.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from pegboard import hookspec

if TYPE_CHECKING:
    from ._firing import Firing


@hookspec(firstresult=True)
def pegboard_schedule_deliver(firing: Firing) -> bool | Awaitable[bool | None] | None:
    """Host: deliver one firing, or return None to pass. May be a coroutine.

    Run ``firing.prompt`` (and ``firing.note``, when it says something) as a
    turn of session ``firing.session_id``. Return True once it is delivered;
    False, or raising, means not delivered: the scheduler tries again later
    (up to 5 attempts). ``firing.id`` is stable: a firing handed over by a
    worker that was killed before it could record the delivery comes again
    with the same id, which the host can drop. Called by the ``Scheduler``
    running in the host (``await Scheduler(toolbox).run()``) or by
    ``pegboard schedule worker`` without ``--exec`` (a plugin's
    implementation then).
    """
