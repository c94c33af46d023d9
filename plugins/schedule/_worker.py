"""The scheduler: claims due firings, delivers them, records them.

``Scheduler`` is the whole worker. ``pegboard schedule worker`` runs one in
its own event loop; an embedding host runs one inside its own loop
(``await scheduler.run()``), delivering through its ``pegboard_schedule_deliver``.

Delivery contract (docs/plugins/schedule.md):

* every firing is delivered exactly once while workers stay alive: a claim
  leases the job's row, the worker renews the lease while it delivers, and
  recording the delivery advances the job in the same transaction that
  checks the lease is still this worker's;
* a worker killed mid-delivery stops renewing: once its lease runs out
  (``lease_s``, 30 s by default) another worker claims the same firing and
  delivers it again under the same id;
* a job deleted while its firing is claimed is gone at once: no worker can
  claim a row that is not there, so a killed worker's firing is not
  delivered again, and a failed delivery is not retried. A delivery already
  handed over (the host is running the turn, the command has started) runs
  to its end and is recorded; nothing fires after it.

The database calls run on worker threads; the event loop only waits for
them and for deliveries. Each delivery slot keeps one connection of its
own, so a firing costs its two transactions and no connection checks.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pegboard import StoreError

from . import _clock
from ._claims import Claimed, WorkerStats, claim, heartbeat, prune, record, worker_identity
from ._delivery import Deliver, DeliveryError, HostDelivery
from ._firing import Firing

if TYPE_CHECKING:
    import asyncio

    from pegboard import PluginStore, Toolbox

__all__ = ["Delivered", "Scheduler", "SchedulerError", "schedule_context"]

T = TypeVar("T")

PLUGIN_MODULE = "pegboard.plugins.schedule"
LEASE_S = 30.0
POLL_S = 1.0
CONCURRENCY = 4
MAX_ATTEMPTS = 5
PRUNE_EVERY_S = 3600.0


class SchedulerError(Exception):
    """The scheduler cannot run here (the plugin is off, nothing delivers)."""


@dataclass(frozen=True)
class Delivered:
    """What became of one firing: ``delivered``, ``retry`` (it failed and
    will be tried again), ``failed`` (its last attempt failed), or ``lost``
    (its job was deleted during the delivery, or the lease was lost)."""

    firing: Firing
    status: str
    detail: str | None = None


class Scheduler:
    """Fires due jobs of the store ``toolbox`` uses.

    ``deliver``: an async callable given each ``Firing`` that returns once
    it is delivered and raises when it was not; by default the toolbox's
    ``pegboard_schedule_deliver`` implementations (the host's first).
    ``clock``: Unix seconds (default: the plugin's clock, ``use_clock``).
    ``lease_s``: how long a claim holds without being renewed (a killed
    worker's firings come back after this). ``concurrency``: deliveries at
    once. ``max_attempts``: deliveries of one firing before it is recorded
    as failed and its job moves on. ``on_done``: told what became of each
    firing once it is recorded (a log line, a metric).
    """

    def __init__(self, toolbox: Toolbox, *, deliver: Deliver | None = None,
                 clock: Callable[[], float] | None = None, lease_s: float = LEASE_S, poll_s: float = POLL_S,
                 concurrency: int = CONCURRENCY, max_attempts: int = MAX_ATTEMPTS,
                 on_done: Callable[[Delivered], None] | None = None):
        context = schedule_context(toolbox)
        self.store: PluginStore = context.store
        hook = HostDelivery(context.hook)
        self.deliver: Deliver = deliver if deliver is not None else hook
        if deliver is None and not hook.implementations():
            raise SchedulerError("nothing delivers firings here: implement pegboard_schedule_deliver in the "
                                 "host (or a plugin), or run `pegboard schedule worker --exec CMD`")
        self.clock = clock or _clock.now
        if lease_s <= 0 or poll_s <= 0 or concurrency < 1 or max_attempts < 1:
            raise ValueError("lease_s and poll_s must be positive, concurrency and max_attempts at least 1")
        self.lease_s, self.poll_s = float(lease_s), float(poll_s)
        self.concurrency, self.max_attempts = concurrency, max_attempts
        self.worker_id, host, pid = worker_identity()
        self.stats = WorkerStats(host, pid, self.clock())
        self.on_done = on_done
        self._idle: list[Any] = []        # one connection per delivery slot, kept while running
        self._stop: asyncio.Event | None = None
        self._pruned_at = -PRUNE_EVERY_S

    def __repr__(self) -> str:
        return f"Scheduler({self.worker_id!r}, {self.store.url!r})"

    # --- running ---------------------------------------------------------------

    async def run(self, *, until_idle: bool = False) -> None:
        """Fire due jobs until ``stop()`` (or, with ``until_idle``, until
        nothing is due). A database that cannot be reached is reported and
        tried again, less and less often (at most every 30 s); with
        ``until_idle`` its error ends the run, as a ``StoreError`` (a schema
        newer than this pegboard) always does. Deliveries under way when it stops are finished
        and recorded. A claim is delivered the moment it is made, so no
        claim waits behind another."""
        import asyncio

        self._stop = asyncio.Event()
        beating = asyncio.create_task(self._beat())
        failures, registered = 0, False
        try:
            while not self._stop.is_set():
                try:
                    if not registered:
                        await self._db(heartbeat, self.worker_id, self.clock(), self.lease_s, self.stats)
                        registered = True
                    handled = await self.run_once()
                    failures = 0
                except StoreError:         # a schema this code must not touch: waiting will not help
                    raise
                except Exception as exc:   # the database is down, say: say so, and try again less often
                    if until_idle:
                        raise
                    failures += 1
                    if failures == 1 or failures % 10 == 0:
                        _report(f"schedule worker {self.worker_id}: {self.store.describe_error(exc)}; "
                                "trying again")
                    self._drop_connections()
                    handled = []
                if until_idle and not handled:
                    break
                if not handled:
                    try:
                        await asyncio.wait_for(self._stop.wait(), min(30.0, self.poll_s * 2 ** min(failures, 6)))
                    except asyncio.TimeoutError:
                        pass
        finally:
            beating.cancel()
            try:
                await beating
            except asyncio.CancelledError:
                pass
            try:
                await self._db(heartbeat, self.worker_id, self.clock(), self.lease_s, self.stats, True)
            except Exception as exc:
                _report(f"schedule worker {self.worker_id}: could not record that it stopped: "
                        f"{self.store.describe_error(exc)}")
            self._drop_connections()

    def stop(self) -> None:
        """Ask ``run()`` to finish: no new claims; deliveries under way end."""
        if self._stop is not None:
            self._stop.set()

    async def run_once(self) -> list[Delivered]:
        """Claim what is due now and deliver it, ``concurrency`` at a time,
        until nothing more is due (or ``stop()``): what became of each.

        Each delivery slot, once its firing is recorded, claims the next
        due one in the same trip to the database thread; with a slot free,
        the worker also looks for new due firings every ``poll_s``, so one
        long delivery holds up no other."""
        import asyncio

        done: list[Delivered] = []
        active: set[asyncio.Task[None]] = set()
        try:
            while True:
                free = self.concurrency - len(active)
                if free > 0 and not self._stopping():
                    taken = await self._db(self._claim, free)
                    active.update(asyncio.create_task(self._slot(held, done)) for held in taken)
                    if not active:
                        break
                elif not active:
                    break
                wait_s = self.poll_s if len(active) < self.concurrency and not self._stopping() else None
                _finished, active = await asyncio.wait(active, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if active:
                await asyncio.wait(active)
        if time.monotonic() - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = time.monotonic()
            try:
                await self._db(prune, self.clock())
            except Exception as exc:  # housekeeping: the next hour tries again
                _report(f"schedule: pruning old firings failed: {self.store.describe_error(exc)}")
        return done

    def _stopping(self) -> bool:
        return self._stop is not None and self._stop.is_set()

    def _claim(self, conn: Any, limit: int) -> list[Claimed]:
        now = self.clock()
        taken = claim(conn, self.worker_id, now, self.lease_s, limit)
        if taken:
            self.stats.claimed += len(taken)
            self.stats.last_claim_at = now
        return taken

    async def _slot(self, held: Claimed | None, done: list[Delivered]) -> None:
        """Deliver ``held``, then each firing claimed after it, until none is due."""
        while held is not None:
            outcome, held = await self._fire(held)
            done.append(outcome)

    async def _fire(self, held: Claimed) -> tuple[Delivered, Claimed | None]:
        firing = held.firing
        status, detail = "delivered", None
        try:
            result = await self.deliver(firing)
            if result is False:
                raise DeliveryError("the delivery returned False")
        except Exception as exc:
            status, detail = "failed", str(exc) if isinstance(exc, DeliveryError) else f"{type(exc).__name__}: {exc}"
        recorded, following = await self._record(held, status, detail)
        if recorded == "delivered" or (recorded == "lost" and status == "delivered"):
            self.stats.delivered += 1
        elif recorded in ("failed", "retry"):
            self.stats.failed += 1
            more = f"; tried again in a while (attempt {firing.attempt} of {self.max_attempts})" \
                if recorded == "retry" else f"; given up after {firing.attempt} attempts"
            _report(f"schedule: firing {firing.id} was not delivered: {detail}{more}")
        outcome = Delivered(firing, recorded, detail)
        if self.on_done is not None:
            try:
                self.on_done(outcome)
            except Exception as exc:  # a log line's bug must not lose the worker
                _report(f"schedule: on_done failed: {type(exc).__name__}: {exc}")
        return outcome, following

    async def _record(self, held: Claimed, status: str, detail: str | None) -> tuple[str, Claimed | None]:
        """Record a delivery and claim this slot's next firing (two
        transactions, one trip to the database thread), trying again while
        the database refuses: a delivery never recorded is delivered again
        once its lease runs out."""
        import asyncio

        for attempt in range(5):
            try:
                return await asyncio.to_thread(self._record_and_claim, held, status, detail)
            except Exception as exc:
                if attempt == 4:
                    _report(f"schedule: firing {held.firing.id} could not be recorded "
                            f"({self.store.describe_error(exc)}); it will be delivered again")
                    return "unrecorded", None
                await asyncio.sleep(min(self.lease_s / 10, 0.5 * 2 ** attempt))
        return "unrecorded", None

    def _record_and_claim(self, held: Claimed, status: str, detail: str | None) -> tuple[str, Claimed | None]:
        recorded = self._on_own_connection(record, held, self.worker_id, self.clock(), status, detail,
                                           self.max_attempts, self.lease_s)
        if self._stopping():
            return recorded, None
        try:
            taken = self._on_own_connection(self._claim, 1)
        except Exception as exc:  # the record stands; the main loop claims again
            _report(f"schedule worker {self.worker_id}: {self.store.describe_error(exc)}")
            return recorded, None
        return recorded, (taken[0] if taken else None)

    async def _beat(self) -> None:
        """Renew this worker's leases and its sign of life, every third of a lease (at most every 5 s)."""
        import asyncio

        every = renewal_interval(self.lease_s)
        while True:
            await asyncio.sleep(every)
            try:
                await asyncio.to_thread(self._in_transaction, heartbeat, self.worker_id, self.clock(),
                                        self.lease_s, self.stats)
            except Exception as exc:
                _report(f"schedule worker {self.worker_id}: renewing its leases failed: "
                        f"{self.store.describe_error(exc)}")

    # --- the database ------------------------------------------------------------

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in one transaction on a worker thread,
        on one of this scheduler's own connections."""
        import asyncio

        return await asyncio.to_thread(self._on_own_connection, fn, *args)

    def _on_own_connection(self, fn: Callable[..., T], *args: Any) -> T:
        conn = self._idle.pop() if self._idle else self.store.engine.connect()
        try:
            with conn.begin():
                result = fn(conn, *args)
        except BaseException:
            conn.close()  # it may be broken: the next call takes a fresh one
            raise
        self._idle.append(conn)
        return result

    def _in_transaction(self, fn: Callable[..., T], *args: Any) -> T:
        with self.store.begin() as conn:
            return fn(conn, *args)

    def _drop_connections(self) -> None:
        while self._idle:
            try:
                self._idle.pop().close()
            except Exception:
                pass


def renewal_interval(lease_s: float) -> float:
    """How often a worker renews its leases: a third of a lease, so two
    renewals may be late before one runs out, and at most every 5 s (a
    long lease needs no faster sign of life). A lease shorter than 15 s is
    renewed by its third, never by the 5 s cap."""
    return min(lease_s / 3, 5.0)


def schedule_context(toolbox: Toolbox) -> Any:
    for record_ in toolbox.records.values():
        if record_.module == PLUGIN_MODULE:
            if record_.obj is None:
                why = record_.error or f"it is disabled ([plugins.{record_.name}] enabled = false)"
                raise SchedulerError(f"the schedule plugin is not loaded: {why}")
            return toolbox.context_for(record_.name)
    raise SchedulerError("the schedule plugin is not installed in this toolbox")


def _report(text: str) -> None:
    # A stderr nobody reads any more (its supervisor was killed) must not stop
    # a delivery or its record halfway: the note is lost, the work is not.
    try:
        print(f"pegboard: {text}", file=sys.stderr, flush=True)
    except OSError:
        pass

