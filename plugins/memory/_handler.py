"""The memory tool's handler: the command checked, its set of memories found,
the command run in one transaction."""

from __future__ import annotations

import functools
import getpass
import hashlib
import os
from typing import TYPE_CHECKING, Any

from pegboard import ToolResult

from ._commands import Refused, create, delete, insert, rename, str_replace, view
from ._confine import PathRefused, memory_key
from ._files import Limits, Space, TooBig
from ._models import PARAMETERS, MemoryInput

if TYPE_CHECKING:
    from pegboard import Session, ToolContext

    from ._config import MemoryConfig

__all__ = ["limits_of", "login_name", "memory", "misused", "person_of", "space_for"]


def login_name() -> str:
    """The person by default: the login name (the uid where there is none)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container's uid without a passwd entry
        return f"uid-{os.getuid()}"


def _top(session: Session) -> Session:
    while session.parent is not None:
        session = session.parent
    return session


def person_of(session: Session, config: MemoryConfig) -> str:
    """The person a session's memories are: the host's ``use_person`` for it
    or the session it was made from, else ``[plugins.memory] person``, else the
    login name."""
    from . import session_person

    return session_person(session) or config.person or login_name()


def space_for(person: str, config: MemoryConfig, root: str) -> Space:
    """The set of memories ``person`` works with in project ``root``."""
    if config.scope == "person":
        return Space(person)
    return Space(person, hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:32], root)


def limits_of(config: MemoryConfig) -> Limits:
    return Limits(config.max_file_bytes, config.max_total_bytes, config.max_files)


def misused(args: MemoryInput) -> str | None:
    """What is wrong with the parameters for the command, for the model; None when nothing."""
    required, optional = PARAMETERS[args.command]
    given = {name for name in MemoryInput.model_fields if name != "command" and getattr(args, name) is not None}
    missing = [name for name in required if name not in given]
    stray = sorted(given - set(required) - set(optional))
    if not missing and not stray:
        return None
    takes = ", ".join([*required, *(f"{o} (optional)" for o in optional)])
    said = []
    if missing:
        said.append(f"it needs {', '.join(missing)}")
    if stray:
        said.append(f"{', '.join(stray)} {'is' if len(stray) == 1 else 'are'} not one of its parameters")
    return f"The {args.command} command was not run: {'; '.join(said)}. It takes: {takes}."


async def memory(args: MemoryInput, ctx: ToolContext) -> ToolResult:
    problem = misused(args)
    if problem is not None:
        return ToolResult.error(problem)
    try:
        if args.command == "rename":
            key, old, new = "", memory_key(args.old_path), memory_key(args.new_path)
        else:
            key, old, new = memory_key(args.path), "", ""
    except PathRefused as exc:
        return ToolResult.error(str(exc))
    config: MemoryConfig = ctx.config
    space = space_for(person_of(ctx.session, config), config, str(_top(ctx.session).root))
    limits, by = limits_of(config), ctx.session.id
    work: Any
    if args.command == "view":
        work = functools.partial(view, space=space, key=key, view_range=args.view_range)
    elif args.command == "create":
        assert args.file_text is not None
        work = functools.partial(create, space=space, key=key, text=args.file_text, limits=limits, by=by)
    elif args.command == "str_replace":
        assert args.old_str is not None and args.new_str is not None
        work = functools.partial(str_replace, space=space, key=key, old=args.old_str, new=args.new_str,
                                 limits=limits, by=by)
    elif args.command == "insert":
        assert args.insert_line is not None and args.insert_text is not None
        work = functools.partial(insert, space=space, key=key, line=args.insert_line, text=args.insert_text,
                                 limits=limits, by=by)
    elif args.command == "delete":
        work = functools.partial(delete, space=space, key=key)
    else:
        work = functools.partial(rename, space=space, old=old, new=new, by=by)
    try:
        text = await ctx.store.run(work, read_only=args.command == "view")
    except (Refused, TooBig) as exc:
        return ToolResult.error(str(exc))
    except Exception as exc:
        if not _from_the_store(exc):
            raise
        return ToolResult.error(f"The memory store could not be used: {ctx.store.describe_error(exc)}. "
                                "Nothing was changed; try again later.")
    return ToolResult.text(text)


def _from_the_store(exc: Exception) -> bool:
    from sqlalchemy.exc import SQLAlchemyError

    from pegboard import StoreError

    return isinstance(exc, (SQLAlchemyError, StoreError))
