"""The kit behind ``pegboard.testing``: an isolated environment, a project
folder, toolboxes and sessions over plugins that need not be installed, a
host that answers asks from a script, decisions without running, the CLI.

pytest loads ``pegboard.testing`` as a plugin (the ``pytest11`` entry point)
wherever pegboard is installed; nothing here is used until a test asks for
one of its fixtures, none of which is autouse: a project makes them so in
its conftest (``docs/testing.md``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import pytest

from .._api.decisions import Answer, Decision, PermissionRequest
from .._api.hookspecs import hookimpl
from .._engine.arguments import decide_call
from .._cli.main import cli
from .._cli.shared import CLIState
from .._cli.commands.store import migrate
from .._util.folders import config_dir, data_dir
from .._engine.plugin_check import check_plugin
from .._engine.toolbox import Toolbox
from .._loading.trust import TrustStore

if TYPE_CHECKING:
    from click.testing import Result

    from .._engine.plugin_check import PluginCheck
    from .._engine.session import Session
    from .._api.tools import ToolResult

__all__ = [
    "Asked",
    "CLIRunner",
    "PegboardEnv",
    "PluginLoadError",
    "Project",
    "ScriptedHost",
    "StoreUpgrade",
    "call",
    "decide",
    "isolate",
    "load_toolbox",
    "pegboard_call",
    "pegboard_check",
    "pegboard_cli",
    "pegboard_decide",
    "pegboard_env",
    "pegboard_host",
    "pegboard_installed",
    "pegboard_load",
    "pegboard_plugins",
    "pegboard_project",
    "pegboard_session",
    "pegboard_toolbox",
    "pegboard_upgrade",
]

# Variables that would make a test read the person's own setup.
_XDG = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")


# --- the environment ----------------------------------------------------------


@dataclass
class PegboardEnv:
    """pegboard's folders for one test, all under ``home`` (made by
    ``isolate``): nothing of the person's own config, data, cache, trusted
    folders, one-file plugins or system policy is read or written."""

    home: Path
    """The test's own folder all the others are under."""
    config_dir: Path
    """pegboard's user config folder (``config.toml``, ``plugins/``, trusted folders)."""
    data_dir: Path
    """pegboard's data folder (sessions' files, the store's SQLite file)."""
    cache_dir: Path
    """``XDG_CACHE_HOME`` for the test."""
    policy_path: Path
    """The system policy file's place (``PEGBOARD_POLICY``); absent until ``policy`` writes it."""

    def user_config(self, text: str) -> Path:
        """Append ``text`` (dedented) to the user's ``config.toml``."""
        path = self.config_dir / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text))
        return path

    def policy(self, text: str) -> Path:
        """Write the system policy file (what an administrator enforces)."""
        self.policy_path.parent.mkdir(parents=True, exist_ok=True)
        self.policy_path.write_text(textwrap.dedent(text), encoding="utf-8")
        return self.policy_path

    def local_plugin(self, name: str, source: str) -> Path:
        """Write a one-file plugin ``<config dir>/plugins/<name>.py``."""
        folder = self.config_dir / "plugins"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.py"
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return path


def isolate(home: Path, monkeypatch: pytest.MonkeyPatch) -> PegboardEnv:
    """Point pegboard's folders into ``home``: ``XDG_*`` set (and ``HOME``
    where the platform's folders ignore XDG), every ``PEGBOARD_*`` variable
    unset, ``PEGBOARD_POLICY`` at a file of the test's own. Raises when
    pegboard's folders still land outside ``home``."""

    for name in [n for n in os.environ if n.startswith("PEGBOARD_")]:
        monkeypatch.delenv(name)
    for name in _XDG:
        monkeypatch.setenv(name, str(home / name[4:-5].lower()))
    if sys.platform != "linux":  # platformdirs reads XDG_* on Linux only
        monkeypatch.setenv("HOME", str(home))
    policy = home / "policy.toml"
    monkeypatch.setenv("PEGBOARD_POLICY", str(policy))
    env = PegboardEnv(home, config_dir(), data_dir(), home / "cache", policy)
    for folder in (env.config_dir, env.data_dir):
        if not folder.is_relative_to(home):
            raise RuntimeError(f"pegboard's folder {folder} is outside the test's home {home}: not isolated")
    return env


