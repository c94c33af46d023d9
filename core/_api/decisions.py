"""The vocabulary of permission decisions: requests, votes, rules, answers."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .._util.path_facts import _resolve_counted, resolve_counted
from .records import record

if TYPE_CHECKING:
    from .clients import Client
    from .levels import Access
    from .plugin_session import PluginSession
    from .policy import Policy
    from .tools import Tool

__all__ = [
    "Answer",
    "CompiledRule",
    "Decision",
    "DecisionKind",
    "Grant",
    "PermissionRequest",
    "Rule",
    "RuleMatcher",
    "RuleSamples",
    "ToolNamespace",
    "Vote",
    "strip_group_wildcard",
]

DecisionKind = Literal["allow", "ask", "deny"]
RANK: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


def _rank(vote: Vote) -> int:
    return RANK[vote.decision]


@record(frozen=True, init=False)
class Vote:
    """A plugin's or classifier's opinion on one call: what
    ``pegboard_permission`` and ``pegboard_classify`` return.

    Make one with ``Vote.allow(reason)``,
    ``Vote.ask(reason, suggest=..., firm=...)`` or ``Vote.deny(reason)``. The engine weighs every plugin's
    vote with the operator's rules and the session's policy; deny beats ask
    beats allow (``Vote.strongest``).
    """

    decision: DecisionKind
    """``"allow"``, ``"ask"`` or ``"deny"``."""
    reason: str
    """Why, in a few words: the model reads it with a deny, the person with an ask,
    and ``pegboard permissions check`` shows it."""
    firm: bool = False
    """Only for an ask: one that neither an allow rule nor a permissive mode may wave
    through (a protected path). A person must answer it; where nobody can be asked
    (``bypassPermissions``, a level, no host) a firm ask is a deny."""
    suggestions: tuple[str, ...] = ()
    """For an ask: rules to offer when the person answers "always allow" (the first is
    the default), such as ``("Greet(Ada)",)``; the host shows each one's preview
    (``Decision.previews``)."""

    def __init__(self, decision: DecisionKind, reason: str, firm: bool = False,
                 suggestions: tuple[str, ...] = ()) -> None:
        # made for most calls: into the instance's dict, as Decision's (a frozen
        # dataclass's own __init__ sets each field through object.__setattr__)
        fields = self.__dict__
        fields["decision"] = decision
        fields["reason"] = reason
        fields["firm"] = firm
        fields["suggestions"] = suggestions

    @classmethod
    def allow(cls, reason: str) -> Vote:
        """Let the call run, unless another vote, a rule or the policy says otherwise."""
        return cls("allow", reason)

    @classmethod
    def ask(cls, reason: str, *, suggest: tuple[str, ...] | list[str] = (), firm: bool = False) -> Vote:
        """Put the call to the person (``pegboard_ask``); ``suggest``: rules to offer
        for "always allow"; ``firm``: no rule or mode may settle it (see ``firm``)."""
        return cls("ask", reason, firm=firm, suggestions=tuple(suggest))

    @classmethod
    def deny(cls, reason: str) -> Vote:
        """Refuse the call; nothing turns a deny into an allow. ``reason`` is what the model is told."""
        return cls("deny", reason)

    @staticmethod
    def strongest(votes: Iterable[Vote]) -> Vote | None:
        """The vote that wins when all of ``votes`` apply, as the engine
        weighs plugins' votes: deny beats ask beats allow; the first of equals
        (None for no votes). For a plugin that combines votes of its own,
        such as one per path a command touches."""
        return max(votes, key=_rank, default=None)


@record(frozen=True, init=False)
class Decision:
    """The engine's one answer for a call, with why and who decided.

    What ``session.decide(name, input)`` returns, and what a host's
    ``pegboard_ask`` and ``pegboard_classify`` are handed with the request
    (``decision.decision`` is then ``"ask"``).
    """

    decision: DecisionKind
    """``"allow"``, ``"ask"`` or ``"deny"``."""
    reason: str
    """Why, for the model (with a deny) and the person (with an ask)."""
    source: str
    """Who decided: a rule (``"rule Bash(rm *) in /home/me/.config/pegboard/config.toml"``),
    ``"plugin fs"``, ``"mode default"``, ``"level read"``, ``"person"``, ``"host"``,
    ``"classifier"``; ``pegboard permissions check --json`` prints it."""
    suggestions: tuple[str, ...] = ()
    """For an ask: the rules the person may "always allow" (the tool's name when no vote
    suggested any); ``Answer(remember=..., rule=None)`` keeps the first."""
    firm: bool = False
    """A protected path: no rule, mode or classifier settles it; a person must answer."""
    classifiable: bool = False
    """An ask that auto mode's classifier may settle: not an operator's ask rule, not a firm ask."""
    previews: tuple[str, ...] = ()
    """One sentence per suggestion, same order, filled in just before the host is asked:
    what else the rule would allow, such as
    ``"Greet(Ada) would allow Greet calls whose name is 'Ada'; deny rules and protected paths still apply."``
    (a matcher's
    ``describe()`` makes the middle; see ``RuleMatcher``)."""

    def __init__(self, decision: DecisionKind, reason: str, source: str, suggestions: tuple[str, ...] = (),
                 firm: bool = False, classifiable: bool = False, previews: tuple[str, ...] = ()) -> None:
        # Every call gets one, and a frozen dataclass's own __init__ sets each
        # field through object.__setattr__, at twice the cost of this (stores
        # into the dict, a third cheaper than one update with keywords).
        fields = self.__dict__
        fields["decision"] = decision
        fields["reason"] = reason
        fields["source"] = source
        fields["suggestions"] = suggestions
        fields["firm"] = firm
        fields["classifiable"] = classifiable
        fields["previews"] = previews

    def to_json(self) -> dict[str, Any]:
        """``{"decision", "reason", "source"}``, as ``pegboard permissions check --json`` prints it."""
        return {"decision": self.decision, "reason": self.reason, "source": self.source}


@dataclass(frozen=True)
class Rule:
    """``Tool`` or ``Tool(specifier)`` from one config layer or a session grant.

    What ``pegboard_rule_matcher`` is handed to compile: the plugin that owns
    ``tool`` reads ``specifier`` in its own grammar.
    """

    tool: str
    """The tool (or ``mcp__server``) the rule names, as written."""
    specifier: str | None
    """The text between the parentheses, as written (not stripped); None for a rule on the whole tool."""
    behavior: DecisionKind
    """The list it came from: ``"allow"``, ``"ask"`` or ``"deny"``."""
    source: str
    """Where it was written: the config file's path, or ``"session grant"``."""
    base_dir: Path | None = None
    """The folder relative paths in the specifier are read from (the project root), when it has one."""

    @cached_property
    def text(self) -> str:
        """The rule as written: ``Tool`` or ``Tool(specifier)``."""
        # cached (in the instance's dict, which a frozen dataclass allows):
        # every decision a rule settles names it in its reason and source
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    @classmethod
    def parse(cls, text: str, behavior: DecisionKind, source: str, base_dir: Path | None = None) -> Rule:
        """Split ``Tool(specifier)``; ``ValueError`` says what is wrong."""
        text = text.strip()
        if not text:
            raise ValueError("empty rule")
        if "(" not in text:
            text = strip_group_wildcard(text)
            if ")" in text or not _is_tool_name(text):
                raise ValueError(f"{text!r} is not a tool name")
            return cls(text, None, behavior, source, base_dir)
        if not text.endswith(")"):
            raise ValueError(f"{text!r}: a specifier must end with ')'")
        name, _, spec = text[:-1].partition("(")
        if not _is_tool_name(name):
            raise ValueError(f"{text!r}: {name!r} is not a tool name")
        if not spec.strip():
            raise ValueError(f"{text!r}: empty specifier; write {name!r} for the whole tool")
        return cls(name, spec, behavior, source, base_dir)


