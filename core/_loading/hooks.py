"""The one place that calls hook implementations (tox's typed facade over
``pm.hook``), in one documented order.

**Order.** pluggy's calling order, for every hook: the implementation
registered last runs first; ``tryfirst`` and ``trylast`` move one to the
front or the back. pegboard registers the core's own implementations
first, then the plugins in entry-point name order, then the host; so a
host runs before the plugins, the plugins from the last name to the first,
and the core last (its description loaders are marked tryfirst and trylast
to sit around the plugins').

**Failures.** A hook called for one plugin (``one``), or one implementation
at a time (``each``, ``aeach``), never lets one implementation's exception
hide the others': each outcome carries its value or its error, and the
caller decides what a failure means there (a vote that raises is a deny, a
pre-call hook that raises blocks the call, an event hook that raises is
reported). ``first`` is pluggy's own first-result call, for resolvers.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, cast

import pluggy
from pluggy._callers import _multicall  # pluggy's own call; replaced while call monitoring is on

from .._api.plugin_context import Outcome

__all__ = ["Hooks", "Manager", "Outcome", "bind_named"]

# Names the module type itself holds (``__dict__``, ``__annotations__``...):
# for those, pluggy's static look-up may find the type's attribute first.
_MODULE_TYPE_NAMES = frozenset(dir(types.ModuleType))
_ASK_PLUGGY = object()


def _module_function(namespace: object, name: str) -> object:
    """What pluggy's static look-up finds at ``name`` of a module or of an
    instance, read from dictionaries: a module's own function, the function
    an instance's class defines, or None for a value pluggy never hooks;
    ``_ASK_PLUGGY`` for anything else (a class, a module of another type, a
    name of the module type, one in the instance's own dictionary, a static,
    class or bound method, a slot)."""
    if type(namespace) is types.ModuleType:
        if name in _MODULE_TYPE_NAMES:
            return _ASK_PLUGGY
        value = vars(namespace).get(name, _ASK_PLUGGY)
    elif isinstance(namespace, (type, types.ModuleType)) or type(type(namespace)) is not type \
            or name in _own_dict(namespace):
        return _ASK_PLUGGY  # a class, a module of another type, a metaclass's instance, an instance's own name
    else:
        value = next((vars(klass)[name] for klass in type(namespace).__mro__ if name in vars(klass)), _ASK_PLUGGY)
    if value is _ASK_PLUGGY or isinstance(value, types.FunctionType):
        return value
    if isinstance(value, (staticmethod, classmethod, types.MethodType, types.MemberDescriptorType)):
        return _ASK_PLUGGY
    return None


def _own_dict(instance: object) -> dict[str, Any]:
    try:
        found = object.__getattribute__(instance, "__dict__")
    except AttributeError:
        return {}
    return found if isinstance(found, dict) else {}


def _marker_opts(function: object, attribute: str) -> dict[str, Any] | None:
    """pluggy's reading of a function's marker (``@hookimpl``, ``@hookspec``)."""
    opts = getattr(function, attribute, None)
    if opts is None:
        wrapped = getattr(function, "__func__", None)
        opts = getattr(wrapped, attribute, None) if wrapped is not None else None
    return opts if isinstance(opts, dict) else None


class Manager(pluggy.PluginManager):
    """pluggy's plugin manager, reading a module's (or an instance's class's)
    functions straight from the dictionaries when it looks for hook
    implementations and specifications: pluggy asks ``inspect.getattr_static``
    for every name a plugin holds (about 60K instructions each; some 750 names
    at every start-up, 5% of a permissions check), and for a plain function
    or value the dictionaries give the same answer. Everything else is pluggy's."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        found = _module_function(plugin, name)
        if found is _ASK_PLUGGY:
            return super().parse_hookimpl_opts(plugin, name)
        return None if found is None else cast(pluggy.HookimplOpts | None,
                                               _marker_opts(found, self.project_name + "_impl"))

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> pluggy.HookspecOpts | None:
        found = _module_function(module_or_class, name)
        if found is _ASK_PLUGGY:
            return super().parse_hookspec_opts(module_or_class, name)
        return None if found is None else cast(pluggy.HookspecOpts | None,
                                               _marker_opts(found, self.project_name + "_spec"))