@dataclass
class Project:
    """A project folder (the toolbox's ``cwd``) and its ``.pegboard/config.toml``."""

    root: Path
    """The project folder."""

    def config(self, text: str, *, trusted: bool = True) -> Path:
        """Write ``.pegboard/config.toml`` (dedented). The folder is trusted
        (as ``pegboard trust`` does) so the config applies, unless
        ``trusted=False``: an untrusted project's config may only narrow."""
        path = self.root / ".pegboard" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        if trusted:
            self.trust()
        return path

    def trust(self) -> Path:
        """Trust the folder as ``pegboard trust`` does (its files may then widen, not only narrow)."""

        TrustStore(config_dir()).trust(self.root)
        return self.root

    def file(self, relative: str, text: str = "") -> Path:
        """Write a file in the project (folders made as needed)."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path


# --- the host -------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """One ask the host heard, and what it answered."""

    request: PermissionRequest
    """The call as the host was asked about it."""
    decision: Decision
    """The ask: its reason, suggestions and previews."""
    answer: Answer
    """What the host answered."""

    @property
    def tool(self) -> str:
        """The name of the tool asked about."""
        return self.request.tool.name


AnswerLike = Union[Answer, bool, str, Callable[[PermissionRequest, Decision], Answer]]


class ScriptedHost:
    """A host (``Toolbox.load(host=...)``) that records every ask and answers
    each from a script, in order: an ``Answer``, True/"allow", False/"deny",
    "session"/"project"/"user" (allow and remember there), or a function of
    ``(request, decision)`` returning an ``Answer``. An ask past the end of
    the script is denied with a message saying so, and kept in
    ``unexpected``. It also records events and forms (answered from
    ``forms``, else declined)."""

    def __init__(self, *answers: AnswerLike) -> None:
        self.script: list[AnswerLike] = list(answers)
        """The answers still to give, in order."""
        self.asks: list[Asked] = []
        """Every ask heard, with its answer."""
        self.unexpected: list[Asked] = []
        """Asks heard after the script ran out (denied)."""
        self.events: list[tuple[str, dict[str, Any]]] = []
        """Every ``(kind, data)`` event the session emitted."""
        self.forms: list[dict[str, Any]] = []
        """Contents to accept forms with, in order; none left: a form is declined."""
        self.elicited: list[tuple[str, str, dict[str, Any]]] = []
        """Every form put: ``(source, message, schema)``."""

    def answer(self, *answers: AnswerLike) -> ScriptedHost:
        """Add answers to the end of the script."""
        self.script.extend(answers)
        return self

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        """The data of every event of ``kind``, in order."""
        return [data for k, data in self.events if k == kind]

    @hookimpl
    def pegboard_ask(self, request: PermissionRequest, decision: Decision) -> Answer:
        """Answer from the script (an ask past its end is denied and kept in ``unexpected``)."""
        if not self.script:
            answer = Answer(allow=False, message=f"the test's host had no answer scripted for this ask "
                                                 f"({request.tool.name}: {decision.reason})")
            self.unexpected.append(Asked(request, decision, answer))
        else:
            answer = _answer(self.script.pop(0), request, decision)
        self.asks.append(Asked(request, decision, answer))
        return answer

    @hookimpl
    def pegboard_event(self, kind: str, data: dict[str, Any]) -> None:
        """Record the event in ``events``."""
        self.events.append((kind, dict(data)))

    @hookimpl
    def pegboard_elicit(self, source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """Record the form in ``elicited``; accept it with the next of ``forms``, else decline."""
        self.elicited.append((source, message, schema))
        if self.forms:
            return {"action": "accept", "content": self.forms.pop(0)}
        return {"action": "decline"}


def _answer(given: AnswerLike, request: PermissionRequest, decision: Decision) -> Answer:
    if isinstance(given, Answer):
        return given
    if given is True or given == "allow":
        return Answer(allow=True)
    if given is False or given == "deny":
        return Answer(allow=False)
    if given in ("session", "project", "user"):
        return Answer(allow=True, remember=given)  # type: ignore[arg-type]
    if callable(given):
        return given(request, decision)
    raise ValueError(f"cannot answer an ask with {given!r}")


# --- toolboxes, sessions, decisions --------------------------------------------


class PluginLoadError(AssertionError):
    """A plugin the test handed over did not load (its error says why)."""


def load_toolbox(plugins: Mapping[str, object] | None = None, *, cwd: str | os.PathLike[str] | None = None,
                 installed: Sequence[str] | None = (), host: object | None = None,
                 config: str | os.PathLike[str] | None = None, trust_project: bool | None = None,
                 strict: bool = True) -> Toolbox:
    """A toolbox with ``plugins`` (by name: a module, an object with hook
    implementations, or an import string; nothing needs installing) and of
    the installed plugins only ``installed`` (none by default; None for all
    of them). ``strict``: a handed-over plugin that fails to load raises
    ``PluginLoadError`` with its error, instead of leaving a toolbox
    without its tools."""

    toolbox = Toolbox.load(cwd=cwd, config=config, plugins=None if installed is None else list(installed),
                           host=host, trust_project=trust_project, extra_plugins=dict(plugins or {}))
    if strict:
        failed = [f"{name}: {toolbox.records[name].error}" for name in plugins or ()
                  if name in toolbox.records and toolbox.records[name].error]
        if failed:
            raise PluginLoadError("plugins did not load: " + "; ".join(failed))
    return toolbox


_runners: weakref.WeakKeyDictionary[Session, asyncio.Runner] = weakref.WeakKeyDictionary()


def _run(session: Session, coroutine: Any) -> Any:
    """Run ``coroutine`` on the session's own event loop, one for its life,
    so that what a call leaves running (background tasks, locks) is there
    for the next call."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coroutine.close()
        raise RuntimeError("call() and decide() are for plain test functions; in an async test, "
                           "await session.call(...) or session.decide(...)")
    runner = _runners.get(session)
    if runner is None:
        runner = _runners[session] = asyncio.Runner()
    return runner.run(coroutine)


