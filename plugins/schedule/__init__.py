"""The schedule plugin: wake-ups and cron jobs that outlive every process.

Tools: ``ScheduleWakeup`` (the next iteration of a self-paced loop),
``CronCreate``, ``CronList``, ``CronDelete``. Every job is a row in the store;
a worker (``pegboard schedule worker``, or a ``Scheduler`` in the embedding
host's own loop) claims each firing under a lease, delivers it to the host's
``pegboard_schedule_deliver`` or to ``--exec CMD``, and records it. See
docs/plugins/schedule.md.

This module stays light: SQLAlchemy, cronsim and the handlers are imported
when a tool runs or a worker starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pegboard import Tool, Vote, hookimpl

from . import _hookspecs
from ._clock import FakeClock, use_clock
from ._config import ScheduleConfig

if TYPE_CHECKING:
    import click

    from pegboard import Check, PermissionRequest, PluginContext, StoreSchema

    from ._firing import Firing
    from ._worker import Delivered, Scheduler, SchedulerError

__all__ = ["PEGBOARD_API", "Delivered", "FakeClock", "Firing", "ScheduleConfig", "Scheduler", "SchedulerError",
           "hookspecs", "use_clock"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("ScheduleWakeup", "CronCreate", "CronList", "CronDelete")

hookspecs = _hookspecs
"""This plugin's hook specification (``pegboard_schedule_deliver``)."""

_P = "pegboard.plugins.schedule"
_H = f"{_P}._handlers"
_M = f"{_P}._models"
_LAZY = {"Delivered": "_worker", "Firing": "_firing", "Scheduler": "_worker", "SchedulerError": "_worker"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{_P}.{module}"), name)


@hookimpl
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    add(_hookspecs)


@hookimpl
def pegboard_config_model() -> type[ScheduleConfig]:
    return ScheduleConfig


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None]) -> None:
    # A job belongs to the session that made it: a sub-agent's session ends
    # with its task, so its jobs would fire into nothing.
    register(Tool(vote=_tool_vote, name="ScheduleWakeup", handler=f"{_H}:schedule_wakeup", input_model=f"{_M}:ScheduleWakeupInput",
                  loading="always", permission="read", subagents=False))
    register(Tool(vote=_tool_vote, name="CronCreate", handler=f"{_H}:cron_create", input_model=f"{_M}:CronCreateInput",
                  loading="deferred", permission="read", subagents=False))
    register(Tool(vote=_tool_vote, name="CronList", handler=f"{_H}:cron_list", input_model=f"{_M}:CronListInput",
                  loading="deferred", read_only=True, permission="read", subagents=False))
    register(Tool(vote=_tool_vote, name="CronDelete", handler=f"{_H}:cron_delete", input_model=f"{_M}:CronDeleteInput",
                  loading="deferred", permission="read", subagents=False))


def _tool_vote(request: PermissionRequest) -> Vote | None:
    tool = request.tool
    # A cron job runs its prompt later, unattended: auto mode's classifier
    # looks at it. Each firing's calls are decided anew when it runs.
    if tool.name == "CronCreate" and request.policy.on_ask == "classifier":
        return Vote.ask("CronCreate schedules a prompt to run later, unattended")
    return Vote.allow(f"{tool.name} only keeps this session's own timers; what a firing runs is decided "
                      "when it runs")


@hookimpl
def pegboard_store_schema() -> StoreSchema:
    from ._tables import schema

    return schema()


@hookimpl
def pegboard_doctor(context: PluginContext) -> list[Check]:
    from ._status import doctor_checks

    return doctor_checks(context)


@hookimpl
def pegboard_register_commands(cli: click.Group) -> None:
    from ._cli import schedule_group

    cli.add_command(schedule_group)
