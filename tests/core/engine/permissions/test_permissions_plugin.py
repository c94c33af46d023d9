"""A small third-party plugin for the permission tests, and the helpers that
install it the way a real plugin arrives: through an entry point.

``permtest`` registers tools shaped like the built-ins (Read, Write, Bash,
WebFetch, an MCP tool, Agent) with votes and rule matchers similar to what
the real fs, shell, web and mcp plugins do, so the engine is tested against
the protocol rather than against one plugin's details. The module is
written into ``tmp_path/site`` with a ``permtest-0.1.dist-info`` and
discovered by ``importlib.metadata``.
"""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from _trusted import trust
from pegboard import Toolbox

PLUGIN_NAME = "permtest"
MODULE = "permtest_plugin"

PLUGIN_SOURCE = r'''
"""Tools shaped like Read/Write/Bash/WebFetch/mcp__srv__tool/Agent, for tests."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pathspec
from pydantic import BaseModel

from pegboard import Tool, ToolNamespace, Vote, hookimpl
from pegboard import InputFieldMatcher

FILE_COMMANDS = {"touch", "mkdir", "mv", "cp"}
READ_COMMANDS = {"ls", "cat", "pwd"}


class PathIn(BaseModel):
    file_path: str


class WriteIn(BaseModel):
    file_path: str
    content: str = ""


class BashIn(BaseModel):
    command: str


class UrlIn(BaseModel):
    url: str


class McpIn(BaseModel):
    x: int = 0


class AgentIn(BaseModel):
    subagent_type: str
    prompt: str = ""


def read(args, ctx):
    return Path(args.file_path).read_text()


def write(args, ctx):
    Path(args.file_path).write_text(args.content)
    return "written"


def echo(args, ctx):
    return "ran"


@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Read", handler=read, input_model=PathIn, read_only=True, permission="read"))
    register(Tool(name="Write", handler=write, input_model=WriteIn, permission="workspace"))
    register(Tool(name="Bash", handler=echo, input_model=BashIn, permission="unrestricted"))
    register(Tool(name="WebFetch", handler=echo, input_model=UrlIn, read_only=True, permission="read"))
    register(Tool(name="mcp__srv__tool", handler=echo, input_model=McpIn, permission="unrestricted"))
    register(Tool(name="mcp__srv__other", handler=echo, input_model=McpIn, permission="unrestricted"))
    register(Tool(name="Agent", handler=echo, input_model=AgentIn, permission="read"))
    # A changing tool whose plugin asks (like a notification or a push), and
    # one whose plugin has no opinion (like a to-do list): both offered at read.
    register(Tool(name="Notify", handler=echo, input_model=McpIn, permission="read"))
    register(Tool(name="Todo", handler=echo, input_model=McpIn, permission="read"))
    register(Tool(name="Monitor", handler=echo, input_model=BashIn, permission="unrestricted",
                  metadata={"rule_names": ("Bash",)}))


def _bash_vote(request):
    command = str(request.input.get("command", "")).strip()
    words = command.split()
    if not words:
        return Vote.deny("empty command")
    if any(c in command for c in ";|&`$><"):
        return Vote.ask(f"{command!r} is a compound command", suggest=(f"Bash({words[0]}:*)",))
    if words[0] in READ_COMMANDS:
        return Vote.allow("read-only command")
    if words[0] in FILE_COMMANDS:
        for word in words[1:]:
            vote = request.path_vote(word, write=True)
            if vote.decision != "allow":
                return vote
        return Vote.allow("file command inside the working directories")
    return Vote.ask(f"{words[0]} is not known to be read-only", suggest=(f"Bash({words[0]}:*)",))


@hookimpl
def pegboard_tool_namespaces():
    # its mcp__srv__* tools form a group, as the mcp plugin declares for its servers
    return [ToolNamespace("mcp", label="MCP server", unknown_hint="is it approved and listed? `pegboard mcp list`")]


@hookimpl
def pegboard_protected_paths():
    # as the mcp plugin protects the servers a project would start
    return [".mcp.json"]


@hookimpl
def pegboard_permission(request):
    tool = request.tool
    if tool.plugin != "permtest":
        return None
    if tool.name == "Read":
        return request.path_vote(request.input["file_path"], write=False)
    if tool.name == "Write":
        return request.path_vote(request.input["file_path"], write=True)
    if tool.name in ("Bash", "Monitor"):
        return _bash_vote(request)
    if tool.name == "WebFetch":
        host = urlsplit(str(request.input.get("url", ""))).hostname or ""
        if host in ("localhost", "127.0.0.1"):
            return Vote.deny(f"{host} is a loopback address")
        return Vote.ask(f"WebFetch wants to read {host}", suggest=(f"WebFetch(domain:{host})",))
    if tool.name.startswith("mcp__"):
        return Vote.ask(f"{tool.name} is an MCP tool")
    if tool.name == "Agent":
        return Vote.allow("sub-agents run under a clamped policy")
    if tool.name == "Notify":
        return Vote.ask("Notify sends a message to people")
    return None


class PathMatcher:
    def __init__(self, rule):
        spec = rule.specifier.strip()
        if spec.startswith("//"):
            self.base, pattern = Path("/"), spec[2:]
        elif spec.startswith("~/"):
            self.base, pattern = Path(os.path.realpath(os.path.expanduser("~"))), spec[2:]
        else:
            self.base, pattern = Path(os.path.realpath(rule.base_dir)), spec.removeprefix("./").lstrip("/")
        if not pattern or ".." in pattern.split("/"):
            raise ValueError(f"{spec!r} is not a usable path pattern")
        self.pattern = pattern
        self.spec = pathspec.GitIgnoreSpec.from_lines([pattern])
        self.behavior = rule.behavior

    @classmethod
    def combine(cls, matchers):
        return CombinedPaths(matchers)

    def path_input(self, path):
        # the input of a call on path: "always allow" previews count the files a rule covers
        return {"file_path": path}

    def matches(self, request):
        raw = request.input.get("file_path")
        if not isinstance(raw, str):
            return self.behavior != "allow"
        try:
            rel = request.resolve(raw).relative_to(self.base)
        except ValueError:
            return False
        return rel.as_posix() != "." and self.spec.match_file(rel.as_posix())


class CombinedPaths:
    """All path rules of one tool and behavior: per base and per literal
    first path component, one regular expression whose alternatives are the
    rules' patterns (the name of the group that matched says which rule)."""

    def __init__(self, matchers):
        self.behavior = matchers[0].behavior
        buckets = {}
        for index, m in enumerate(matchers):
            pattern = m.spec.patterns[0]
            if pattern.regex is None or not pattern.include:
                raise ValueError("only plain patterns combine")  # the engine then goes one by one
            body = re.sub(r"\(\?P<\w+>", "(?:", pattern.regex.pattern)
            first, slash, _ = m.pattern.lstrip("/").partition("/")
            key = first if slash and not any(c in first for c in "*?[") else None
            buckets.setdefault(str(m.base).rstrip("/") + "/", {}).setdefault(key, []).append(
                f"(?P<r{index}>{body})")
        self.bases = [(prefix, {key: re.compile("|".join(parts)) for key, parts in by_key.items()})
                      for prefix, by_key in buckets.items()]

    def first_match(self, request):
        raw = request.input.get("file_path")
        if not isinstance(raw, str):
            return 0 if self.behavior != "allow" else None
        real = request.resolve_str(raw)  # the text, without building a Path
        for prefix, regexes in self.bases:
            if not real.startswith(prefix):
                continue
            rel = real[len(prefix):]
            for key in (rel.partition("/")[0], None):
                regex = regexes.get(key)
                hit = regex.match(rel) if regex is not None else None
                if hit is not None:
                    return int(hit.lastgroup[1:])
        return None


class BashMatcher:
    def __init__(self, rule):
        spec = rule.specifier.strip()
        self.prefix = spec.endswith(":*")
        self.text = spec[:-2] if self.prefix else spec
        if not self.text:
            raise ValueError("empty command pattern")

    @classmethod
    def combine(cls, matchers):
        return CombinedCommands(matchers)

    def matches(self, request):
        command = str(request.input.get("command", "")).strip()
        if self.prefix:
            return command == self.text or command.startswith(self.text + " ")
        return command == self.text


class CombinedCommands:
    def __init__(self, matchers):
        self.exact, self.prefixes = {}, {}
        for index, m in enumerate(matchers):
            (self.prefixes if m.prefix else self.exact).setdefault(m.text, index)

    def first_match(self, request):
        command = str(request.input.get("command", "")).strip()
        if command in self.exact:
            return self.exact[command]
        if command in self.prefixes:
            return self.prefixes[command]
        at = command.find(" ")
        while at != -1:
            if command[:at] in self.prefixes:
                return self.prefixes[command[:at]]
            at = command.find(" ", at + 1)
        return None


class DomainMatcher:
    def __init__(self, rule):
        spec = rule.specifier.strip()
        if not spec.startswith("domain:") or not spec[7:]:
            raise ValueError("expected domain:<host>")
        self.host = spec[7:]

    @classmethod
    def combine(cls, matchers):
        return CombinedDomains(matchers)

    def matches(self, request):
        host = urlsplit(str(request.input.get("url", ""))).hostname or ""
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host

    def describe(self):
        return f"fetches from {self.host}"


class CombinedDomains:
    def __init__(self, matchers):
        self.hosts = {}
        for index, m in enumerate(matchers):
            self.hosts.setdefault(m.host, index)

    def first_match(self, request):
        host = urlsplit(str(request.input.get("url", ""))).hostname or ""
        if host in self.hosts:
            return self.hosts[host]
        parts = host.split(".")
        for n in range(1, len(parts)):
            wild = "*." + ".".join(parts[n:])
            if wild in self.hosts:
                return self.hosts[wild]
        return None


@hookimpl
def pegboard_rule_matcher(rule):
    if rule.specifier is None:
        return None
    if rule.tool in ("Read", "Write"):
        return PathMatcher(rule)
    if rule.tool == "Bash":
        return BashMatcher(rule)  # covers Monitor too: it declares rule_names ("Bash",)
    if rule.tool == "WebFetch":
        return DomainMatcher(rule)
    if rule.tool == "Agent":
        return InputFieldMatcher(rule, "subagent_type")
    return None
'''


