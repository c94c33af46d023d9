"""What an MCP server is, where it was defined, and whether it may run.

Light on purpose: the plugin's entry point imports this, so nothing here may
import ``mcp`` (about half a second of start-up) or anything that does.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pegboard import UserScope

__all__ = [
    "McpConfig",
    "OAuthConfig",
    "ServerConfig",
    "ServeConfig",
    "ServeOAuthConfig",
    "ServerSpec",
    "SERVER_NAME_RE",
    "check_server_name",
    "collect_servers",
    "expand_vars",
    "read_mcp_json",
    "split_tool_name",
    "tool_name",
]

# One `__` separates the parts of `mcp__<server>__<tool>`. A server name that
# held `__` (or ended in `_`) would make that split ambiguous, so names are
# runs of letters, digits and `-` joined by single underscores.
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")
PREFIX = "mcp__"


def check_server_name(name: str) -> str:
    if not SERVER_NAME_RE.match(name):
        raise ValueError(
            f"server name {name!r} is not allowed: use letters, digits, '-' and single '_' "
            "(no '__', not starting or ending with '_'), so that mcp__<server>__<tool> splits one way"
        )
    return name


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{server}__{tool}"


def split_tool_name(name: str) -> tuple[str, str | None] | None:
    """``mcp__srv__tool`` -> ("srv", "tool"); ``mcp__srv`` -> ("srv", None)."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX):].partition("__")
    if not server:
        return None
    return server, (tool if sep else None)


class OAuthConfig(BaseModel):
    """``[plugins.mcp.servers.<name>.oauth]``: how pegboard signs in to a url server.

    Without this table a server that answers 401 is signed in to with the
    authorization code flow, registering pegboard dynamically. Secrets are
    best given as ``${VARIABLE}``, expanded when the server is connected."""

    model_config = ConfigDict(extra="forbid")

    grant: Literal["authorization_code", "client_credentials", "identity_assertion"] = "authorization_code"
    """How to get a token: a person signs in in a browser (`authorization_code`), the client's own
    credentials (`client_credentials`), or an enterprise IdP's ID token exchanged (`identity_assertion`)."""
    client_id: str | None = None
    """The client's ID at the authorization server; unset: pegboard registers itself."""
    client_secret: str | None = None
    """The client's secret (best as `${VARIABLE}`)."""
    private_key_file: str | None = None
    """`client_credentials` with private_key_jwt: a PEM file holding the client's key."""
    signing_algorithm: str = "RS256"
    """The algorithm `private_key_file`'s assertions are signed with."""
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"
    """How `client_secret` is sent to the token endpoint."""
    client_metadata_url: str | None = None
    """A client ID metadata document (an https URL), used in place of registration where the
    authorization server supports them."""
    scope: str | None = None
    """The scope asked for, instead of what the server asks for."""
    # identity_assertion (enterprise-managed authorization, SEP-990): the
    # person's ID token from the enterprise IdP is exchanged there for an
    # ID-JAG (RFC 8693), which the MCP server's authorization server
    # (``issuer``, configured, never learned from the server) takes as a
    # jwt-bearer grant (RFC 7523).
    issuer: str | None = None
    """`identity_assertion`: the MCP server's authorization server (configured, never learned from the server)."""
    idp_token_endpoint: str | None = None
    """`identity_assertion`: the enterprise IdP's token endpoint, where the ID token is exchanged."""
    idp_client_id: str | None = None
    """`identity_assertion`: pegboard's client ID at the enterprise IdP."""
    id_token: str | None = None
    """`identity_assertion`: the person's ID token from the enterprise IdP (best as `${VARIABLE}`)."""
    redirect_port: int | None = Field(default=None, ge=1024, le=65535)
    """The loopback port of the sign-in redirect; unset: one is picked once per server and kept."""

    @model_validator(mode="after")
    def _complete(self) -> OAuthConfig:
        if self.grant == "client_credentials":
            if not self.client_id:
                raise ValueError("client_credentials needs client_id")
            if (self.client_secret is None) == (self.private_key_file is None):
                raise ValueError("client_credentials needs client_secret or private_key_file (one of them)")
        elif self.grant == "identity_assertion":
            missing = [k for k in ("client_id", "client_secret", "issuer", "idp_token_endpoint", "idp_client_id",
                                   "id_token") if not getattr(self, k)]
            if missing:
                raise ValueError(f"identity_assertion needs {', '.join(missing)}")
        elif self.private_key_file is not None:
            raise ValueError("private_key_file is for grant = \"client_credentials\"")
        return self