@lru_cache(maxsize=1024)
def _is_tool_name(name: str) -> bool:
    # remembered: a large config file names a few tools thousands of times
    return bool(name) and all(c.isalnum() or c in "_-." for c in name)


GROUP_SEPARATOR = "__"


def strip_group_wildcard(text: str) -> str:
    """``ns__group__*`` is Claude Code's spelling of ``ns__group`` (every
    tool of the group): the name without the ``__*``. Only a name that is
    itself namespaced (holds ``__``) has the form; any other text is kept
    (and ``Bash__*`` is then refused as no tool name)."""
    if text.endswith(GROUP_SEPARATOR + "*") and GROUP_SEPARATOR in text[:-3]:
        return text[:-3]
    return text


@dataclass(frozen=True, slots=True)
class ToolNamespace:
    """A family of tool names a plugin declares (``pegboard_tool_namespaces``):
    its tools are called ``<name>__<group>__<tool>``, and a rule naming
    ``<name>__<group>`` (or ``<name>__<group>__*``) covers every tool of
    the group, whatever tools the group has now or later. The mcp plugin
    declares ``ToolNamespace("mcp", label="MCP server")`` for
    ``mcp__github__create_issue`` and rules like ``mcp__github``.

    A group's allow rules cover only the declaring plugin's tools (another
    plugin's ``mcp__github__x`` is not allowed by ``allow = ["mcp__github"]``);
    its deny and ask rules cover any tool named into it. ``label`` names a
    group in messages ("every tool of MCP server 'github'"); ``unknown_hint``
    is added where ``pegboard doctor`` warns that a rule names a group or
    tool of the namespace that no loaded tool belongs to ("is it approved
    and listed? `pegboard mcp list`")."""

    name: str
    """The namespace's first part (``"mcp"``): letters, digits, ``-``, ``.``, a single ``_`` inside."""
    label: str = "group"
    """What a group is called in messages (``"MCP server"``)."""
    unknown_hint: str = ""
    """Added where ``pegboard doctor`` warns that a rule names a group or tool nobody provides."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _is_tool_name(self.name) or GROUP_SEPARATOR in self.name \
                or self.name.endswith("_"):
            raise ValueError(f"ToolNamespace name {self.name!r}: expected letters, digits, '-', '.' or a single "
                             "'_' inside (tools are then called <name>__<group>__<tool>)")

    @property
    def prefix(self) -> str:
        """``"<name>__"``, which every tool and rule name of the namespace starts with."""
        return self.name + GROUP_SEPARATOR

    def holds(self, name: str) -> bool:
        """Whether a tool or rule name lies in this namespace."""
        return name.startswith(self.prefix)

    def group_named(self, name: str) -> str | None:
        """The group a rule name ``<name>__<group>`` names, or None."""
        if not name.startswith(self.prefix):
            return None
        group = name[len(self.prefix):]
        return group if group and GROUP_SEPARATOR not in group else None

    def group_of(self, tool_name: str) -> str | None:
        """The group of a tool called ``<name>__<group>__<tool>``, or None
        (``mcp__srv__read__all`` is tool ``read__all`` of group ``srv``: a
        group's name holds no ``__``)."""
        if not tool_name.startswith(self.prefix):
            return None
        group, sep, _ = tool_name[len(self.prefix):].partition(GROUP_SEPARATOR)
        return group if group and sep else None

    def rule_name(self, group: str) -> str:
        """The rule name that covers every tool of ``group``."""
        return self.prefix + group


class RuleMatcher(Protocol):
    """What ``pegboard_rule_matcher`` returns: any object with ``matches``.

    A matcher may also have these methods; the engine looks for each with
    ``getattr`` and does without it:

    - ``describe() -> str``: what the rule covers, for the preview a person
      reads before "always allow" (``Decision.previews``). The text is
      embedded after the tool's name, as
      ``"{rule} would allow {tool} {describe()}; deny rules and protected paths still apply."``,
      so return a phrase that reads on from it, such as
      ``"calls whose name is 'Ada'"`` (not a sentence: no capital, no full
      stop). A ``describe`` that raises falls back to
      ``"calls of {tool} matching {specifier!r}"``. For a matcher with
      ``path_input`` the preview counts the files the rule covers instead,
      and ``describe`` is not asked.
    - ``path_input(path: str) -> Mapping | None``: for rules on files, the
      input of a call of the rule's tool on ``path`` (``{"file_path": path}``),
      or None; the "always allow" preview counts the files in the working
      directories it covers with it.
    - ``combine(matchers) -> object``, a classmethod: many rules of one
      behavior and tool as one lookup. Given every matcher of this class
      for the tool, return an object whose
      ``first_match(request) -> int | None`` is the index of a matcher in
      ``matchers`` that matches, or None. It must agree with calling each
      matcher's ``matches`` (``pegboard plugins check`` tries sample
      calls); if ``combine`` raises, the engine calls the matchers one by
      one.
    - ``fixed_path() -> pathlib.Path | None``: for rules on files, the one
      path the rule names (everything below it included), or None for a
      pattern. The shell's sandbox hides or guards such paths, so a deny
      rule on a file holds for commands too.
    - ``save() -> plain data``: the rule cache protocol. What this matcher
      worked out from its rule, as plain data (str, bytes, int, float,
      bool, None, and lists, tuples and dicts of them): a large config
      file's compiled rules are kept beside its cached parse, and the next
      process hands each rule's back to ``pegboard_rule_matcher`` as its
      ``saved`` argument, so that it builds the matcher without parsing the
      specifier again. The object ``combine`` returns may have ``save()``
      too; the next process then calls ``combine(matchers, saved=...)``
      with it, for the same rules in the same order (so a combined object
      with ``save()`` promises a ``combine`` that takes ``saved``), and the
      group is built from it instead of being worked out again (regular
      expressions' sources, index maps). What is kept is keyed on the
      rules' text, file and layer and on every plugin's version and source
      files, so a changed rule or plugin never meets what was kept for
      another; but nothing on disk is in the key: whatever a path's real
      name decided, check it again (the fs plugin resolves each rule's
      folder anew and compares). A ``save()`` that raises or returns what
      is not plain data keeps nothing; ``saved`` that does not fit should
      raise ``ValueError`` (the rule or group is then built afresh).
      ``pegboard plugins check`` builds every sample rule and group again
      from what it saves and holds them to the same answers.

    A matcher that raises in ``matches`` fails closed: a deny or ask rule
    then applies to the call, an allow rule does not.
    """

    def matches(self, request: PermissionRequest) -> bool:
        """Whether the rule covers this call (``request.tool``, ``request.input``)."""
        ...


@record(frozen=True)
class RuleSamples:
    """Rules in a plugin's grammar and calls to try them on, for
    ``pegboard plugins check`` (``pegboard_rule_samples``): every rule is
    compiled through the plugin's matcher as an allow, ask and deny rule,
    every matcher is tried on every call of its tool, and rules whose
    matchers ``combine()`` are checked to find what ``matches()`` finds.

    ``rules``: rule texts, ``"Greet(Ada)"``; ``calls``: ``(tool, input)``
    pairs, ``("Greet", {"name": "Ada"})``, inputs as the model would send them.
    """

    rules: tuple[str, ...] = ()
    """Rule texts in the plugin's grammar, such as ``"Greet(Ada)"``."""
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """``(tool, input)`` pairs to try the rules on, inputs as the model would send them."""

    def __init__(self, rules: Iterable[str] = (), calls: Iterable[tuple[str, Mapping[str, Any]]] = ()) -> None:
        self.__dict__.update(rules=tuple(rules), calls=tuple((str(t), dict(i)) for t, i in calls))


@dataclass(frozen=True)
class CompiledRule:
    """A rule in force: the rule as written, the matcher its plugin compiled
    for it, and the config layer (or "session") it came from."""

    rule: Rule
    """The rule as written."""
    matcher: RuleMatcher
    """What the owning plugin's ``pegboard_rule_matcher`` compiled for it (or the core's, for a
    rule on a whole tool)."""
    layer: str = "session"
    """The config layer it came from (``"user"``, ``"project"``, ``"explicit"``, ``"policy"``,
    ``"user grants"``...) or ``"session"`` for a session's grant."""

    @cached_property
    def where(self) -> str:
        """``"rule Read(./.env) in /path/config.toml"``: the rule and its file, for messages."""
        return f"rule {self.rule.text} in {self.rule.source}"


@dataclass(slots=True)
class Grant:
    """A rule granted for this session (``session.grant``); ``revoke()`` ends it."""

    session: PluginSession
    """The session the rule was granted in."""
    compiled: CompiledRule
    """The rule in force."""
    _revoke: Callable[[CompiledRule], None] = field(repr=False, compare=False)
    """The session's own way to end it: the session holds its grants."""

    def revoke(self) -> None:
        """End the grant: later calls of the session are decided without it."""
        self._revoke(self.compiled)


@dataclass(frozen=True, slots=True)
class Answer:
    """The person's answer to an ask.

    ``remember``: None (this call only), or "session", "project", "user";
    ``rule``: the rule to remember (defaults to the first suggestion).
    ``message``: for a deny, what the model is told.
    """

    allow: bool
    """Whether the call may run."""
    remember: Literal["session", "project", "user"] | None = None
    """For an allow: None (this call only), ``"session"`` (a grant for this session),
    ``"project"`` or ``"user"`` (kept in a ``granted.toml`` in the person's config folder)."""
    rule: str | None = None
    """The rule to remember; None: the decision's first suggestion."""
    message: str | None = None
    """For a deny: what the model is told (default: the person declined this call)."""
    asked: bool = True
    """False when the host could not put the question to anyone (a client
    that cannot ask its user): the deny is then the host's, not a person's."""
    pending: bool = False
    """The person will answer later, from anywhere (``Answer.later()``): the
    call is kept as a pending call and the model is told it waits."""
    approver: str | None = None
    """Who answered (a person's name or account), when the host knows: kept
    with a pending call's answer and written in the audit log's ``host``."""

    @classmethod
    def later(cls) -> Answer:
        """No answer yet: keep the call pending until someone resolves it
        (``session.resolve(id, answer)``; docs/embedding.md)."""
        return cls(allow=False, pending=True)


@record()
class PermissionRequest:
    """One call as the permission engine and plugins see it: what
    ``pegboard_permission``, a rule matcher's ``matches``, ``pegboard_ask``
    and ``pegboard_classify`` are handed.

    Paths in ``input`` are as the model wrote them: judge them with
    ``resolve``/``resolve_str`` (remembered for this decision, so the vote and
    every matcher see the same real path) or ``path_vote``.
    """

    tool: Tool
    """The tool called; ``request.tool.plugin == context.name`` for your own tools."""
    input: Mapping[str, Any]
    """The arguments, validated against the tool's input model, as a mapping (read-only)."""
    session: PluginSession
    """The session the call is decided in (its root, working dirs, grants)."""
    policy: Policy
    """The permission mode or level in force for this call (``request.policy.name``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """The engine's notes about this decision (``call_id``, the person's answer, rule errors),
    kept for the audit; a plugin may read it and should not write it."""
    # per path as given: the real path, and how many of its last names were found missing (0: something is
    # there; else 1 or more, a lower bound: resolve_counted)
    _resolved: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False, compare=False)
    _paths: dict[str, Path] = field(default_factory=dict, repr=False, compare=False)
    _stats: dict[str, os.stat_result | None] = field(default_factory=dict, repr=False, compare=False)

    def __init__(self, tool: Tool, input: Mapping[str, Any], session: PluginSession, policy: Policy,
                 extra: dict[str, Any] | None = None) -> None:
        # Made for every decision: the dataclass's own __init__ called a
        # factory for each of the four dicts; literals cost a fraction of that.
        self.tool = tool
        self.input = input
        self.session = session
        self.policy = policy
        self.extra = {} if extra is None else extra
        self._resolved = {}
        self._paths = {}
        self._stats = {}

    @property
    def working_dirs(self) -> tuple[Path, ...]:
        """The session's working directories (resolved; the root first)."""
        return self.session.working_dirs

    @property
    def client(self) -> Client | None:
        """Who the call is made for, when the host serves several (``session.client``): its
        ``id``, how it signed in, the level its credential allows. None: the host's own."""
        return self.session.client

    @property
    def access(self) -> Access:
        """What the session may do with this tool (``Session.access_to``):
        ``"full"``, or for a sub-agent granted ``"read"`` only, only what the
        tool counts as reading; a tool registered with ``subagents="read"``
        votes deny on anything else."""
        return self.session.access_to(self.tool)

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real path a name refers to, relative to the session root.

        Remembered for the life of this request (one decision), so that the
        vote and every rule matcher see the same answer and the file system
        is walked once, not once per rule.
        """
        key = os.fspath(path)
        real = self._paths.get(key)
        if real is None:
            real = self._paths[key] = Path(self.resolve_str(key))
        return real

    def resolve_str(self, path: str | os.PathLike[str]) -> str:
        """``str(self.resolve(path))``, without building a ``Path``, which
        costs as much as a system call; for matchers that work on text."""
        # the vote and each rule group ask: the remembered answer without a further call
        found = self._resolved.get(path) if type(path) is str else None
        return (found or self._resolution(path))[0]

    def _resolution(self, path: str | os.PathLike[str]) -> tuple[str, int]:
        """The real path, and how many of its last names were missing, remembered per path as given."""
        key = path if type(path) is str else os.fspath(path)
        found = self._resolved.get(key)
        if found is None:
            if key.startswith("/") and "\x00" not in key:
                # resolve_counted's own checks, for an absolute path: one call less per decision
                found = _resolve_counted(key)
            else:
                found = resolve_counted(key, self.session.root)
            self._resolved[key] = found
        return found

    def exists(self, path: str | os.PathLike[str]) -> bool:
        """Whether anything was at the real path when it was resolved (no
        further system call: resolving found out)."""
        found = self._resolved.get(path) if type(path) is str else None
        return not (found or self._resolution(path))[1]

    def lstat(self, path: str | os.PathLike[str]) -> os.stat_result | None:
        """``os.lstat`` of the resolved path, None when nothing is there.
        A path that resolving found missing (a file about to be created)
        is not looked up again; like the resolution, the answer is
        remembered for this decision (``path_vote`` then knows a file is no
        git directory without looking)."""
        key = os.fspath(path)
        if key in self._stats:
            return self._stats[key]
        real, missing = self._resolution(path)
        if missing:
            return None
        try:
            found: os.stat_result | None = os.lstat(real)
        except FileNotFoundError:
            found = None
        self._stats[key] = found
        return found

    def inside_working_dirs(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` resolves inside one of the session's working directories."""
        return self.session.inside_working_dirs(self.resolve_str(path))

    def is_protected(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` resolves to a protected path (``[permissions] protected_paths``,
        pegboard's own config): writing one takes a firm ask."""
        real, absent = self._resolution(path)
        return self.session.is_protected(real, absent=absent)

    def rule_for(self, behavior: DecisionKind, tool: str, input: Mapping[str, Any]) -> CompiledRule | None:
        """The first ``behavior`` rule that would decide a call of ``tool``
        with ``input`` in this session (None also when no loaded plugin
        provides ``tool``): for a vote whose tool does what another's does,
        as the shell asks whether a ``Read`` deny rule covers what ``cat``
        would print."""
        return self.session.rule_for(behavior, tool, input)

    def rules_for(self, behavior: DecisionKind, tool: str) -> tuple[CompiledRule, ...]:
        """Every ``behavior`` rule written for ``tool`` by name, the config
        layers' and this session's grants (not rules for an alias of it).
        While they are unchanged and the session holds no grant for
        ``tool``, the same tuple object is returned: what a plugin derives
        from the rules (the shell's sandbox plan) it may keep until it is
        handed another object, so that a decision costs nothing per rule."""
        return self.session.rules_for(behavior, tool)

    def path_vote(self, path: str | os.PathLike[str], *, write: bool) -> Vote:
        """The standard vote for touching one path, under this request's policy.

        Protected paths: a firm ask. Inside the working dirs: reads run where
        the policy lets reads run, writes where it lets edits run. Outside:
        ask, offering a rule for the directory.
        """
        try:
            real, absent = self._resolution(path)
        except ValueError as exc:
            return Vote.deny(str(exc))
        session = self.session
        inside = session.inside_working_dirs(real)
        # Writing a protected path asks everywhere; reading one only outside
        # the working dirs (reading the project's own .git is ordinary work).
        # No git directory is looked for in the folders resolving found missing.
        if (write or not inside) and session.is_protected(real, absent=absent or self._not_a_folder(path)):
            return Vote.ask(f"{real} is a protected path", firm=True)
        tool = self.tool.name
        if write:
            if self.policy.allows_edits(inside):
                return _WRITE_INSIDE if inside else _WRITE_OUTSIDE
            if self.policy.confines_writes:
                # A level has no one to ask: a write it does not reach is refused.
                if inside:
                    return Vote.deny(f"{tool} cannot write files at {self.policy.kind} {self.policy.name}")
                return Vote.deny(f"{real} is outside the working directories, and {self.policy.kind} "
                                 f"{self.policy.name} confines writes to them")
        elif self.policy.allows_reads(inside):
            return _READ_INSIDE if inside else _READ_OUTSIDE
        # Only an ask needs the rule to offer (and the stat it takes); a
        # resolved path is absolute and clean, so its folder is a string cut.
        folder = (real[:real.rfind("/")] or "/") if write or not os.path.isdir(real) else real
        suggest = (f"{tool}(/{folder}/**)",)
        if write and inside:
            return Vote("ask", f"{tool} writes {real}", False, suggest)
        return Vote("ask", f"{real} is outside the working directories", False, suggest)


    def _not_a_folder(self, path: str | os.PathLike[str]) -> int:
        """1 when this decision's ``lstat`` found a file (not a folder) at
        ``path``, which is then no git directory: the walk need not look in
        it; else 0 (not asked: no system call is made for it here)."""
        st = self._stats.get(os.fspath(path))
        return 1 if st is not None and not stat.S_ISDIR(st.st_mode) else 0


# Votes are immutable: the common ones are made once, not per decision.
_READ_INSIDE = Vote.allow("read inside the working directories")
_READ_OUTSIDE = Vote.allow("read outside the working directories")
_WRITE_INSIDE = Vote.allow("write inside the working directories")
_WRITE_OUTSIDE = Vote.allow("write outside the working directories")


# Moved to pegboard.InputFieldMatcher; the old address, which
# docs/permissions.md taught, answers for one release with a warning.
_MOVED = {"InputFieldMatcher": "pegboard.InputFieldMatcher"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from .._util.deprecation import moved
        from .matchers import InputFieldMatcher

        return moved(__name__, name, _MOVED[name], InputFieldMatcher)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
