"""Finding plugins through entry points and keeping one broken plugin from
taking the others down."""

from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pluggy
from pydantic import BaseModel, ValidationError

from .._api import hookspecs as _hookspecs
from .hookcheck import HOOK_PREFIX, describe_validation_error, unmatched_hooks
from .._util.errors import short_error
from .hooks import Hooks, Manager
from .._api.plugin_context import PluginContext, StoreSchema
from .._api.version import API_VERSION, api_mismatch
from .config import Settings, config_dir, data_dir, describe_errors
from .entry_points import ENTRY_POINT_GROUP, installed_plugins
from .local_plugins import Source, given_sources, local_sources
from .._api.decisions import ToolNamespace
from .._api.tools import CORE_PLUGIN, Tool
from .._util.nearest import did_you_mean

if TYPE_CHECKING:
    from .._services.store import ComponentStore, Stores

__all__ = ["PluginContext", "PluginRecord", "Plugins", "ENTRY_POINT_GROUP"]

# The distribution pegboard itself ships in: its plugins are the built-ins.
BUILTIN_DISTRIBUTION = "pegboard"


@dataclass(slots=True)
class PluginRecord:
    """One discovered plugin and what became of it."""

    name: str
    module: str
    distribution: str | None
    version: str | None
    enabled: bool = True
    origin: Literal["entry point", "local", "given", "core"] = "entry point"
    """How pegboard found it: an installed distribution's entry point, a
    one-file plugin in the user's ``<config dir>/plugins/``, an object
    the embedding code (or ``pegboard.testing``) handed to ``Toolbox.load``,
    or the core itself (its own tools, ``CORE_PLUGIN``: always loaded, and
    its tools give way to a plugin's of the same name)."""
    file: str | None = None
    """A local plugin's file."""
    error: str | None = None
    tools: list[str] = field(default_factory=list)
    config: Any = None
    obj: object | None = None
    defer: str = "auto"
    """``[plugins.<name>] defer``: "auto" (the plugin's own choice per tool),
    "always" (every tool deferred) or "never" (every tool loaded)."""
    warnings: list[str] = field(default_factory=list)
    """What did not stop the plugin but an operator should hear: a tool
    refused for its name, a hook that is never called."""
    broken: dict[str, str] = field(default_factory=dict)
    """Tools that could not be made ready (a ``module:attr`` that does not resolve), with why."""
    hooks: list[str] = field(default_factory=list)
    """The hooks it implements that pegboard (or a loaded plugin) declares:
    known once it is registered, so none for a disabled or failed plugin."""

    @property
    def builtin(self) -> bool:
        """Shipped with pegboard itself (its tool names are reserved)."""
        return self.distribution == BUILTIN_DISTRIBUTION and self.origin == "entry point"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "distribution": self.distribution,
            "enabled": self.enabled,
            "origin": self.origin,
            "file": self.file,
            "hooks": list(self.hooks),
            "tools": list(self.tools),
            "error": self.error,
            "warnings": list(self.warnings),
            "broken_tools": dict(self.broken),
        }


def _import_error(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        # Not the end of the command: one plugin's exit must not take every command down with it.
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
        return f"it called sys.exit({exc.code!r}) while being imported{where}"
    return short_error(exc)


# Seconds a plugin's import may take before stderr names it (PEGBOARD_PLUGIN_IMPORT_WARN_S).
IMPORT_WARN_S = 10.0


class ImportWatch:
    """Names the plugin being imported on stderr each time its import has
    taken another ``PEGBOARD_PLUGIN_IMPORT_WARN_S`` seconds (10 by default),
    so that a plugin that hangs at import is seen, not a silent command.

    It only reports: a thread cannot be stopped from outside, and ending the
    process from inside ``Toolbox.load`` would end an embedding host's
    process for one plugin. Whoever reads the name can interrupt the command
    and switch the plugin off (``[plugins.NAME] enabled = false``). One
    thread for all of a load's imports, started with the first."""

    def __init__(self) -> None:
        import threading

        try:
            bound = float(os.environ.get("PEGBOARD_PLUGIN_IMPORT_WARN_S", IMPORT_WARN_S))
        except ValueError:
            bound = IMPORT_WARN_S
        self.bound = bound if bound > 0 else IMPORT_WARN_S
        self._lock = threading.Lock()
        self._current: tuple[Source, float] | None = None
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None

    def load(self, source: Source) -> object:
        """``source.load()``, watched."""
        import threading
        import time

        with self._lock:
            self._current = (source, time.monotonic())
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="pegboard-plugin-imports", daemon=True)
            self._thread.start()
        try:
            return source.load()
        finally:
            with self._lock:
                self._current = None

    def close(self) -> None:
        self._finished.set()

    def _watch(self) -> None:
        import sys
        import time

        watched: tuple[Source, float] | None = None
        reports = 0
        while not self._finished.wait(self.bound / 4):
            with self._lock:
                current = self._current
            if current is None:
                continue
            if current is not watched:
                watched, reports = current, 0
            source, started = current
            taken = time.monotonic() - started
            if taken >= self.bound * (reports + 1):
                reports += 1
                print(f"pegboard: still importing plugin {source.name!r} ({source.label}), {taken:.0f}s so far...",
                      file=sys.stderr, flush=True)