# Empty lists are given as `[]`, not default_factory=list: pydantic copies a
# mutable default for each model, and building a field with default_factory=list
# parses list's text signature (inspect), about 2M instructions a field at every start-up.


class ServerConfig(BaseModel):
    """One ``[plugins.mcp.servers.<name>]`` table (or one ``.mcp.json`` entry)."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    """A stdio server: the program to run (give this or `url`)."""
    args: list[str] = []
    """A stdio server's arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for a stdio server."""
    cwd: str | None = None
    """A stdio server's working directory (relative to the project)."""
    url: str | None = None
    """A Streamable HTTP server's URL (give this or `command`)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to a url server (best as `${VARIABLE}` for secrets)."""
    oauth: OAuthConfig | None = None
    """How pegboard signs in to a url server that asks for it."""
    enabled: bool = True
    """`false` keeps the server's tools out."""
    eager_load_tools: list[str] = []
    """Tools whose schema is sent from the start; the others are deferred (found with ToolSearch)."""
    defer: Literal["auto", "always", "never"] = "auto"
    """"auto": deferred but for `eager_load_tools`; "always": all deferred; "never": all sent with their schemas."""
    include_tools: list[str] | None = None
    """Only these tools (names or shell patterns such as `read_*`); unset: all."""
    exclude_tools: list[str] = []
    """Tools left out (names or shell patterns)."""
    protocol: Literal["auto", "legacy"] = "auto"
    """"legacy" keeps to the initialize handshake (2025-11-25 and older), for servers whose
    newer-protocol discovery misbehaves."""
    startup_timeout_s: float = Field(default=30.0, gt=0)
    """How long the server may take to start and list its tools."""
    tool_timeout_s: float = Field(default=600.0, gt=0)
    """How long one call may take."""

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (a Streamable HTTP server), not both")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd are for stdio servers; a url server takes headers")
        if self.command is not None and (self.headers or self.oauth is not None):
            raise ValueError("headers and oauth are for url servers")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def offers(self, tool: str) -> bool:
        """include_tools / exclude_tools, as exact names or shell-style patterns."""
        if self.include_tools is not None and not any(fnmatch.fnmatchcase(tool, p) for p in self.include_tools):
            return False
        return not any(fnmatch.fnmatchcase(tool, p) for p in self.exclude_tools)


Level = Literal["none", "read", "workspace", "unrestricted"]


class ServeOAuthConfig(BaseModel):
    """``[plugins.mcp.serve.oauth]``: `pegboard serve --http` as an OAuth 2.1 resource server of
    an organisation's authorization server (docs/plugins/mcp.md)."""

    model_config = ConfigDict(extra="forbid")

    issuer: str
    """The authorization server's issuer URL: tokens must name it (`iss`), and the protected
    resource metadata points clients at it."""
    jwks_url: str | None = None
    """Where the issuer publishes its signing keys: JWT access tokens are checked with them
    (give this or `introspection_url`)."""
    introspection_url: str | None = None
    """The issuer's token introspection endpoint (RFC 7662), for opaque access tokens."""
    introspection_client_id: str | None = None
    """pegboard's client ID at the introspection endpoint."""
    introspection_client_secret: str | None = None
    """Its secret, best as `${VARIABLE}` (expanded when serve starts)."""
    audience: str | None = None
    """The audience (`aud`) a token must be issued for; unset: `[plugins.mcp.serve] url`."""
    algorithms: list[str] = ["RS256", "ES256", "PS256", "EdDSA"]
    """The signature algorithms accepted for JWT access tokens (never `none`, never an HMAC)."""
    scopes: dict[str, Level] = Field(default_factory=dict)
    """Scope to permission level (`{ "pegboard:read" = "read" }`): a token gets the highest level
    of its scopes, a ceiling on its sessions; with any mapping, a token with none of them is refused
    (403). Empty: any valid token, no ceiling."""
    approver_scope: str | None = None
    """A token carrying this scope may answer pending calls on the team's approvals page."""
    leeway_s: float = Field(default=30.0, ge=0, le=300)
    """Clock skew allowed on `exp` and `nbf`."""

    @model_validator(mode="after")
    def _one_way(self) -> ServeOAuthConfig:
        if (self.jwks_url is None) == (self.introspection_url is None):
            raise ValueError("give jwks_url (JWT access tokens) or introspection_url (opaque ones), one of them")
        if self.introspection_url is not None and not self.introspection_client_id:
            raise ValueError("introspection_url needs introspection_client_id (and its secret)")
        bad = [a for a in self.algorithms if a.lower() == "none" or a.upper().startswith("HS")]
        if bad:
            raise ValueError(f"algorithms {bad}: an access token must be signed with the issuer's private key")
        return self


