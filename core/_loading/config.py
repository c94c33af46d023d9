"""Layered TOML configuration with provenance.

Layers, lowest first: built-in defaults, the user file, the project file,
the file named by ``--config`` / ``PEGBOARD_CONFIG``, and last the
system policy file, which no other layer can loosen. Permission rules are
collected from every layer; every other value is taken from the highest layer
that sets it, and ``Settings.source_of`` says which file that was.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .entry_points import quiet_pydantic_plugins

quiet_pydantic_plugins()  # before the first model: the pegboard command reads the entry points once

from .._util.folders import config_dir, data_dir, policy_path
from .scope import (
    Ignored,
    IgnoredKind,
    UserScope,
    deep_copy,
    leaf_paths,
    pop_path,
    untrusted_part,
    user_scope_paths,
)
from .._api.tools import Level
from .trust import TrustStore, project_grants_file
from .layer_cache import describe_file_type, read_toml
from .._util.nearest import nearest
from .._api.policy import policy_for

__all__ = [
    "ConfigError",
    "Layer",
    "Settings",
    "config_dir",
    "data_dir",
    "load_settings",
    "policy_path",
]

# The core's list of protected paths: the fs tools ask before writing them, and
# the shell's sandbox keeps them read-only (docs/permissions.md lists why each).
# Plugins add their own (pegboard_protected_paths: the mcp plugin's .mcp.json).
DEFAULT_PROTECTED = (
    ".git/**",
    ".gitmodules",
    ".pegboard/**",
    ".envrc",
    ".vscode/**",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".config/fish/**",
    ".gitconfig",
    ".ssh/**",
)


class ConfigError(Exception):
    """Configuration an operator must fix; each problem names file and key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        """One line per problem: the file, the key, what was expected."""
        super().__init__("\n".join(problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Empty lists are given as `[]`, not default_factory=list: pydantic copies a
# mutable default for each model, and building a field with default_factory=list
# parses list's text signature (inspect), about 2M instructions a field at every start-up.


class ToolsConfig(_Strict):
    """``[tools]``: an allow-list, a block list and permission overrides."""

    allow: list[str] | None = None
    """Offer only these tools (plus the core's own); unset: every tool."""
    block: list[str] = []
    """Tools never offered, with the tools that go with them (Bash takes Monitor and TaskStop);
    `pegboard tools list` says why each is absent."""
    permission: dict[str, Level] = Field(default_factory=dict)
    """The level a tool needs, overriding the one its plugin declares (`{ Bash = "unrestricted" }`)."""
    deferred_budget: int = Field(default=8_000, ge=500)
    """The most characters the listing of deferred tools the model reads may take; past it the listing
    names each plugin and MCP server with its tool count, and ToolSearch finds the tools."""


class PermissionsConfig(_Strict):
    """``[permissions]``: the mode and the rules (docs/permissions.md)."""

    mode: str = "default"
    """The session's mode or level (docs/glossary.md). A project's config cannot choose
    bypassPermissions or unrestricted (untrusted: nothing wider than the mode below it)."""
    allow: list[str] = []
    """Rules for calls that run without asking (`Bash(git log:*)`); every layer's add up."""
    ask: list[str] = []
    """Rules for calls that ask a person first, even where an allow rule matches; every layer's add up."""
    deny: list[str] = []
    """Rules for calls that never run; nothing turns a deny into an allow. Every layer's add up."""
    additional_directories: list[str] = []
    """Working directories besides the project root (relative to the root, `~` expanded)."""
    protected_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_PROTECTED))
    """Gitignore-style patterns of files a write always asks for (denied where nobody can be asked)."""
    disable_bypass_permissions: bool = False
    """`true` switches bypassPermissions and the unrestricted level off; meant for the system policy.
    A project may set it to true, never back to false."""

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        policy_for(value)
        return value


class BackgroundConfig(_Strict):
    """``[background]``: calls that run on while the model goes on."""

    enabled: bool = False
    """`true`: every tool gains a `background` parameter, and a call started with it runs as a task."""


class ResultsConfig(_Strict):
    """``[results]``: how big a tool's result may be."""

    max_chars: int = Field(default=30_000, ge=1_000)
    """Longer text results are saved to a file; the model gets a preview and the path."""


