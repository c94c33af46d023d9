"""What a plugin's hooks are handed about where they run (``PluginContext``),
what each implementation of a hook answered (``Outcome``), and the store as
a plugin sees it: the tables it declares (``StoreSchema``) and its way in
(``PluginStore``, what ``context.store`` is). Values and protocols of the
contract: the engine that makes them is elsewhere."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .records import record
from .._util.errors import report_failure

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine, MetaData

    # The one name of the contract from loading: Settings carries the
    # config layers and cuts them (UserScope, untrusted projects) when a
    # plugin reads its options, which is config loading's work.
    from .._loading.config import Settings

__all__ = ["HookDispatch", "Outcome", "PluginContext", "PluginStore", "StoreSchema"]

T = TypeVar("T")


@record(frozen=True, slots=True)
class Outcome:
    """One implementation's answer: ``value``, or the ``error`` it raised."""

    plugin: str
    value: Any = None
    error: Exception | None = None

    def __init__(self, plugin: str, value: Any = None, error: Exception | None = None) -> None:
        _set = object.__setattr__
        _set(self, "plugin", plugin)
        _set(self, "value", value)
        _set(self, "error", error)


class HookDispatch(Protocol):
    """The core's hook dispatch, as a ``PluginContext`` calls it (``each``,
    ``notify``, ``host_implements``)."""

    def implementations(self, name: str) -> list[Any]:
        ...

    def each(self, name: str, /, *, own_context: Callable[[str], Any] | None = None,
             **kwargs: Any) -> Iterator[Outcome]:
        ...