def install_plugin(site: Path, monkeypatch: pytest.MonkeyPatch, *, name: str = PLUGIN_NAME,
                   module: str = MODULE, source: str = PLUGIN_SOURCE) -> None:
    """Write the plugin and its dist-info into ``site`` and put it on sys.path."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[pegboard]\n{name} = {module}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    # An earlier test's copy of the module, from its own site, must not stand in for this one.
    monkeypatch.delitem(sys.modules, module, raising=False)
    importlib.invalidate_caches()


class Project:
    """A project folder with config layers, and toolboxes loaded from it."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        self.tmp = Path(os.path.realpath(tmp_path))
        self.root = self.tmp / "project"
        self.root.mkdir(exist_ok=True)
        self.outside = self.tmp / "outside"
        self.outside.mkdir(exist_ok=True)
        self.site = self.tmp / "site"
        self.monkeypatch = monkeypatch
        install_plugin(self.site, monkeypatch)

    def write(self, path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def project_config(self, text: str, *, trusted: bool = True) -> Path:
        """The project's config; the folder is trusted (so that it applies) unless ``trusted=False``."""
        if trusted:
            trust(self.root)
        return self.write(self.root / ".pegboard" / "config.toml", text)

    def user_config(self, text: str) -> Path:
        from pegboard._loading.config import config_dir

        return self.write(config_dir() / "config.toml", text)

    def policy(self, text: str) -> Path:
        path = self.write(self.tmp / "etc" / "policy.toml", text)
        self.monkeypatch.setenv("PEGBOARD_POLICY", str(path))
        return path

    def load(self, host: object | None = None, config: Path | None = None) -> Toolbox:
        return Toolbox.load(cwd=self.root, plugins=[PLUGIN_NAME], host=host, config=config)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    return Project(tmp_path, monkeypatch)


def decide(toolbox: Toolbox, tool: str, args: dict[str, Any], mode: str | None = None,
           session: Any = None) -> Any:
    """The engine's decision (before anyone is asked) for one call."""
    from pegboard import PermissionRequest

    session = session or toolbox.session(mode)
    t = toolbox.tools[tool]
    validated = t.model.model_validate(args) if t.model is not None else args
    request = PermissionRequest(tool=t, input=validated.model_dump() if hasattr(validated, "model_dump")
                                else dict(validated), session=session, policy=session.policy)
    return toolbox.permissions.evaluate(request)


def test_the_plugin_arrives_through_its_entry_point(project: Project) -> None:
    toolbox = project.load()
    record = toolbox.records[PLUGIN_NAME]
    assert record.error is None and record.distribution == PLUGIN_NAME
    assert {"Read", "Write", "Bash", "WebFetch", "mcp__srv__tool", "Agent"} <= set(record.tools)