class StoreConfig(_Strict):
    """``[store]`` (user scope): where durable state lives (docs/store.md)."""

    url: str | None = None
    """A SQLAlchemy URL (`postgresql+psycopg://...`); unset: SQLite in pegboard's data folder.
    A password in it is never shown."""
    session_max_age_days: float = Field(default=30, ge=0)
    """Durable sessions unused this long are deleted (0: never)."""


class AuditConfig(_Strict):
    """``[audit]`` (user scope): the record of permission decisions (docs/store.md)."""

    enabled: bool = False
    """`true`: every permission decision is recorded in the store."""
    preview_chars: int = Field(default=200, ge=0, le=10_000)
    """Length of the redacted input preview kept per decision (0: the digest only)."""
    max_age_days: float = Field(default=90, ge=0)
    """Decisions older than this are deleted (0: kept)."""
    max_rows: int = Field(default=1_000_000, ge=0)
    """Only the newest this many decisions are kept (0: no limit)."""


class ClientConfig(_Strict):
    """``[clients.<id>]`` (user scope): what one signed-in client may do (docs/permissions.md)."""

    mode: str | None = None
    """The client's sessions run in this mode or level (unset: the host's); still clamped under the
    level its credential allows and the system policy's mode."""
    allow: list[str] = []
    """Rules for this client's calls that run without asking; with every layer's `[permissions]` rules."""
    ask: list[str] = []
    """Rules for this client's calls that ask a person first."""
    deny: list[str] = []
    """Rules for this client's calls that never run."""

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str | None) -> str | None:
        if value is not None:
            policy_for(value)
        return value


class CoreConfig(_Strict):
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    background: BackgroundConfig = Field(default_factory=BackgroundConfig)
    results: ResultsConfig = Field(default_factory=ResultsConfig)
    # Only the person's own files set these: a checkout must not point pegboard
    # at another database or switch the audit off.
    store: Annotated[StoreConfig, UserScope("it chooses where pegboard keeps its state")] = Field(
        default_factory=StoreConfig)
    audit: Annotated[AuditConfig, UserScope("it decides what is recorded of permission decisions")] = Field(
        default_factory=AuditConfig)
    clients: Annotated[dict[str, ClientConfig], UserScope("it decides what each signed-in client may do")] = Field(
        default_factory=dict)
    plugins: dict[str, dict[str, Any]] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Layer:
    """One config file as read (``path`` None for the built-in defaults), named by its place."""

    name: str
    path: Path | None
    data: Mapping[str, Any]

    @property
    def label(self) -> str:
        return str(self.path) if self.path else self.name

    @property
    def from_checkout(self) -> bool:
        """A file of the project's own folder (``.pegboard/``): it comes with
        the repository, not from the person."""
        return self.name in CHECKOUT_LAYERS


RULE_KEYS = ("allow", "ask", "deny")
CHECKOUT_LAYERS = ("project", "checkout grants")
UNCONFINED_MODES = ("bypassPermissions", "unrestricted")