def _session_of(target: Session | Toolbox) -> Session:
    return target.session() if isinstance(target, Toolbox) else target


def call(target: Session | Toolbox, name: str, input: Any = None, **options: Any) -> ToolResult:
    """``session.call(name, input)`` from a plain test function (a toolbox:
    in a new session of it). ``options`` go to ``Session.call``."""
    session = _session_of(target)
    return _run(session, session.call(name, input, **options))


def decide(target: Session | Toolbox, name: str, input: Any = None) -> Decision:
    """The permission decision for a call, without running it or asking
    anyone (``Session.decide``): "allow", "deny" or "ask"."""

    return decide_call(_session_of(target), name, input)


def close(session: Session) -> None:
    """Close ``session`` (``aclose``) on its own loop, then the loop."""
    runner = _runners.pop(session, None)
    try:
        if not session.closed:
            (runner or asyncio.Runner()).run(session.aclose())
    finally:
        if runner is not None:
            runner.close()


# --- the command line ----------------------------------------------------------


@dataclass
class CLIRunner:
    """``pegboard ARGS`` in-process (click's runner) in the test's project,
    with the test's plugins: ``runner("tools", "list")`` returns click's
    ``Result`` (``exit_code``, ``stdout``, ``stderr``, ``output``)."""

    root: Path
    """The project folder commands run in (``--cwd``)."""
    plugins: Mapping[str, object] = field(default_factory=dict)
    """Plugins that need not be installed, by name (as ``Toolbox.load(extra_plugins=...)``)."""
    installed: Sequence[str] | None = ()
    """Which installed plugins load beside them: none by default, None for all."""

    def __call__(self, *args: str, input: str | None = None, cwd: Path | None = None) -> Result:
        from click.testing import CliRunner

        state = CLIState(_given=dict(self.plugins), _only=None if self.installed is None else list(self.installed))
        return CliRunner().invoke(cli, ["--cwd", str(cwd or self.root), *args], input=input, obj=state,
                                  catch_exceptions=False)


# --- store upgrades ------------------------------------------------------------


@dataclass
class StoreUpgrade:
    """A plugin's store upgrade tried in one process, as an operator meets it:
    a database made by the plugin's old version (``old``), then the new
    version loaded against the same store (``new``), upgraded by what
    ``pegboard store migrate`` does (or left behind, to see it refused).

    Hand each version over as its own module (or object with hook
    implementations) declaring ``pegboard_store_schema`` at its version;
    the store is the test's (``[store] url`` of its user config, else the
    SQLite file in its data dir), so the same test runs on PostgreSQL with a
    ``[store] url`` of your own."""

    load: Callable[..., Toolbox]
    """How each toolbox is loaded (``pegboard_load``: the test's project, host and installed plugins)."""

    def old(self, plugins: Mapping[str, object], **options: Any) -> Toolbox:
        """A toolbox on the plugins' old versions, their tables made at the
        old schema now; fill them through it (``context_for(name).store``)."""
        toolbox = self.load(plugins=plugins, **options)
        self.migrate(toolbox)
        return toolbox

    def new(self, plugins: Mapping[str, object], *, migrate: bool = True, **options: Any) -> Toolbox:
        """A toolbox on the plugins' new versions, against the same store;
        ``migrate``: upgraded as ``pegboard store migrate`` does, else left
        behind (then every transaction on its tables is refused, naming
        ``pegboard store migrate``)."""
        toolbox = self.load(plugins=plugins, **options)
        if migrate:
            self.migrate(toolbox)
        return toolbox

    def migrate(self, toolbox: Toolbox) -> dict[str, tuple[int | None, int | None]]:
        """``pegboard store migrate`` for ``toolbox``'s components: each one's
        version in the database before and after."""

        return migrate(toolbox)

    def versions(self, toolbox: Toolbox) -> dict[str, int]:
        """Each component's schema version in the database (``pegboard store info``)."""
        return toolbox.plugins.stores.store.versions()