def call(impl: Any, kwargs: Mapping[str, Any]) -> Any:
    """Call one implementation with the arguments it names (an implementation
    may take any subset of its specification's)."""
    return impl.function(*[kwargs[name] for name in impl.argnames])


def _with_context(impl: Any, kwargs: Mapping[str, Any], own_context: Callable[[str], Any] | None) -> Mapping[str, Any]:
    if own_context is None or "context" not in impl.argnames:
        return kwargs
    return {**kwargs, "context": own_context(impl.plugin_name)}


class Hooks:
    """Every way the core calls a hook. Plugins reach the same through
    ``PluginContext.each`` and ``PluginContext.notify``."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self._pm = pm
        self._bound: dict[str, tuple[list[Any], list[tuple[str, Callable[[Any], Any]]]]] = {}

    @property
    def relay(self) -> Any:
        """pluggy's hook relay, as ``PluginContext.hook`` hands it to plugins."""
        return self._pm.hook

    def implementations(self, name: str) -> list[Any]:
        """The implementations of ``name`` in calling order (none for a hook
        nobody declared)."""
        caller = getattr(self._pm.hook, name, None)
        return [] if caller is None else caller.get_hookimpls()[::-1]

    def implemented(self, name: str) -> bool:
        caller = getattr(self._pm.hook, name, None)
        return caller is not None and bool(caller.get_hookimpls())

    def declared(self, name: str) -> bool:
        """Whether the core or a loaded plugin declares ``name``."""
        caller = getattr(self._pm.hook, name, None)
        return caller is not None and caller.has_spec()

    def one(self, plugin: object, name: str, /, **kwargs: Any) -> Any:
        """``plugin``'s own implementation of ``name``, called; None when it
        has none. Its exception is the caller's to handle."""
        caller = getattr(self._pm.hook, name, None)
        for impl in caller.get_hookimpls() if caller is not None else ():
            if impl.plugin is plugin:
                return call(impl, kwargs)
        return None

    def each(self, name: str, /, *, own_context: Callable[[str], Any] | None = None,
             **kwargs: Any) -> Iterator[Outcome]:
        """Every implementation of ``name``, one at a time, in calling order.
        ``own_context``: each implementation that takes ``context`` gets its
        own plugin's, ``own_context(plugin name)`` (a hook about a session
        tells each plugin who it is)."""
        for impl in self.implementations(name):
            try:
                yield Outcome(impl.plugin_name, call(impl, _with_context(impl, kwargs, own_context)))
            except Exception as exc:
                yield Outcome(impl.plugin_name, error=exc)

    async def aeach(self, name: str, /, *, own_context: Callable[[str], Any] | None = None,
                    **kwargs: Any) -> AsyncIterator[Outcome]:
        """``each``, awaiting an implementation that is a coroutine (hosts
        may implement pipeline hooks as coroutines)."""
        for impl in self.implementations(name):
            try:
                value = call(impl, _with_context(impl, kwargs, own_context))
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                yield Outcome(impl.plugin_name, error=exc)
            else:
                yield Outcome(impl.plugin_name, value)

    def first(self, name: str, /, **kwargs: Any) -> Any:
        """pluggy's call of a first-result hook (None when nobody implements it)."""
        caller = getattr(self._pm.hook, name, None)
        if caller is None or not caller.get_hookimpls():
            return None
        return caller(**kwargs)

    def first_direct(self, name: str, /, **kwargs: Any) -> Any:
        """``first``'s answer, the implementations called here in pluggy's
        order rather than through its call machinery: for a first-result hook
        asked once per tool (descriptions), where that machinery costs more
        than the answer. The same answer and the same exception; with a
        wrapper implementation (``wrapper``/``hookwrapper``) or pluggy's call
        monitoring in place, pluggy's own call (``first``)."""
        caller = getattr(self._pm.hook, name, None)
        if caller is None:
            return None
        registered = caller.get_hookimpls()  # a copy, in pluggy's order (called last to first)
        if not registered:
            return None
        if getattr(self._pm, "_inner_hookexec", None) is not _multicall or any(impl.hookwrapper or impl.wrapper
                                                                for impl in registered):
            return caller(**kwargs)
        for impl in reversed(registered):
            value = call(impl, kwargs)
            if value is not None:
                return value
        return None

    async def afirst(self, name: str, /, **kwargs: Any) -> Any:
        """``first``, awaiting an answer that is awaitable (a host's coroutine)."""
        value = self.first(name, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        return value

    async def afirst_from(self, name: str, /, **kwargs: Any) -> tuple[Any, str]:
        """A first-result call that also says which plugin (or host) answered:
        (answer, its name), or (None, "") when nobody did."""
        for impl in self.implementations(name):
            value = call(impl, kwargs)
            if inspect.isawaitable(value):
                value = await value
            if value is not None:
                return value, impl.plugin_name
        return None, ""

    def bound(self, name: str, argument: str,
              fixed: Callable[[str], Mapping[str, Any]]) -> list[tuple[str, Callable[[Any], Any]]]:
        """Each implementation of ``name`` as (plugin, call with ``argument``),
        the other arguments bound once per plugin from ``fixed(plugin)``:
        for hooks on the hot path (permission votes), where building the
        arguments per call would cost more than the vote. Bound again when
        an implementation is registered or unregistered."""
        caller = getattr(self._pm.hook, name, None)
        registered = [] if caller is None else caller.get_hookimpls()  # a copy, in pluggy's order
        cached = self._bound.get(name)
        if cached is not None and cached[0] == registered:
            return cached[1]
        calls = [(impl.plugin_name, _bind(impl.function, tuple(impl.argnames), argument, fixed(impl.plugin_name)))
                 for impl in registered[::-1]]
        self._bound[name] = (registered, calls)
        return calls


def bind_named(function: Callable[..., Any], argument: str,
               fixed: Mapping[str, Any]) -> Callable[[Any], Any]:
    """``function`` as a call with ``argument``, the other arguments it names
    taken from ``fixed``, as pluggy hands a hook implementation the
    arguments it names (a tool's own voter). A parameter ``fixed`` does not
    have raises ``TypeError`` naming it."""
    # pluggy's reading of a signature: the positional parameters without a default
    names = tuple(param.name for param in inspect.signature(function).parameters.values()
                  if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD) and param.default is param.empty)
    unknown = [name for name in names if name != argument and name not in fixed]
    if unknown:
        raise TypeError(f"{getattr(function, '__qualname__', function)!r} takes {', '.join(unknown)}; "
                        f"it may name {', '.join([argument, *fixed])}")
    return _bind(function, names, argument, fixed)


def _bind(function: Callable[..., Any], names: tuple[str, ...], argument: str,
          fixed: Mapping[str, Any]) -> Callable[[Any], Any]:
    if names == (argument,):
        return function
    if argument not in names:
        values = tuple(fixed[name] for name in names)
        return lambda _: function(*values)
    at = names.index(argument)
    before = tuple(fixed[name] for name in names[:at])
    after = tuple(fixed[name] for name in names[at + 1:])
    # the usual shapes without unpacking: a vote runs for every plugin at every decision
    if not before and len(after) == 1:
        only = after[0]
        return lambda value: function(value, only)
    if not before and len(after) == 2:
        first, second = after
        return lambda value: function(value, first, second)
    return lambda value: function(*before, value, *after)