@dataclass(slots=True)
class Settings:
    """The merged configuration and where each value came from
    (``context.settings``; ``toolbox.settings`` for hosts). Read it; a plugin's
    own table comes validated as ``config``."""

    root: Path
    """The project root (resolved)."""
    layers: list[Layer]
    """The config layers read, lowest first: defaults, user, grants, project, ``--config``, policy."""
    merged: dict[str, Any]
    """Every layer's tables merged, higher layers winning (the raw TOML data)."""
    provenance: dict[tuple[str, ...], str]
    """For each key path (``("plugins", "web", "timeout_s")``), the file that set it; see ``source_of``."""
    core: CoreConfig
    """The core's own tables, validated (``[permissions]``, ``[tools]``, ``[results]``, ...)."""
    problems: list[str] = field(default_factory=list)
    """Config problems an operator must fix that did not stop loading (``pegboard doctor`` lists
    them); a plugin adds its own with ``PluginContext.report``."""
    trusted: bool = False
    """Whether the person trusts the project root (``pegboard trust``, or the
    embedding host's answer): until then its files may only narrow."""
    ignored: list[Ignored] = field(default_factory=list)
    """What the project's files set or hold that was not applied, and why."""

    def report_ignored(self, source: str | os.PathLike[str], what: str, kind: IgnoredKind = "untrusted",
                       detail: str = "") -> None:
        """Record that ``what`` at ``source`` was left out (``kind``: ``"untrusted"``,
        ``"user scope"``, ``"outside"``), for doctor, ``config show`` and the model's first result;
        a plugin calls ``PluginContext.report_ignored``."""
        entry = Ignored(str(source), what, kind, detail)
        if entry not in self.ignored:
            self.ignored.append(entry)

    def plugin_options(self, name: str, model: type[BaseModel]) -> dict[str, Any]:
        """``[plugins.<name>]`` without ``enabled``, as the plugin's model
        should see it: an option marked ``UserScope`` is taken from the
        person's layers only; a project layer that set it is reported."""
        prefix = ("plugins", name)
        scoped = user_scope_paths(model) if isinstance(model, type) and issubclass(model, BaseModel) else {}
        changed = False
        for index, layer in enumerate(self.layers):
            if not layer.from_checkout or not scoped:
                continue
            data = deep_copy(layer.data)
            found = [(key, marker) for path, marker in scoped.items()
                     for key in leaf_paths((*prefix, *path), pop_path(data, (*prefix, *path)))]
            for key, marker in found:
                self.report_ignored(layer.label, format_key(key), "user scope", marker.why)
            if found:
                self.layers[index] = Layer(layer.name, layer.path, data)
                changed = True
        if changed:
            self.merged, self.provenance = _merge_layers(self.layers)
        table = self.plugin_table(name)
        table.pop("enabled", None)
        return table

    def source_of(self, *keys: str) -> str:
        """The file (or "defaults") that set ``keys``, or its nearest parent."""
        path = tuple(keys)
        while path:
            if path in self.provenance:
                return self.provenance[path]
            path = path[:-1]
        return "defaults"

    def plugin_table(self, name: str) -> dict[str, Any]:
        """``[plugins.<name>]`` as merged (raw, ``enabled`` included; a copy)."""
        table = self.merged.get("plugins", {}).get(name, {})
        return dict(table) if isinstance(table, Mapping) else {}

    def plugin_enabled(self, name: str) -> bool:
        """False when ``[plugins.<name>] enabled = false``."""
        return self.plugin_table(name).get("enabled", True) is not False

    def rules(self) -> Iterator[tuple[str, str, Layer]]:
        """Every permission rule from every layer: (behavior, text, layer)."""
        for layer in self.layers:
            perms = layer.data.get("permissions", {})
            if not isinstance(perms, Mapping):
                continue
            for behavior in RULE_KEYS:
                for text in perms.get(behavior, []) or []:
                    yield behavior, text, layer

    def working_dirs(self) -> tuple[Path, ...]:
        """The root and ``[permissions] additional_directories``, resolved, without repeats."""
        dirs = [self.root]
        for entry in self.core.permissions.additional_directories:
            p = Path(os.path.expanduser(entry))
            dirs.append(Path(os.path.realpath(p if p.is_absolute() else self.root / p)))
        return tuple(dict.fromkeys(dirs))


def layer_cache_dir() -> Path:
    """Where large config files are remembered parsed (``_layercache``):
    pegboard's own config folder, protected like the files themselves."""
    return config_dir() / "cache"


def _read_toml(path: Path, remember: bool = True) -> dict[str, Any]:
    # Here, not at the top: with no config file, nothing is parsed (tomllib
    # is about 1% of a permissions check).
    import tomllib

    try:
        return read_toml(path, layer_cache_dir() if remember else None)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{path}: not valid TOML: {exc}"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from None


def _merge(into: dict[str, Any], data: Mapping[str, Any], label: str,
           provenance: dict[tuple[str, ...], str], prefix: tuple[str, ...] = ()) -> None:
    for key, value in data.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value, label, provenance, path)
            provenance.setdefault(path, label)
            continue
        if isinstance(value, Mapping):
            into[key] = {}
            _merge(into[key], value, label, provenance, path)
            provenance[path] = label
            continue
        if prefix == ("permissions",) and key in RULE_KEYS:
            # Rules accumulate across layers; Settings.rules() keeps each one's file.
            into[key] = [*into.get(key, []), *value] if isinstance(value, list) else value
        else:
            into[key] = value
        provenance[path] = label