# --- fixtures -----------------------------------------------------------------


@pytest.fixture
def pegboard_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> PegboardEnv:
    """pegboard's folders and variables for this test alone (``isolate``)."""
    return isolate(tmp_path_factory.mktemp("home"), monkeypatch)


@pytest.fixture
def pegboard_project(pegboard_env: PegboardEnv, tmp_path: Path) -> Project:
    """An empty project folder, ``tmp_path / "project"``: ``.config(text)`` gives it a config."""
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    return Project(root)


@pytest.fixture
def pegboard_plugins() -> Mapping[str, object]:
    """The plugins under test, by name (none here): override it in your
    conftest or test module, ``return {"greet": greet_module}``."""
    return {}


@pytest.fixture
def pegboard_installed() -> Sequence[str] | None:
    """Which installed plugins load beside ``pegboard_plugins``: none here
    (your plugin alone); override with names, or None for all of them."""
    return ()


@pytest.fixture
def pegboard_host() -> ScriptedHost:
    """The host the toolbox fixtures load with: script its answers
    (``pegboard_host.answer("allow")``) before the call that asks."""
    return ScriptedHost()


@pytest.fixture
def pegboard_load(pegboard_env: PegboardEnv, pegboard_project: Project, pegboard_plugins: Mapping[str, object],
                  pegboard_installed: Sequence[str] | None, pegboard_host: ScriptedHost) -> Callable[..., Toolbox]:
    """``pegboard_load(config=None, **options)``: write the project's config
    (trusted) when given, then ``load_toolbox`` with the test's plugins,
    host and project; ``options`` override ``load_toolbox``'s."""

    def load(config: str | None = None, **options: Any) -> Toolbox:
        if config is not None:
            pegboard_project.config(config)
        plugins = options.pop("plugins", pegboard_plugins)
        arguments: dict[str, Any] = {"cwd": pegboard_project.root, "installed": pegboard_installed,
                                     "host": pegboard_host, **options}
        return load_toolbox(plugins, **arguments)

    return load


@pytest.fixture
def pegboard_toolbox(pegboard_load: Callable[..., Toolbox]) -> Toolbox:
    """A toolbox of the test's plugins in the test's project."""
    return pegboard_load()


@pytest.fixture
def pegboard_session(pegboard_toolbox: Toolbox) -> Iterator[Session]:
    """A session of ``pegboard_toolbox`` in its configured mode, closed after the test."""
    session = pegboard_toolbox.session()
    yield session
    close(session)


@pytest.fixture
def pegboard_call(pegboard_session: Session) -> Callable[..., ToolResult]:
    """``pegboard_call(name, input)``: ``call`` in ``pegboard_session``."""
    return lambda name, input=None, **options: call(pegboard_session, name, input, **options)


@pytest.fixture
def pegboard_decide(pegboard_session: Session) -> Callable[..., Decision]:
    """``pegboard_decide(name, input)``: ``decide`` in ``pegboard_session``."""
    return lambda name, input=None: decide(pegboard_session, name, input)


@pytest.fixture
def pegboard_cli(pegboard_project: Project, pegboard_plugins: Mapping[str, object],
                 pegboard_installed: Sequence[str] | None) -> CLIRunner:
    """``pegboard_cli("tools", "list")``: the command line in the test's project with its plugins."""
    return CLIRunner(pegboard_project.root, pegboard_plugins, pegboard_installed)


@pytest.fixture
def pegboard_check(pegboard_project: Project, pegboard_plugins: Mapping[str, object]) -> Callable[..., PluginCheck]:
    """``pegboard_check(name)``: ``pegboard.check_plugin`` on one of the
    test's plugins (or an installed one), in the test's project."""

    def check(name: str, **options: Any) -> PluginCheck:
        return check_plugin(name, pegboard_plugins.get(name), cwd=pegboard_project.root, **options)

    return check


@pytest.fixture
def pegboard_upgrade(pegboard_load: Callable[..., Toolbox]) -> StoreUpgrade:
    """``pegboard_upgrade.old({"notes": v1})`` then ``.new({"notes": v2})``:
    a store upgrade in one process (``StoreUpgrade``)."""
    return StoreUpgrade(pegboard_load)