class ServeConfig(BaseModel):
    """``[plugins.mcp.serve]``: who may use `pegboard serve --http` and how a team's replicas share
    the work (docs/plugins/mcp.md)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    """The address clients use for the MCP endpoint (`https://mcp.example.com/mcp`, the load
    balancer's): the OAuth resource and audience, and where the protected resource metadata says it is."""
    api_keys: bool = False
    """Accept the API keys `pegboard serve keys add` made (kept hashed in the store)."""
    oauth: ServeOAuthConfig | None = None
    """Accept access tokens from an organisation's authorization server."""
    stateless: bool = False
    """Every request stands alone: a client's session lives in the store, keyed by who signed in,
    so replicas on one store serve its requests in any order (the handshake era's mid-call
    questions are then not available; see `approvals`)."""
    approvals: Literal["client", "approvers"] = "client"
    """Where a call that asks goes: `client`, to the MCP client's user (elicitation); `approvers`,
    to the people holding an approver credential, on the approvals page (`/approvals/`) or with
    `pegboard approvals`, while the call waits."""
    approval_timeout_s: float = Field(default=300.0, gt=0, le=86_400)
    """How long a call waits for an approver before it is denied."""
    replica_timeout_s: float = Field(default=15.0, ge=1, le=3_600)
    """A replica that has not said it is alive for this long is taken for dead: a call it waited on
    is taken over by the same call asked again, or refused after as long again."""

    @model_validator(mode="after")
    def _url_for_oauth(self) -> ServeConfig:
        if self.oauth is not None and not self.url:
            raise ValueError("oauth needs url: the address clients use, which tokens must be issued for")
        if self.url is not None and not self.url.startswith(("https://", "http://")):
            raise ValueError(f"url {self.url!r}: expected an http(s) URL of the MCP endpoint")
        return self


class McpConfig(BaseModel):
    """``[plugins.mcp]``."""

    model_config = ConfigDict(extra="forbid")

    serve: Annotated[ServeConfig, UserScope("it decides who may use pegboard serve and where their calls are asked")] \
        = Field(default_factory=ServeConfig)
    """`pegboard serve --http` for a team: sign-in, replicas, approvals."""
    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    """The MCP servers, by name."""
    read_mcp_json: bool = True
    """Read the project's `.mcp.json` too (the format editors and other agents share)."""
    log_level: Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] = "warning"
    """Servers' log messages at this level and above become `mcp.log` events."""

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, ServerConfig]) -> dict[str, ServerConfig]:
        for name in value:
            check_server_name(name)
        return value


@dataclass(frozen=True)
class ServerSpec:
    """A server as pegboard will run it, with where it came from."""

    name: str
    config: ServerConfig
    source: str
    project_defined: bool
    root: Path
    def_hash: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "def_hash", definition_hash(self.config))

    @property
    def cache_key(self) -> str:
        # A project's own server may mean something else in another project
        # (relative paths, the project's scripts), so its cache is per project.
        scope = str(self.root) if self.project_defined else ""
        raw = json.dumps([scope, self.name, self.def_hash])
        return hashlib.sha256(raw.encode()).hexdigest()[:24]