def find_layers(root: Path, explicit: Path | None, trusted: bool = True,
                ignored: list[Ignored] | None = None,
                replaced: Mapping[Path, Mapping[str, Any]] | None = None) -> list[Layer]:
    """The config files that apply, lowest precedence first (policy last).

    The project's own grants file (``.pegboard/granted.toml``, from before
    grants were kept outside the checkout) is read only when the folder is
    trusted. A file of the project's that resolves outside the project
    root (a ``.pegboard`` that is a link elsewhere) is not read. Both are
    added to ``ignored``, when given. ``replaced``: files read as holding
    this data instead of what they hold (``pegboard config set`` checks a
    change before writing it), there or not.
    """
    layers = [Layer("defaults", None, {})]
    checkout = root / ".pegboard"
    candidates: list[tuple[str, Path, bool]] = [
        ("user", config_dir() / "config.toml", False),
        # granted.toml holds rules remembered from approvals.
        ("user grants", config_dir() / "granted.toml", False),
        ("project", checkout / "config.toml", False),
        ("checkout grants", checkout / "granted.toml", False),
        ("project grants", project_grants_file(config_dir(), root), False),
    ]
    env = os.environ.get("PEGBOARD_CONFIG")
    chosen = explicit or (Path(env) if env else None)
    if chosen is not None:
        candidates.append(("explicit", chosen, True))
    candidates.append(("policy", policy_path(), False))
    for name, path, required in candidates:
        if replaced is not None and path in replaced:
            layers.append(Layer(name, path, replaced[path]))
            continue
        if name in CHECKOUT_LAYERS and os.path.lexists(path):
            real = os.path.realpath(path)
            if not real.startswith(str(root).rstrip("/") + "/"):
                if ignored is not None:
                    ignored.append(Ignored(str(path), "the whole file", "outside", f"it is {real}"))
                continue
        if not _is_config_file(name, path):
            if required:
                raise ConfigError([f"{path}: config file not found (named by --config or PEGBOARD_CONFIG)"])
            continue
        if name in CHECKOUT_LAYERS:
            if name == "checkout grants" and not trusted:
                if ignored is not None:
                    ignored.append(Ignored(str(path), "remembered approvals in the checkout", "untrusted"))
                continue
        # The system policy is parsed every time: a remembered copy would sit
        # where the person, not the operator, can write.
        layers.append(Layer(name, path, _read_toml(path, remember=name != "policy")))
    return layers


def _is_config_file(name: str, path: Path) -> bool:
    """Whether the config file ``path`` is there (False: nothing at that
    name). Anything else there (a folder, a FIFO, a link to nothing, a file
    that cannot be looked at) is a ``ConfigError`` naming it, never a layer
    skipped without a word: for the system policy, every deny rule would
    be gone, so no call runs until it is fixed."""

    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        if not os.path.islink(path):
            return False
        problem = "a symbolic link to nothing"
    except OSError as exc:
        problem = f"cannot read: {exc.strerror}"
    else:
        if stat.S_ISREG(st.st_mode):
            return True
        problem = f"{describe_file_type(st.st_mode)}, not a regular file"
    if name == "policy":
        raise ConfigError([f"{path}: {problem}: the system policy (PEGBOARD_POLICY) must be a TOML file or "
                           "absent; no call runs until this is fixed"])
    raise ConfigError([f"{path}: {problem}: a config file must be a TOML file or absent"])