@dataclass(frozen=True, slots=True)
class PluginContext:
    """What a plugin's hooks learn about where they run: the ``context``
    argument of every hook that takes one, and ``ctx.plugin_context`` in a
    handler. One per plugin and toolbox.
    """

    name: str
    """The name the plugin is installed under (its entry point's name): its
    ``[plugins.<name>]`` table, the prefix of its tables and doctor lines.
    Compare ``tool.plugin`` or ``request.tool.plugin`` with it."""
    package: str
    """The module the plugin was loaded from (whose ``descriptions/`` folder is read)."""
    root: Path
    """The project root (resolved): ``--cwd``, or where the toolbox was loaded."""
    config_dir: Path
    """pegboard's user config folder (``$XDG_CONFIG_HOME/pegboard``, ``~/.config/pegboard`` on Linux)."""
    data_dir: Path
    """pegboard's data folder (``$XDG_DATA_HOME/pegboard``, ``~/.local/share/pegboard`` on Linux): keep
    the plugin's files in a folder of its name there."""
    settings: Settings
    """The merged configuration of every layer, read-only: ``settings.core`` (the core's tables),
    ``settings.plugin_table(name)``. A plugin's own table comes validated as ``config``."""
    hook: Any = field(default=None, compare=False, repr=False)
    """The plugin manager's hook relay (pluggy's ``pm.hook``): ``context.hook.<name>(...)`` for a
    ``firstresult`` hook; prefer ``each``/``notify``, which keep one plugin's failure its own."""
    watched: list[Path] = field(default_factory=list, compare=False)
    """The paths given to ``watch`` (read by the core's listing cache)."""
    stores: Callable[[str], PluginStore] | None = field(default=None, compare=False, repr=False)
    """The core's store factory behind ``store``; use ``store``."""

    @property
    def store(self) -> PluginStore:
        """This plugin's way into the store: its tables (declared by
        ``pegboard_store_schema``), transactions, ``await store.run(fn)``
        for async code. Opened on first use (docs/store.md)."""
        if self.stores is None:
            raise RuntimeError(f"plugin {self.name!r}: this context has no store")
        return self.stores(self.name)
    listing_only: bool = False
    """True when the toolbox only lists tools (``pegboard tools list``): start
    nothing and fetch nothing over the network; say what is missing with ``note``."""
    notes: list[str] = field(default_factory=list, compare=False)
    """The lines given to ``note``, which a tool listing prints."""
    on_tools_changed: Callable[[], None] | None = field(default=None, compare=False, repr=False)
    """The toolbox's callback behind ``tools_changed``; call ``tools_changed()``."""
    hooks: HookDispatch | None = field(default=None, compare=False, repr=False)
    """The core's dispatch helper behind ``each`` and ``notify``; use those."""
    host_names: set[str] = field(default_factory=set, compare=False, repr=False)
    """The names hosts are registered under; use ``host_implements``."""
    own_contexts: Callable[[str], PluginContext | None] | None = field(default=None, compare=False, repr=False)
    """The core's lookup behind ``each``'s ``context`` (each plugin's own); use ``each``."""

    def host_implements(self, hook: str) -> bool:
        """Whether a host (the embedding code's object or module given as
        ``Toolbox.load(host=...)`` or ``add_host``), not a plugin, implements
        ``hook``: a plugin listening to ``pegboard_event`` hears events, but
        only a host hears them for a person or a model."""
        if self.hooks is None:
            return False
        return any(impl.plugin_name in self.host_names for impl in self.hooks.implementations(hook))

    @property
    def project_trusted(self) -> bool:
        """Whether the person trusts the project root (``pegboard trust``, or
        the embedding host's answer). Until then, nothing the project's files
        hold may widen what pegboard does: a plugin that reads its own files
        from the checkout (skills, agents, server definitions) reads them only
        when this is true, and reports what it left out (``report_ignored``)."""
        return self.settings.trusted

    def report_ignored(self, source: str | os.PathLike[str], what: str) -> None:
        """Say that something the project holds was left out because the
        folder is not trusted: ``pegboard doctor``, ``pegboard config show``
        and the session's first result for the model list it, with how to
        trust the folder. ``source``: the file or folder; ``what``: a few
        words ("3 project skills")."""
        self.settings.report_ignored(source, what, "untrusted")

    def watch(self, path: Path) -> None:
        """Declare that this plugin's tool list depends on ``path`` (beyond
        config and ``PEGBOARD_*`` variables), so cached listings notice changes."""
        self.watched.append(path)

    def note(self, text: str) -> None:
        """A line for the person reading a tool listing: something this
        plugin would offer but does not yet (not an error)."""
        self.notes.append(text)

    def tools_changed(self) -> None:
        """This plugin's tools changed while the toolbox is in use: the
        toolbox calls ``pegboard_register_tools`` again and the catalogue of
        every live session follows (a plugin's hooks call this, never a tool
        mid-call's result)."""
        if self.on_tools_changed is not None:
            self.on_tools_changed()

    def each(self, hook: str, /, **kwargs: Any) -> list[Outcome]:
        """Call every implementation of ``hook`` (typically one your plugin
        declared with ``pegboard_add_hooks``) one at a time, in the core's
        order: each ``Outcome`` has the implementing plugin's name and its
        value or the exception it raised, so one plugin's bug hides nobody
        else's answer. No outcomes when no loaded plugin declares the hook.
        When the hook takes ``context`` and the call gives none, each
        implementation gets its own plugin's (a host's is None): that is how
        it learns the name it is installed under."""
        if self.hooks is None:
            return []
        own = None if "context" in kwargs else self.own_contexts
        return list(self.hooks.each(hook, own_context=own, **kwargs))

    def notify(self, hook: str, /, **kwargs: Any) -> None:
        """``each`` for a hook called for its effect: an implementation that
        raises is reported on stderr, and the others still run."""

        for outcome in self.each(hook, **kwargs):
            if outcome.error is not None:
                report_failure(f"{hook} of plugin {outcome.plugin!r}", outcome.error)

    def report(self, problem: str) -> None:
        """Report something an operator must fix that did not stop the plugin
        (a server entry that was skipped, a setting that was ignored): it is
        shown by ``pegboard doctor`` and keeps listings from being cached.
        Say the file, the key and what was expected. A problem reported
        again (registration runs again when a plugin's tools change) is
        kept once."""
        if problem not in self.settings.problems:
            self.settings.problems.append(problem)