def definition_hash(config: ServerConfig) -> str:
    """What decides which program runs (or which URL is called): approvals and caches key on it."""
    what = {
        "command": config.command,
        "args": config.args,
        "env": config.env,
        "cwd": config.cwd,
        "url": config.url,
        "headers": config.headers,
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_vars(text: str, environ: dict[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}``, as .mcp.json files use them.

    Expanded when the server starts, not when config is read, so a secret in
    the environment never lands in the definition hash or the cache."""
    env = os.environ if environ is None else environ

    def sub(m: re.Match[str]) -> str:
        value = env.get(m.group(1))
        if value is None or value == "":
            return m.group(2) if m.group(2) is not None else ""
        return value

    return _VAR.sub(sub, text)


def read_mcp_json(path: Path) -> tuple[dict[str, ServerConfig], list[str]]:
    """The servers of one ``.mcp.json`` and the problems found (file and key named)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO put there by a checkout must not block us
            return {}, [f"{path}: not a regular file"]
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, []
    except (OSError, ValueError) as exc:
        return {}, [f"{path}: not valid JSON: {exc}"]
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if servers is None:
        return {}, []
    if not isinstance(servers, dict):
        return {}, [f"{path}: mcpServers: expected an object"]
    out: dict[str, ServerConfig] = {}
    problems: list[str] = []
    for name, entry in servers.items():
        try:
            check_server_name(name)
        except ValueError as exc:
            problems.append(f"{path}: mcpServers.{name}: {exc}")
            continue
        if not isinstance(entry, dict):
            problems.append(f"{path}: mcpServers.{name}: expected an object")
            continue
        entry = dict(entry)
        kind = entry.pop("type", None)
        if kind not in (None, "stdio", "http", "streamable-http", "streamableHttp"):
            problems.append(f"{path}: mcpServers.{name}.type: {kind!r} is not supported (stdio or http)")
            continue
        # Keys other tools add (descriptions, timeouts in their own units) are not ours to reject.
        known = {k: v for k, v in entry.items() if k in ServerConfig.model_fields}
        if isinstance(known.get("oauth"), dict):
            # Claude Code writes {"clientId", "callbackPort"}; ours are snake_case.
            given = known["oauth"]
            aliases = {"clientId": "client_id", "clientSecret": "client_secret", "callbackPort": "redirect_port"}
            known["oauth"] = {aliases.get(k, k): v for k, v in given.items()
                              if aliases.get(k, k) in OAuthConfig.model_fields}
        try:
            out[name] = ServerConfig.model_validate(known)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"])
                where = f"mcpServers.{name}" + (f".{loc}" if loc else "")
                problems.append(f"{path}: {where}: {err['msg'].removeprefix('Value error, ')}")
    return out, problems


# In the plugin's own folder: the projects' servers the user approved (_store.Approvals).
APPROVALS_FILE = "approvals.json"


def own_folder(context: Any) -> Path:
    """The plugin's folder in pegboard's data folder, named as the plugin is
    installed: approvals, recorded tool lists, sign-ins and server logs."""
    return Path(context.data_dir) / context.name


def collect_servers(config: McpConfig, root: Path, settings: Any = None, *,
                    plugin: str) -> tuple[list[ServerSpec], list[str]]:
    """Every server: the project's .mcp.json first, pegboard's own config over it.

    A server is project-defined (needs approval) when it comes from .mcp.json or
    from the project's ``.pegboard/config.toml``; the user's and the operator's
    files are trusted as they stand. ``.mcp.json`` is read only in a trusted
    project (``settings.trusted``; the core leaves an untrusted project's
    ``[plugins.mcp]`` out already), and its servers still need approval.
    ``plugin``: the name the plugin is installed under, whose table
    ``settings`` is asked where each server came from.
    """
    specs: dict[str, ServerSpec] = {}
    problems: list[str] = []
    if config.read_mcp_json and getattr(settings, "trusted", False) is True:
        path = root / ".mcp.json"
        found, problems = read_mcp_json(path)
        for name, server in found.items():
            specs[name] = ServerSpec(name, server, f"{path}", True, root)
    project_file = str(root / ".pegboard" / "config.toml")
    for name, server in config.servers.items():
        key = ("plugins", plugin, "servers", name)
        source = settings.source_of(*key) if settings is not None else "config"
        # Any key the project file set makes the server the project's: a
        # project must not get a user's trusted server to run its command.
        labels = {label for path, label in getattr(settings, "provenance", {}).items() if path[:4] == key}
        specs[name] = ServerSpec(name, server, source, project_file in labels or source == project_file, root)
    return list(specs.values()), problems
