"""``pegboard approvals``: durable sessions' calls waiting for a person, and
answering them from the terminal (any process that shares the store)."""

from __future__ import annotations

import json
import sys

import click

from .sessions import store_failure, when
from ..shared import JSON, global_options
from ..shared import current_state as _state
from ..approvals_page import serve
from ..._api.decisions import Answer
from ..._services.pending import list_pending, local_user

__all__ = ["approvals_group"]


@click.group("approvals")
def approvals_group() -> None:
    """Calls waiting for a person's approval (a host answered Answer.later())."""


@approvals_group.command("list")
@global_options
@click.option("--session", "session_id", default=None, help="Only this session's.")
@JSON
def approvals_list(session_id: str | None, as_json: bool) -> None:
    """Pending calls not run yet, oldest first: waiting, or answered and not yet run by their host.

    Exit status: 0 the calls listed; 1 the store failed (the reason on stderr, the URL's password
    hidden); 2 a usage or configuration error."""
    toolbox = _state().toolbox()
    try:
        calls = toolbox.pending_calls(session_id)
    except Exception as exc:  # the store's failure, said with the URL hidden
        store_failure(toolbox, exc)
        return
    if as_json:
        click.echo(json.dumps([c.to_json() for c in calls], indent=2, default=str))
        return
    if not calls:
        click.echo("no calls wait for approval")
    for c in calls:
        click.echo(f"{c.id}  {when(c.created_at)}  {c.status:<8} session {c.session_id}  {c.tool}: {c.reason}")
        click.echo(f"{'':<16}{json.dumps(c.input, default=str)[:200]}")


def _answer(pending_id: str, allow: bool, remember: str | None, rule: str | None, message: str | None) -> None:
    toolbox = _state().toolbox()
    try:
        call = toolbox.answer_pending(pending_id, Answer(allow=allow, remember=remember,  # type: ignore[arg-type]
                                                         rule=rule, message=message, approver=local_user()))
    except KeyError:
        click.echo(f"pegboard: no call {pending_id!r} waits for approval (pegboard approvals list)", err=True)
        sys.exit(1)
    except ValueError as exc:  # answered already: each pending call is answered once
        click.echo(f"pegboard: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:
        store_failure(toolbox, exc)
        return
    verb = "approved" if allow else "denied"
    click.echo(f"{verb} {call.id} ({call.tool}); session {call.session_id}'s host runs it next")


@approvals_group.command("approve")
@global_options
@click.argument("pending_id")
@click.option("--remember", type=click.Choice(["session", "project", "user"]), default=None,
              help="Also keep the rule (approve-always) for the session, the project or the user.")
@click.option("--rule", default=None, help="The rule to keep (default: the first one the call suggests).")
def approvals_approve(pending_id: str, remember: str | None, rule: str | None) -> None:
    """Approve a pending call.

    Exit status: 0 answered; 1 no call of that id waits, it was answered already, or the store
    failed; 2 a usage or configuration error."""
    _answer(pending_id, True, remember, rule, None)


@approvals_group.command("deny")
@global_options
@click.argument("pending_id")
@click.option("--message", default=None, help="What the model is told.")
def approvals_deny(pending_id: str, message: str | None) -> None:
    """Deny a pending call.

    Exit status: 0 answered; 1 no call of that id waits, it was answered already, or the store
    failed; 2 a usage or configuration error."""
    _answer(pending_id, False, None, None, message)


@approvals_group.command("serve")
@global_options
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The port on 127.0.0.1 (0: a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser too.")
def approvals_serve(port: int, open_browser: bool) -> None:
    """A page on this machine to answer the calls waiting and read the audit log.

    It listens on 127.0.0.1 only and prints its address, which holds a new
    token: every request without it is refused. Answers are kept with your
    user name; each call's session's host runs it (docs/approvals.md).

    Exit status: 0 stopped with Ctrl-C; 1 the store failed or the port could
    not be taken (the reason on stderr); 2 a usage or configuration error."""

    toolbox = _state().toolbox(listing=True)
    try:
        list_pending(toolbox, limit=1)  # the store answers (and is at this code's version) before a page promises
    except Exception as exc:
        store_failure(toolbox, exc)
        return

    def say(text: str) -> None:
        click.echo(text)
        sys.stdout.flush()

    try:
        serve(toolbox, port, open_browser=open_browser, say=say)
    except OSError as exc:
        click.echo(f"pegboard: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        pass