def _merge_layers(layers: list[Layer]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    merged: dict[str, Any] = {}
    provenance: dict[tuple[str, ...], str] = {}
    for layer in layers:
        _merge(merged, layer.data, layer.label, provenance)
    policy = next((layer for layer in layers if layer.name == "policy"), None)
    if policy is not None:
        _apply_policy(merged, policy)
    return merged, provenance


def load_settings(root: Path, explicit: Path | None = None, *, trusted: bool | None = None,
                  replaced: Mapping[Path, Mapping[str, Any]] | None = None) -> Settings:
    """Read and validate every layer. ``ConfigError`` lists each problem.

    ``trusted``: whether the project root is trusted; None asks the
    person's trusted folders (``pegboard trust``). ``replaced``: config
    files read as holding this data (``find_layers``).
    """
    root = Path(os.path.realpath(root))
    if trusted is None:
        try:
            trusted = TrustStore(config_dir()).is_trusted(root)
        except ValueError as exc:
            raise ConfigError([str(exc)]) from None
    ignored: list[Ignored] = []
    layers = find_layers(root, explicit, trusted, ignored, replaced)
    # Every layer as written is checked first, so that a mistake is reported
    # even in what is then left out (a typo in an ignored table still fails).
    merged, provenance = _merge_layers(layers)
    try:
        core = CoreConfig.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, provenance, model=CoreConfig)) from None
    problems = _enabled_problems(merged, provenance)
    if problems:
        raise ConfigError(problems)
    for layer in layers:
        mode = layer.data.get("permissions", {}).get("mode") if isinstance(layer.data.get("permissions"), Mapping) \
            else None
        if layer.from_checkout and mode in UNCONFINED_MODES:
            # The project's config comes with the repository: a clone must not
            # be able to switch every prompt off for whoever opens it.
            raise ConfigError([f"{layer.label}: [permissions] mode = {mode!r}: a project's config cannot choose "
                               "a mode without prompts; choose it in your user config or with --mode"])
    narrowed = _project_parts(layers, trusted, ignored)
    if narrowed != layers:
        layers = narrowed
        merged, provenance = _merge_layers(layers)
        try:
            core = CoreConfig.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(describe_errors(exc, provenance, model=CoreConfig)) from None
    policy = next((layer for layer in layers if layer.name == "policy"), None)
    if core.permissions.disable_bypass_permissions and core.permissions.mode in ("bypassPermissions", "unrestricted"):
        problems.append(
            f"{provenance.get(('permissions', 'mode'), 'defaults')}: [permissions] mode = "
            f"{core.permissions.mode!r} is disabled by the system policy {policy.label if policy else ''}".rstrip()
        )
        raise ConfigError(problems)
    return Settings(root, layers, merged, provenance, core, problems, trusted, ignored)


def _project_parts(layers: list[Layer], trusted: bool, ignored: list[Ignored]) -> list[Layer]:
    """The layers with each checkout layer cut down to what it may set:
    untrusted, only what narrows (``untrusted_part``); trusted or not, no
    ``UserScope`` core option, and no switching bypass modes back on."""
    out: list[Layer] = []
    for index, layer in enumerate(layers):
        if not layer.from_checkout:
            out.append(layer)
            continue
        data = deep_copy(layer.data)
        dropped: list[tuple[tuple[str, ...], Any]] = []
        if not trusted:
            data, dropped = untrusted_part(data, _merge_layers(layers[:index])[0])
        for path, _ in dropped:
            ignored.append(Ignored(layer.label, format_key(path), "untrusted"))
        for path, marker in user_scope_paths(CoreConfig).items():
            for key in leaf_paths(path, pop_path(data, path)):
                ignored.append(Ignored(layer.label, format_key(key), "user scope", marker.why))
        perms = data.get("permissions")
        if isinstance(perms, dict) and perms.get("disable_bypass_permissions") is False:
            del perms["disable_bypass_permissions"]
            ignored.append(Ignored(layer.label, "[permissions] disable_bypass_permissions = false", "user scope",
                                   "a project may switch bypass modes off, not back on"))
        out.append(layer if data == layer.data else Layer(layer.name, layer.path, data))
    return out


def _enabled_problems(merged: Mapping[str, Any], provenance: Mapping[tuple[str, ...], str]) -> list[str]:
    """``[plugins.<name>] enabled`` is the core's own key: true or false, nothing
    else (``"false"`` or ``0`` must not leave a plugin on)."""
    problems = []
    for name, table in merged.get("plugins", {}).items():
        if isinstance(table, Mapping) and "enabled" in table and not isinstance(table["enabled"], bool):
            loc = ("plugins", name, "enabled")
            problems.append(f"{_source(loc, provenance)}: {format_key(loc)}: expected true or false, "
                            f"not {table['enabled']!r}")
    return problems


