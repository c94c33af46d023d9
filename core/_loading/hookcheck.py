"""What pluggy would let pass silently, said with the plugin's file and line:
a ``pegboard_*`` function that matches no hook specification (a typo such as
``pegboard_doctr`` is never called), one that matches a hook but is not
marked ``@hookimpl``, and an implementation whose arguments the
specification does not have (pluggy's own message points into pluggy and
spans lines, which breaks a listing)."""

from __future__ import annotations

import inspect
from typing import Any

import pluggy

__all__ = ["HOOK_PREFIX", "describe_validation_error", "unmatched_hooks"]

HOOK_PREFIX = "pegboard_"


def _where(function: Any) -> str:
    function = inspect.unwrap(function)
    try:
        path = inspect.getsourcefile(function) or "?"
        lines, line = inspect.getsourcelines(function)
    except (TypeError, OSError):
        return "?"
    # the def line, not the decorator's
    for offset, text in enumerate(lines):
        if text.lstrip().startswith(("def ", "async def ")):
            return f"{path}:{line + offset}"
    return f"{path}:{line}"


def _candidates(pm: pluggy.PluginManager, plugin: object) -> list[tuple[str, str, Any, bool]]:
    """(attribute, hook name, function, marked) for each ``pegboard_*``
    attribute, and each ``@hookimpl`` one whatever its name (``pegbaord_doctor``)."""
    found = []
    for attr in dir(plugin):
        if attr.startswith("__"):
            continue
        try:
            opts = pm.parse_hookimpl_opts(plugin, attr)
        except Exception:
            opts = None
        if not attr.startswith(HOOK_PREFIX) and opts is None:
            continue
        function = getattr(plugin, attr, None)
        if not callable(function):
            continue
        hook = (opts.get("specname") if opts else None) or attr
        found.append((attr, hook, function, opts is not None))
    return found


def unmatched_hooks(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """One line per ``pegboard_*`` function of ``plugin`` that is never called.
    Asked after every plugin loaded, since plugins declare hooks of their own."""
    lines = []
    for attr, hook, function, marked in _candidates(pm, plugin):
        caller = getattr(pm.hook, hook, None)
        has_spec = caller is not None and caller.has_spec()
        if marked and not has_spec:
            named = "" if attr.startswith(HOOK_PREFIX) else f" (hooks are named {HOOK_PREFIX}...)"
            lines.append(f"{attr} ({_where(function)}) matches no hook specification{named}, so it is never "
                         "called")
        elif not marked and has_spec:
            lines.append(f"{attr} ({_where(function)}) is not marked @hookimpl, so it is never called")
    return lines


def describe_validation_error(pm: pluggy.PluginManager, plugin: object, exc: Exception) -> str:
    """``pm.register``'s refusal as one line naming the plugin's function."""
    for attr, hook, function, marked in _candidates(pm, plugin):
        caller = getattr(pm.hook, hook, None)
        if not marked or caller is None or caller.spec is None:
            continue
        wanted = set(caller.spec.argnames)
        impl_args = [a for a in _argnames(function) if a not in wanted]
        if impl_args:
            return (f"{attr}({', '.join(_argnames(function))}) at {_where(function)}: "
                    f"{', '.join(impl_args)} {'is' if len(impl_args) == 1 else 'are'} not among the hook's "
                    f"arguments ({', '.join(caller.spec.argnames)})")
    return " ".join(str(exc).split())


def _argnames(function: Any) -> list[str]:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return []
    return [name for name, p in parameters.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