class Plugins:
    """The plugin manager plus a record per discovered plugin."""

    def __init__(self, settings: Settings, only: Iterable[str] | None = None, inventory: bool = False,
                 listing: bool = False, given: Mapping[str, object] | None = None):
        self.settings = settings
        self.pm: pluggy.PluginManager = Manager(_hookspecs.PROJECT)
        # The names hosts are registered under (Toolbox.load(host=...), add_host):
        # what PluginContext.host_implements tells from a plugin's implementations.
        self.host_names: set[str] = set()
        self.pm.add_hookspecs(_hookspecs)
        self.hooks = Hooks(self.pm)
        self.records: dict[str, PluginRecord] = {}
        self.tools: dict[str, Tool] = {}
        # ToolNamespace.name -> (the namespace, the plugin that declared it)
        self.namespaces: dict[str, tuple[ToolNamespace, str]] = {}
        # Patterns plugins add to the protected paths: (pattern, plugin).
        self.protected_paths: list[tuple[str, str]] = []
        # Tools of disabled plugins, collected only for listings (never offered).
        self.inventory: dict[str, Tool] = {}
        self._inventory = inventory
        self._import_watch = ImportWatch()
        self._reserved: dict[str, str] | None = None
        self._listing = listing
        self._contexts: dict[str, PluginContext] = {}
        self._stores: Stores | None = None
        # Called with a plugin's name after its tools were registered again.
        self.listeners: list[Callable[[str], None]] = []
        if only is None and os.environ.get("PEGBOARD_PLUGINS"):
            only = [n.strip() for n in os.environ["PEGBOARD_PLUGINS"].split(",") if n.strip()]
        self.only = set(only) if only is not None else None
        self.given = dict(given or {})

    def register_host(self, host: object, name: str) -> None:
        self.pm.register(host, name=name)
        self.host_names.add(name)

    def context(self, record: PluginRecord) -> PluginContext:
        context = self._contexts.get(record.name)
        if context is None:
            context = PluginContext(
                name=record.name,
                package=record.module,
                root=self.settings.root,
                config_dir=config_dir(),
                data_dir=data_dir(),
                settings=self.settings,
                hook=self.hooks.relay,
                hooks=self.hooks,
                host_names=self.host_names,
                stores=self.store_handle,
                listing_only=self._listing,
                on_tools_changed=lambda: self._reregister(record),
                own_contexts=self._context_named,
            )
            self._contexts[record.name] = context
        return context

    def _context_named(self, name: str) -> PluginContext | None:
        record = self.records.get(name)
        return self.context(record) if record is not None else None

    def watched_files(self) -> list[Path]:
        return [p for c in self._contexts.values() for p in c.watched]

    def notes(self) -> list[str]:
        return [n for c in self._contexts.values() for n in c.notes]

    def _reregister(self, record: PluginRecord) -> None:
        """Register one loaded plugin's tools again (``PluginContext.tools_changed``)."""
        if record.obj is None:
            return
        registered: list[Tool] = []
        context = self.context(record)
        context.notes.clear()
        try:
            self.hooks.one(record.obj, "pegboard_register_tools",
                      register=registered.append, config=record.config, context=context)
        except Exception as exc:
            # The old tools stay: a failed refresh must not take working tools away.
            self.settings.problems.append(f"plugin {record.name!r} failed while registering tools again: "
                                          f"{short_error(exc)}")
            return
        others = {name for name, tool in self.tools.items() if tool.plugin != record.name}
        for name in record.tools:
            self.tools.pop(name, None)
        record.tools = []
        for tool in registered:
            if not isinstance(tool, Tool) or tool.name in others:
                continue
            bound = _with_plugin(tool, record.name)
            self.tools[bound.name] = bound
            record.tools.append(bound.name)
        for listener in self.listeners:
            listener(record.name)

    def discover(self) -> list[Source]:
        """Every plugin to consider, by name: installed entry points and the
        user's one-file plugins (both narrowed by ``only``), and the objects
        given in code, which load whatever ``only`` says and take the place
        of an installed plugin of the same name."""
        found: dict[str, Source] = {}
        for ep in sorted(installed_plugins(), key=lambda ep: ep.name):
            if ep.name not in found:
                found[ep.name] = Source(ep.name, ep.value.partition(":")[0], ep.load, ep.distribution, ep.version)
        for source in local_sources(config_dir(), self.settings):
            if source.name in found:
                self.settings.problems.append(
                    f"{source.file}: not loaded: the installed plugin {source.name!r} has that name "
                    "(rename the file)")
            else:
                found[source.name] = source
        if self.only is not None:
            found = {name: source for name, source in found.items() if name in self.only}
        # The built-ins' names are reserved whether or not they are enabled (_claim asks them);
        # a toolbox narrowed to named plugins (``only``) reserves only theirs.
        self._builtin_sources = {name: source for name, source in found.items()
                                 if source.distribution == BUILTIN_DISTRIBUTION and source.origin == "entry point"}
        found.update((source.name, source) for source in given_sources(self.given))
        return [found[name] for name in sorted(found)]

    def load(self, register_internal: Callable[[pluggy.PluginManager], None] | None = None,
             host: object | None = None, core: Mapping[str, object] | None = None) -> None:
        """Import every enabled plugin; let each declare its own hooks
        (``pegboard_add_hooks``) before any plugin's hooks are registered,
        so every implementation is checked against its specification; then
        register each, validate its config and register its tools. ``core``:
        the core's own plugins by name, loaded first like any plugin (so
        their implementations run last) whatever ``only`` or config say. The
        host registers last (its implementations run first)."""
        if register_internal is not None:
            register_internal(self.pm)
        imported: list[tuple[Source, PluginRecord, object]] = []
        sources = self.discover()
        # pegboard's version as its built-ins' entry points found it (asking
        # importlib.metadata again would cost a start-up a scan of sys.path)
        version = next((s.version for s in sources if s.distribution == BUILTIN_DISTRIBUTION), None)
        for name, obj in (core or {}).items():
            record = PluginRecord(name=name, module="pegboard", distribution=BUILTIN_DISTRIBUTION,
                                  version=version, origin="core")
            self.records[name] = record
            if not self.settings.plugin_enabled(name):
                self.settings.problems.append(
                    f"{self.settings.source_of('plugins', name, 'enabled')}: [plugins.{name}] enabled: the "
                    f"core's own tools cannot be switched off (block one with [tools] block)")
            self._load_one(record, obj)
        watch = self._import_watch = ImportWatch()
        try:
            for source in sources:
                if source.name in self.records:
                    self.settings.problems.append(f"plugin {source.name!r} ({source.label}) not loaded: "
                                                  f"{source.name!r} is the core's own name")
                    continue
                record = PluginRecord(
                    name=source.name,
                    module=source.module,
                    distribution=source.distribution,
                    version=source.version,
                    enabled=self.settings.plugin_enabled(source.name),
                    origin=source.origin,
                    file=source.file,
                )
                self.records[source.name] = record
                if not record.enabled:
                    if self._inventory:
                        self._take_inventory(source, record)
                    continue
                try:
                    imported.append((source, record, watch.load(source)))
                except (Exception, SystemExit) as exc:  # a plugin's own bug: isolate and report it
                    record.error = f"failed to import {source.label}: {_import_error(exc)}"
        finally:
            watch.close()
        for source, record, obj in imported:
            mismatch = api_mismatch(getattr(obj, "PEGBOARD_API", API_VERSION))
            if mismatch is not None:
                record.error = f"cannot load here: {mismatch}"
                continue
            self._declare_hooks(record, obj)
        for source, record, obj in imported:
            if record.error is None:
                self._load_one(record, obj)
        if host is not None:
            self.register_host(host, "host")
        self._check_unknown_plugin_tables()
        for record in self.records.values():
            if record.obj is not None:
                record.warnings.extend(unmatched_hooks(self.pm, record.obj))
                record.hooks = sorted(caller.name for caller in self.pm.get_hookcallers(record.obj) or ()
                                      if caller.has_spec())

    def _declare_hooks(self, record: PluginRecord, obj: object) -> None:
        """Add the hook specifications ``obj`` declares (``pegboard_add_hooks``):
        a namespace of ``@pegboard.hookspec`` functions named ``pegboard_*``,
        none of them already declared by the core or another plugin."""
        if self.pm.parse_hookimpl_opts(obj, "pegboard_add_hooks") is None:
            return

        def add(namespace: Any) -> None:
            names = [n for n in dir(namespace) if self.pm.parse_hookspec_opts(namespace, n) is not None]
            if not names:
                raise ValueError(f"{namespace!r} holds no @pegboard.hookspec function")
            for name in names:
                if not name.startswith(HOOK_PREFIX):
                    raise ValueError(f"hook {name!r} must be named {HOOK_PREFIX}...")
                if self.hooks.declared(name):
                    raise ValueError(f"hook {name!r} is already declared (by the core or another plugin)")
            self.pm.add_hookspecs(namespace)

        try:
            getattr(obj, "pegboard_add_hooks")(add)
        except Exception as exc:
            record.error = f"failed while declaring its hooks: {short_error(exc)}"

    def _load_one(self, record: PluginRecord, obj: object) -> None:
        try:
            self.pm.register(obj, name=record.name)
        except Exception as exc:
            record.error = f"failed validation: {describe_validation_error(self.pm, obj, exc)}"
            if self.pm.get_plugin(record.name) is not None:  # an older pluggy registers hook by hook
                self.pm.unregister(name=record.name)
            return
        record.obj = obj
        try:
            record.config = self._validate_config(record, obj)
        except _PluginConfigError as exc:
            record.error = str(exc)
            self.pm.unregister(obj)
            record.obj = None
            return
        registered: list[Tool] = []
        try:
            self.hooks.one(obj, "pegboard_register_tools",
                      register=registered.append, config=record.config, context=self.context(record))
            for tool in registered:
                if not isinstance(tool, Tool):
                    raise TypeError(f"register() takes a pegboard.Tool, got {type(tool).__name__}")
        except Exception as exc:
            record.error = f"failed while registering tools: {short_error(exc)}"
            self.pm.unregister(obj)
            record.obj = None
            return
        try:
            # What a plugin declares about names and paths protects: a plugin
            # that fails to declare it does not load at all (fail closed).
            namespaces = self._declared_namespaces(record, obj)
            protected = self._declared_protected_paths(record, obj)
        except _DeclarationError as exc:
            record.error = f"failed while declaring {exc}"
            self.pm.unregister(obj)
            record.obj = None
            return
        for namespace in namespaces:
            holder = self.namespaces.get(namespace.name)
            if holder is not None:
                record.warnings.append(f"tool namespace {namespace.name!r} not declared: plugin {holder[1]!r} "
                                       "declared it first")
                continue
            self.namespaces[namespace.name] = (namespace, record.name)
        self.protected_paths += [(pattern, record.name) for pattern in protected]
        for tool in registered:
            if self._claim(record, tool.name):
                bound = _with_plugin(tool, record.name)
                self.tools[bound.name] = bound
                record.tools.append(bound.name)

    def _declared_namespaces(self, record: PluginRecord, obj: object) -> list[ToolNamespace]:
        try:
            found = self.hooks.one(obj, "pegboard_tool_namespaces", config=record.config,
                                   context=self.context(record))
            namespaces = list(found or ())
        except Exception as exc:
            raise _DeclarationError("its tool namespaces: " + short_error(exc)) from None
        for namespace in namespaces:
            if not isinstance(namespace, ToolNamespace):
                raise _DeclarationError("its tool namespaces: " + "pegboard_tool_namespaces returned "
                                        f"{type(namespace).__name__}, not a pegboard.ToolNamespace")
        return namespaces

    def _declared_protected_paths(self, record: PluginRecord, obj: object) -> list[str]:
        try:
            found = self.hooks.one(obj, "pegboard_protected_paths", config=record.config,
                                   context=self.context(record))
            patterns = [found] if isinstance(found, str) else list(found or ())
        except Exception as exc:
            raise _DeclarationError("its protected paths: " + short_error(exc)) from None
        out = []
        for pattern in patterns:
            if not isinstance(pattern, str) or not pattern.strip() or "\x00" in pattern:
                raise _DeclarationError("its protected paths: " + f"{pattern!r} is not a path pattern")
            if pattern.strip().startswith("!"):
                raise _DeclarationError("its protected paths: " + f"{pattern!r}: a plugin adds protected paths, "
                                        "it cannot unprotect one")
            out.append(pattern.strip())
        return out

    def _claim(self, record: PluginRecord, name: str) -> bool:
        """Whether ``record``'s plugin may have a tool called ``name``.

        A built-in's names are its own: a third party's tool of that name is
        refused, or given up when the built-in loads after it. Between other
        plugins the first to register a name keeps it. A refusal is a
        warning on the refused plugin's record; the rest of it loads.
        """
        if not record.builtin and record.origin != "core":
            # An enabled built-in settles its names below, whichever loads first.
            reserver = self.reserved_names().get(name)
            if reserver is not None and reserver != record.name and not self.settings.plugin_enabled(reserver):
                record.warnings.append(f"tool {name!r} not registered: the built-in plugin {reserver!r} has a "
                                       f"tool of that name (reserved even while {reserver!r} is off)")
                return False
        holder = self.tools.get(name)
        if holder is None:
            return True
        owner = self.records.get(holder.plugin)
        if owner is not None and owner.origin == "core" and owner is not record:
            # The core's own tools give way, as documented (a plugin's TaskStop).
            del self.tools[name]
            owner.tools.remove(name)
            return True
        if owner is record:
            record.warnings.append(f"tool {name!r} registered twice; the first one is kept")
            return False
        if record.builtin and owner is not None and not owner.builtin:
            del self.tools[name]
            owner.tools.remove(name)
            owner.warnings.append(f"tool {name!r} not registered: {name} is a tool of the built-in plugin "
                                  f"{record.name!r}")
            return True
        why = f"the built-in plugin {holder.plugin!r} has a tool of that name" if owner is not None and \
            owner.builtin else f"plugin {holder.plugin!r} registered one of that name first"
        record.warnings.append(f"tool {name!r} not registered: {why}")
        return False

    def reserved_names(self) -> dict[str, str]:
        """Each tool name a built-in plugin declares (``PEGBOARD_TOOL_NAMES``
        in its entry module, which imports nothing heavy), by the built-in
        holding it: reserved whether or not that built-in is enabled (a
        toolbox narrowed by ``only`` reserves the names of the built-ins in it). The core knows no plugin's names; the plugins say them."""
        if self._reserved is None:
            reserved: dict[str, str] = {}
            for name, source in sorted(getattr(self, "_builtin_sources", {}).items()):
                try:
                    declared = getattr(source.load(), "PEGBOARD_TOOL_NAMES", ())
                except Exception:
                    continue  # it fails to import: reported where it loads, or not here at all
                for tool_name in declared if isinstance(declared, (tuple, list, frozenset, set)) else ():
                    if isinstance(tool_name, str):
                        reserved.setdefault(tool_name, name)
            self._reserved = reserved
        return self._reserved

    def _take_inventory(self, source: Source, record: PluginRecord) -> None:
        """Learn a disabled plugin's tool names for `tools list`, without
        registering its hooks: it stays switched off."""
        try:
            obj = self._import_watch.load(source)
            register = getattr(obj, "pegboard_register_tools", None)
            if register is None:
                return
            model = getattr(obj, "pegboard_config_model", None)
            config = model()() if model is not None and model() is not None else None
            found: list[Tool] = []
            spec_args = {"register": found.append, "config": config, "context": self.context(record)}
            import inspect

            params = inspect.signature(register).parameters
            register(**{k: v for k, v in spec_args.items() if k in params})
        except (Exception, SystemExit):
            return  # listing a switched-off plugin is best effort
        for tool in found:
            self.inventory[tool.name] = _with_plugin(tool, record.name)
            record.tools.append(tool.name)

    def _validate_config(self, record: PluginRecord, obj: object) -> BaseModel | None:
        model = self.hooks.one(obj, "pegboard_config_model")
        if model is not None:
            table = self.settings.plugin_options(record.name, model)
        else:
            table = self.settings.plugin_table(record.name)
            table.pop("enabled", None)
        defer = table.pop("defer", "auto")
        if defer not in ("auto", "always", "never"):
            raise _PluginConfigError(f"{self.settings.source_of('plugins', record.name, 'defer')}: "
                                     f"[plugins.{record.name}] defer: expected \"auto\", \"always\" or "
                                     f"\"never\", got {defer!r}")
        record.defer = defer
        if model is None:
            if table:
                keys = ", ".join(sorted(table))
                raise _PluginConfigError(
                    f"{self.settings.source_of('plugins', record.name)}: [plugins.{record.name}] "
                    f"{keys}: unknown key (this plugin takes no options)")
            return None
        try:
            return model.model_validate(table)
        except ValidationError as exc:
            raise _PluginConfigError(
                "; ".join(describe_errors(exc, self.settings.provenance, ("plugins", record.name), model))) from None

    def _check_unknown_plugin_tables(self) -> None:
        if self.only is not None:
            return

        for name in self.settings.merged.get("plugins", {}):
            if name not in self.records:
                hint = did_you_mean(name, self.records)
                self.settings.problems.append(
                    f"{self.settings.source_of('plugins', name)}: [plugins.{name}]: "
                    f"no installed plugin is called {name!r}{'; ' + hint if hint else ''}")

    @property
    def stores(self) -> Stores:
        """Each component's way into the store (made on first use: nothing
        about the store is imported by a toolbox that never uses it)."""
        if self._stores is None:
            from .._services.store import Stores

            self._stores = Stores(self.settings, self.store_schema)
        return self._stores

    def store_handle(self, component: str) -> ComponentStore:
        return self.stores(component)

    def store_schema(self, component: str) -> StoreSchema | None:
        """The tables ``component`` declares (``pegboard_store_schema``); for
        ``"pegboard"``, the core's, which its own plugin (``CORE_PLUGIN``)
        declares through the same hook under the store's older name for them."""
        from .._services.store import CORE_COMPONENT, StoreError
        if component == CORE_PLUGIN:
            return None  # the core's tables are the "pegboard" component's
        record = self.records.get(CORE_PLUGIN if component == CORE_COMPONENT else component)
        if record is None or record.obj is None:
            return None
        try:
            schema = self.hooks.one(record.obj, "pegboard_store_schema", context=self.context(record))
        except Exception as exc:
            raise StoreError(f"plugin {component!r} failed to declare its store schema: {short_error(exc)}") \
                from None
        if schema is not None and not isinstance(schema, StoreSchema):
            raise StoreError(f"plugin {component!r}: pegboard_store_schema returned {type(schema).__name__}, "
                             "not a StoreSchema")
        return schema

    def schemas(self) -> dict[str, StoreSchema]:
        """Every loaded component's declared schema, the core's first."""
        from .._services.store import CORE_COMPONENT
        found = {}
        for name in [CORE_COMPONENT, *(name for name in self.records if name != CORE_PLUGIN)]:
            schema = self.store_schema(name)
            if schema is not None:
                found[name] = schema
        return found


class _PluginConfigError(Exception):
    pass


class _DeclarationError(Exception):
    """What a plugin failed to declare, and why."""


def _with_plugin(tool: Tool, plugin: str) -> Tool:
    """A copy of ``tool`` owned by ``plugin``: what ``replace_tool`` makes,
    without running ``Tool.__init__`` and its checks again on fields that
    passed them (a 1,000-tool MCP server's load spent a fifth of itself
    there). What the original learned lazily (model, schema) is not carried."""
    copy = object.__new__(Tool)
    state = copy.__dict__
    state.update({key: value for key, value in tool.__dict__.items() if key not in _LEARNED})
    state["plugin"] = plugin
    return copy


# Tool's cached properties: learned by each copy for itself.
_LEARNED = frozenset(name for name, value in vars(Tool).items() if isinstance(value, functools.cached_property))