def _apply_policy(merged: dict[str, Any], policy: Layer) -> None:
    """The policy file's settings win over every other layer, and the user or
    project cannot re-enable what it protects: its protected paths add to
    the others' rather than replacing them."""
    perms = policy.data.get("permissions", {})
    if isinstance(perms, Mapping) and "protected_paths" in perms:
        others = merged.setdefault("permissions", {}).get("protected_paths", list(DEFAULT_PROTECTED))
        merged["permissions"]["protected_paths"] = list(dict.fromkeys([*others, *perms["protected_paths"]]))


_EXPECTED = {
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "int_parsing": "expected an integer",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "string_type": "expected a string",
    "list_type": "expected a list",
    "dict_type": "expected a table",
    "model_type": "expected a table",
    "extra_forbidden": "unknown key",
    "missing": "required key is missing",
}


def describe_errors(exc: ValidationError, provenance: Mapping[tuple[str, ...], str],
                    prefix: tuple[str, ...] = (), model: type[BaseModel] | None = None) -> list[str]:
    """Pydantic errors as ``<file>: [table] key: expected ...`` lines; an
    unknown key or table of ``model`` (the validated one) names the nearest
    it has ("did you mean 'allow'?")."""
    lines = []
    for err in exc.errors():
        loc = (*prefix, *(str(part) for part in err["loc"]))
        expected = _EXPECTED.get(err["type"]) or err["msg"]
        if err["type"] == "value_error":
            expected = err["msg"].removeprefix("Value error, ")
        key = format_key(loc)
        if err["type"] == "extra_forbidden":
            if isinstance(err.get("input"), Mapping):
                key, expected = f"[{'.'.join(loc)}]", "unknown table"
            if model is not None:
                expected = _unknown_key(model, tuple(str(part) for part in err["loc"]), err.get("input"), prefix)
        lines.append(f"{_source(loc, provenance)}: {key}: {expected}")
    return lines


def _unknown_key(model: type[BaseModel], loc: tuple[str, ...], value: Any, prefix: tuple[str, ...]) -> str:
    """"unknown key" (or table), with the nearest key the table at ``loc`` has."""

    table = isinstance(value, Mapping)
    found = nearest(loc[-1], model_keys(model, loc[:-1]))
    what = "unknown table" if table else "unknown key"
    if found is None:
        return what
    meant = f"[{'.'.join((*prefix, *loc[:-1], found))}]" if table else repr(found)
    return f"{what}; did you mean {meant}?"


def model_keys(model: type[BaseModel], loc: tuple[str, ...]) -> list[str]:
    """The keys the table at ``loc`` of ``model`` takes (its sub-model's
    fields), or none when ``loc`` is not a table of known keys."""
    current: Any = model
    for part in loc:
        if part.isdigit():
            continue
        fields = getattr(current, "model_fields", None)
        if not isinstance(fields, dict) or part not in fields:
            return []
        current = _table_model(fields[part].annotation)
        if current is None:
            return []
    fields = getattr(current, "model_fields", None)
    return list(fields) if isinstance(fields, dict) else []


def _table_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field's annotation holds (through Optional, Annotated, lists), if any."""
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _table_model(arg)
        if found is not None:
            return found
    return None


def _source(loc: tuple[str, ...], provenance: Mapping[tuple[str, ...], str]) -> str:
    path = loc
    while path:
        if path in provenance:
            return provenance[path]
        path = path[:-1]
    return "defaults"


def format_key(loc: tuple[str, ...]) -> str:
    """("plugins", "web", "timeout_s") -> "[plugins.web] timeout_s";
    ("permissions", "allow", "2") -> "[permissions] allow[2]"."""
    parts = list(loc)
    index = ""
    while parts and parts[-1].isdigit():
        index = f"[{parts.pop()}]" + index
    if len(parts) == 1:
        return parts[0] + index
    return f"[{'.'.join(parts[:-1])}] {parts[-1]}{index}"