@dataclass(frozen=True)
class StoreSchema:
    """The tables one component (a plugin, or the core) keeps in the store.

    ``metadata``: the component's own ``sqlalchemy.MetaData``; every table's
    name starts with ``<plugin>_``. ``version``: the schema these tables
    have now (start at 1). ``upgrades[n]``: a function taking a connection
    (inside the upgrade's transaction) from version ``n - 1`` to ``n``, for
    every version above 1; ``None`` for a version that only adds tables:
    whatever ``metadata`` holds and the database lacks is created after the
    steps ran.

    A table with a ``session_id`` column holds rows that belong to a
    session: deleting the session deletes them (after telling the plugin
    through ``pegboard_session_deleted``).
    """

    metadata: MetaData
    """The component's own ``sqlalchemy.MetaData``; every table named ``<plugin>_...``."""
    version: int = 1
    """The schema these tables have now, from 1 up."""
    upgrades: Mapping[int, Callable[[Connection], None] | None] = field(default_factory=dict)
    """``upgrades[n]``: the step from version ``n - 1`` to ``n`` (``fn(connection)``), or None
    for a version that only adds tables; one for every version above 1."""

    def problems(self, component: str) -> list[str]:
        """What is wrong with this schema for plugin ``component``, one line each (none: it is
        sound): a version below 1, a missing upgrade step, a table not named ``<component>_...``."""
        found = []
        if not isinstance(self.version, int) or self.version < 1:
            found.append(f"version must be an integer of at least 1, not {self.version!r}")
        else:
            missing = [n for n in range(2, self.version + 1) if n not in self.upgrades]
            if missing:
                found.append(f"no upgrade step for version {', '.join(map(str, missing))}")
        prefix = f"{component}_"
        for name in getattr(self.metadata, "tables", {}):
            if not name.startswith(prefix):
                found.append(f"table {name!r} must be named {prefix}...")
        return found


class PluginStore(Protocol):
    """One plugin's way into the store: ``context.store``, ``ctx.store`` in a
    tool handler (docs/store.md).

    Its tables (from ``pegboard_store_schema``) are created the first time
    ``engine``, ``begin`` or ``run`` is used; an older version in the
    database is upgraded only by ``ready()`` (``pegboard store migrate``).
    The engine is synchronous; async code uses ``await store.run(fn)``, which
    runs ``fn(connection)`` in one transaction on a worker thread so the
    event loop never waits on the database.
    """

    @property
    def component(self) -> str:
        """The plugin (or ``"pegboard"``, the core) whose tables these are."""
        ...

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"`` (or another SQLAlchemy dialect's name)."""
        ...

    @property
    def url(self) -> str:
        """The store's URL with any password hidden: safe to show."""
        ...

    @property
    def schema(self) -> StoreSchema | None:
        """What ``pegboard_store_schema`` declared (None: no tables)."""
        ...

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (synchronous), the tables created first; prefer ``begin`` or ``run``."""
        ...

    def describe_error(self, exc: BaseException) -> str:
        """A database error as one line for an operator, password hidden."""
        ...

    def exists(self) -> bool:
        """False for a SQLite file not created yet (a server database is assumed to exist)."""
        ...

    def ready(self) -> None:
        """Create this plugin's tables, or upgrade them from an older version, now."""
        ...

    def begin(self, *, read_only: bool = False) -> AbstractContextManager[Connection]:
        """``with store.begin() as conn:``: one transaction, committed at the end of the block,
        rolled back if it raises; ``read_only=True`` lets SQLite readers run beside a writer."""
        ...

    async def run(self, fn: Callable[..., T], *args: Any, read_only: bool = False) -> T:
        """``fn(connection, *args)`` in one transaction, on a worker thread."""
        ...
