"""The shell plugin's permission vote and its ``Bash(...)`` rule grammar.

Vote, for Bash and Monitor (deny beats ask beats allow):

* ``dangerouslyDisableSandbox``: a firm ask, whatever rules and modes say;
* a command naming pegboard's own configuration: ask;
* every part read-only: each path it reads gets the standard path vote
  (inside the working dirs where the policy lets reads run; protected or
  outside: ask);
* only read-only parts and file commands (touch, mkdir, cp, mv): reads as
  above, writes through the standard write vote (acceptEdits, inside);
* otherwise, when the command will run in a sandbox that keeps ``.git`` and
  config read-only: allow where the box lets it write nothing (the read
  level) or where the policy runs edits inside unasked (acceptEdits,
  workspace), and in default only with ``auto_allow_if_sandboxed = true``
  (never in plan, never with it false; ``_box_allows``);
* otherwise ask, offering a ``Bash(<prefix>:*)`` rule per part.

Rules: ``Bash(git log:*)`` is a word prefix, ``Bash(npm run *)`` a glob over
the words, ``Bash(make test)`` exact words (or, for a line that is not simple,
exactly that text: what an ask suggests for such a line). They are matched per part of the
parsed command, so quoting and spacing neither defeat nor widen them. An allow
rule covers a command only when every part is covered by an allow rule or is
read-only: parts covered by earlier rules are remembered in ``request.extra``
for the engine's later rules of the same request. Deny and ask rules match
any command anywhere in the line, also inside substitutions and wrappers.

The command is parsed and classified once per request (``analysis``, kept in
``request.extra``), however many rules ask. ``BashRule.combine`` answers for
all the rules of one behavior at once (prefix and exact rules by dict lookup
of their words, globs only where the line starts with their literal text),
exactly as asking each rule in turn would, covered parts included.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard import Vote
from pegboard.paths import is_within

from ._classify import PartVerdict, Verdict, classify
from ._credentials import hidden_paths, layered_hidden
from ._filerules import box_paths, named_file_vote, tree_read_vote
from ._guard import Guard, guard, outermost
from ._parse import all_command_words, parse_command
from ._sandbox import Backend, Box, backend_for, private_tmp, protects_inside

if TYPE_CHECKING:
    from pegboard import PermissionRequest, PluginContext, Policy, Rule, Session

    from ._config import ShellConfig

__all__ = ["BashRule", "SandboxPlan", "shell_cwd", "sandbox_plan", "vote"]

_COVERED = "shell.allow_covered"
_CWD = "shell.cwd"
_REAL_ROOT = "real_root"  # (session.root, its real path)
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9._-]*")


def shell_cwd(session: Session, state: dict[str, Any]) -> Path:
    """Where the next command runs: the shell's directory, else the root
    (``state``: the plugin's state in ``session``)."""
    cwd = state.get("cwd")
    if isinstance(cwd, Path) and cwd.is_dir():
        return cwd
    # The root's real path, kept for the session (every decision asks).
    kept = state.get(_REAL_ROOT)
    if not (isinstance(kept, tuple) and len(kept) == 2 and (kept[0] is session.root or kept[0] == session.root)):
        kept = state[_REAL_ROOT] = (session.root, Path(os.path.realpath(session.root)))
    return kept[1]


@lru_cache(maxsize=16)
def _home(env_home: str | bytes | None) -> Path:
    """The home directory, per value of ``$HOME`` (the cache key)."""
    return Path(os.path.expanduser("~"))


# ``$HOME`` as the environment holds it: os.environ keeps the process's
# environment in ``_data`` (bytes on POSIX, kept up to date by every change
# made through os.environ), and reading it there spares the str decoding
# os.environ.get does in Python at every Bash decision.
_ENVIRON: Any = getattr(os.environ, "_data", None)
_HOME_KEY: Any = os.environ.encodekey("HOME") if _ENVIRON is not None else None


def _env_home() -> str | bytes | None:
    if _ENVIRON is None:
        return os.environ.get("HOME")
    return _ENVIRON.get(_HOME_KEY)


def _request_cwd(request: PermissionRequest) -> Path:
    """``shell_cwd`` for one decision, looked up once (the vote and every
    allow rule of the request ask for it)."""
    cwd = request.extra.get(_CWD)
    if not isinstance(cwd, Path):
        cwd = request.extra[_CWD] = shell_cwd(request.session, request.session.plugin_state(request.tool.plugin))
    return cwd


@dataclass(frozen=True)
class SandboxPlan:
    """``unenforced``: a deny rule on paths the box cannot enforce (a
    pattern such as ``Read(*.pem)``, or Landlock and any ``Read`` deny
    rule). ``unguarded``: why a protected path could still be changed from
    the box (``_guard``). While either is set, the box earns no auto-allow."""

    backend: Backend
    box: Box
    unenforced: str | None = None
    unguarded: str | None = None

    @property
    def safe(self) -> bool:
        """Whether a command in this box may run without asking."""
        return protects_inside(self.backend, self.box) and self.unenforced is None and self.unguarded is None


def sandbox_plan(session: Session, state: dict[str, Any], config: ShellConfig, disable: bool, *,
                 layers: Iterable[Any] = (), plugin: str = "", prepare: bool = False,
                 guard_paths: bool = True) -> SandboxPlan | None:
    """The sandbox the next command runs in, or None when it runs unconfined.

    The unrestricted level and the ask-every-call policy do not confine (an
    approved call there runs as the person's own); every other policy does,
    with the working directories writable only where the policy offers
    workspace tools or more and is not plan mode. Under bubblewrap every
    protected path in them is bound read-only again (``_guard``; skipped
    with ``guard_paths=False`` by a vote that only needs what is hidden).
    Credentials, pegboard's folders and every layer's ``hidden_paths``
    (``layers``: the config layers, read at ``[plugins.<plugin>]``) are hidden (``_credentials``).
    ``prepare``: about to run, so create what the box needs (deciding
    permission changes nothing on disk).
    """
    if disable:
        return None
    backend = backend_for(config.sandbox)
    if backend == "none":
        return None
    policy = session.policy
    if policy.name == "unrestricted" or policy.ask_every_call:
        return None
    writes = policy.offers in ("workspace", "unrestricted") and not policy.read_only_tools
    writable = tuple(Path(os.path.realpath(d)) for d in session.working_dirs) if writes else ()
    protected = Guard()
    if writable and backend == "bubblewrap" and guard_paths:
        protected = guard(session, state, writable, prepare=prepare)
    hidden, guarded, unenforced = box_paths(session, state, backend, writable)
    secrets = hidden_paths(Path(os.path.realpath(session.root)), (*config.hidden_paths, *layered_hidden(layers, plugin)))
    if backend == "landlock" and unenforced is None:
        # Landlock hides by granting reads everywhere else: a folder holding a
        # hidden path could then not read the files a command makes in it.
        inside = next((p for p in secrets if any(is_within(p, d) for d in writable)), None)
        unenforced = f"hiding {inside} inside a writable folder" if inside is not None else None
    # a hidden folder's contents are gone in the box: a mount inside it would have nothing to cover
    hidden = _outermost_hidden(state, hidden, secrets)
    tmp = private_tmp(session.data_dir) if prepare else None
    return SandboxPlan(backend, Box(writable, (*protected.paths, *guarded), config.allow_network, tmp,
                                    unix_sockets=config.allow_unix_sockets, hidden=hidden), unenforced,
                       protected.unguarded)


_HIDDEN = "shell.outermost_hidden"


def _outermost_hidden(state: dict[str, Any], named: tuple[Path, ...], secrets: tuple[Path, ...]) -> tuple[Path, ...]:
    """``outermost`` of what deny rules name and the other hidden paths, kept
    while both are the same (``named`` is the same object until the rules
    change: ``_filerules._read_box``; ``secrets`` is short, compared by value)."""
    kept = state.get(_HIDDEN)
    if isinstance(kept, tuple) and kept[0] is named and kept[1] == secrets:
        return kept[2]
    found = tuple(outermost((*named, *secrets)))
    state[_HIDDEN] = (named, secrets, found, frozenset(found))
    return found


def _hidden_set(state: dict[str, Any], hidden: tuple[Path, ...]) -> frozenset[Path]:
    """``hidden`` (a plan's ``box.hidden``) as a set, kept with it."""
    kept = state.get(_HIDDEN)
    if isinstance(kept, tuple) and kept[2] is hidden:
        return kept[3]
    return frozenset(hidden)


# --- the vote -----------------------------------------------------------------


def bash_vote(request: PermissionRequest, config: ShellConfig | None, context: PluginContext) -> Vote:
    """Bash's and Monitor's own vote (``Tool.vote``): ``vote`` with the plugin's config and the settings' layers."""
    from ._config import ShellConfig  # a type-only name at the top of this module

    return vote(request, config if isinstance(config, ShellConfig) else ShellConfig(), context.settings.layers)


def vote(request: PermissionRequest, config: ShellConfig, layers: Iterable[Any] = ()) -> Vote:
    command = request.input.get("command")
    if not isinstance(command, str) or not command.strip():
        return Vote.ask("no command given")
    disable = bool(request.input.get("dangerouslyDisableSandbox"))
    if disable:
        if request.policy.bypass:
            # bypassPermissions is the operator saying "no sandbox, no questions";
            # deny rules were already applied by the engine.
            return Vote.allow(f"{request.policy.name} runs commands outside the sandbox")
        return Vote.ask("the command asks to run outside the sandbox", firm=True,
                        suggest=suggestions(command))
    session = request.session
    state = session.plugin_state(request.tool.plugin)
    verdict = analysis(request, command).verdict(_request_cwd(request))
    if _names_config(command, session):
        return Vote.ask("the command names pegboard's configuration", suggest=suggestions(command))
    plan = sandbox_plan(session, state, config, disable=False, layers=layers, plugin=request.tool.plugin,
                        guard_paths=False)
    if verdict.read_only or verdict.file_edit:
        votes = list(_path_votes(request, verdict.parts))
        hidden = _hidden_set(state, plan.box.hidden) if plan is not None and plan.backend == "bubblewrap" \
            else frozenset()
        tree = tree_read_vote(request, verdict.parts, hidden)
        if tree is not None:
            votes.append(tree)
        if verdict.uses_git:
            from ._git import git_toplevels

            from ._runner import sanitized_path

            dirs = [Path(os.path.realpath(d)) for d in request.working_dirs]
            path = sanitized_path(os.environ.get("PATH", ""), dirs)
            votes.extend(request.path_vote(top, write=False) for top in git_toplevels(verdict.cwds, path))
        worst = Vote.strongest(votes)
        if worst is None or worst.decision == "allow":
            what = "read-only command" if verdict.read_only else "file commands"
            return Vote.allow(f"{what} inside the working directories")
        if worst.decision == "deny" or worst.firm:
            return Vote(worst.decision, worst.reason, worst.firm, suggestions(command))
        if verdict.read_only:
            # A read outside: the sandbox does not narrow reads, so it does not help.
            return Vote.ask(worst.reason, suggest=suggestions(command))
    box_allows = plan is not None and _box_allows(config, session.policy, plan.box)
    if plan is not None and box_allows and protects_inside(plan.backend, plan.box):
        # now with what it must guard
        plan = sandbox_plan(session, state, config, disable=False, layers=layers, plugin=request.tool.plugin)
        if plan is not None and plan.safe:
            return Vote.allow(f"runs inside the {plan.backend} sandbox")
    if plan is not None and plan.unenforced is not None and box_allows:
        return Vote.ask(f"{verdict.reason}; the sandbox does not run it unasked, as it cannot enforce "
                        f"{plan.unenforced}", suggest=suggestions(command))
    if plan is not None and plan.unguarded is not None and box_allows:
        return Vote.ask(f"{verdict.reason}; the sandbox does not run it unasked: {plan.unguarded}",
                        suggest=suggestions(command))
    if plan is not None and not box_allows and config.auto_allow_if_sandboxed is None \
            and not session.policy.read_only_tools and protects_inside(plan.backend, plan.box):
        # The box would keep what it guards, but this command may write the
        # working directories, and this policy asks before edits there.
        return Vote.ask(f"{verdict.reason}; in {session.policy.name} {session.policy.kind} a command that may "
                        f"change the working directories asks, sandboxed or not (it runs in the "
                        f"{plan.backend} sandbox once approved)", suggest=suggestions(command))
    return Vote.ask(f"{verdict.reason}", suggest=suggestions(command))


def _box_allows(config: ShellConfig, policy: Policy, box: Box) -> bool:
    """Whether a command the vote cannot call read-only may run unasked
    because of the box (which must still keep what it guards): never in plan
    mode or with ``auto_allow_if_sandboxed = false``; where the box writes
    nothing (the read level); otherwise where the policy runs edits inside
    the working directories unasked (acceptEdits, workspace), or where the
    person opted in with ``auto_allow_if_sandboxed = true``. Default mode
    asks: Claude Code's Bash, "read-only commands allowed; others ask"."""
    if config.auto_allow_if_sandboxed is False or policy.read_only_tools:
        return False
    if not box.writable:
        return True
    return config.auto_allow_if_sandboxed is True or policy.allows_edits(inside=True)


def _path_votes(request: PermissionRequest, parts: Iterable[PartVerdict]) -> Iterable[Vote]:
    """The core's path vote for each path a part reads or writes, and a deny
    where a rule for the file tools denies it (see ``_filerules``)."""
    for part in parts:
        for path in part.reads:
            denied = named_file_vote(request, path, write=False)
            if denied is not None:
                yield denied
            yield request.path_vote(path, write=False)
        for path in part.writes:
            denied = named_file_vote(request, path, write=True)
            if denied is not None:
                yield denied
            yield request.path_vote(path, write=True)


# Quotes and backslashes only change how bash reads a word, not the name it
# names: ``.peg""board``, ``.peg\\board`` and ``'.pegboard'`` are one folder.
_QUOTING = re.compile(r"[\"'\\]")
_PATH_PIECES = re.compile(r"[\s/;|&<>()=:,]+")


def _names_config(command: str, session: Session) -> bool:
    # Each regular expression only where it can change the answer: every
    # Bash decision asks, and the two cost more than the rest of the vote's
    # checks (most commands hold no quote, backslash or glob).
    text = _QUOTING.sub("", command) if ('"' in command or "'" in command or "\\" in command) else command
    if ".pegboard" in text:
        return True
    # A glob bash would expand to .pegboard (.peg*, .p?gboard): a leading dot
    # must be written out for a glob to match a hidden name.
    if ("*" in text or "?" in text or "[" in text) and any(
            piece.startswith(".") and any(c in piece for c in "*?[") and fnmatch.fnmatchcase(".pegboard", piece)
            for piece in _PATH_PIECES.split(text)):
        return True
    if "pegboard" not in text:
        return False  # the config dir's path names pegboard: no need to work it out
    from pegboard.paths import config_dir

    return str(config_dir()) in text


@lru_cache(maxsize=2048)
def suggestions(command: str) -> tuple[str, ...]:
    """A ``Bash(prefix:*)`` rule per part that is not read-only."""
    parsed = parse_command(command)
    if parsed.parts is None:
        # No rule over words can allow a line we cannot read word for word;
        # the exact text can (and "always" must never become the bare tool).
        return (f"Bash({command.strip()})",)
    out: list[str] = []
    for part in parsed.parts:
        argv = part.argv
        words = [argv[0]]
        if len(argv) > 1 and _SUBCOMMAND.fullmatch(argv[1]):
            words.append(argv[1])
        rule = f"Bash({' '.join(shlex.quote(w) for w in words)}:*)"
        if rule not in out:
            out.append(rule)
    return tuple(out)


# --- rules --------------------------------------------------------------------

# One decision asks every Bash rule (and the vote) about the same command: what
# is known about it is kept in ``request.extra`` for the life of the request.
_ANALYSIS = "shell.command_analysis"
_NONE = 1 << 62  # "no rule": larger than any index


class _Analysis:
    """What the rules and the vote need to know about one command, worked
    out at most once per request: the parse, every command word sequence
    (for deny and ask rules), the classification per working directory, and
    per part whether it is read-only with every path vote an allow."""

    __slots__ = ("command", "parsed", "argvs", "_candidates", "_verdicts", "_read_ok")

    def __init__(self, command: str):
        self.command = command
        self.parsed = parse_command(command)
        self.argvs: tuple[tuple[str, ...], ...] | None = (
            None if self.parsed.parts is None else tuple(p.argv for p in self.parsed.parts))
        self._candidates: tuple[tuple[str, ...], ...] | None = None
        self._verdicts: dict[Path, Verdict] = {}
        self._read_ok: dict[tuple[Path, int], bool] = {}

    def candidates(self) -> tuple[tuple[str, ...], ...]:
        """Every command anywhere in the line, for deny and ask rules."""
        if self._candidates is None:
            self._candidates = _candidates(self.command)
        return self._candidates

    def verdict(self, cwd: Path) -> Verdict:
        verdict = self._verdicts.get(cwd)
        if verdict is None:
            verdict = self._verdicts[cwd] = classify(self.command, cwd, _home(_env_home()))
        return verdict

    def read_ok(self, request: PermissionRequest, i: int) -> bool:
        """Whether part ``i`` is read-only and every path it reads may be read."""
        cwd = _request_cwd(request)
        key = (cwd, i)
        ok = self._read_ok.get(key)
        if ok is None:
            part = self.verdict(cwd).parts[i]
            ok = part.kind == "read" and all(v.decision == "allow" for v in _path_votes(request, [part]))
            self._read_ok[key] = ok
        return ok


@lru_cache(maxsize=2048)
def _candidates(command: str) -> tuple[tuple[str, ...], ...]:
    """The word sequences deny and ask rules are tried on: each part's words
    and ``all_command_words``, once each, empty ones left out. Kept: like
    ``parse_command``, a function of the text alone."""
    parts = parse_command(command).parts or ()
    found = (*(p.argv for p in parts), *(tuple(c) for c in all_command_words(command)))
    return tuple(dict.fromkeys(c for c in found if c))


def analysis(request: PermissionRequest, command: str) -> _Analysis:
    """The request's analysis of ``command`` (made on first use)."""
    cache = request.extra.get(_ANALYSIS)
    if not isinstance(cache, dict):
        cache = request.extra[_ANALYSIS] = {}
    found = cache.get(command)
    if found is None:
        found = cache[command] = _Analysis(command)
    return found


class BashRule:
    """One ``Bash(...)`` (or ``Monitor(...)``) rule, compiled."""

    def __init__(self, rule: Rule):
        self.rule = rule
        spec = (rule.specifier or "").strip()
        self.mode: str
        self.words: tuple[str, ...] = ()
        self.pattern: re.Pattern[str] | None = None
        self.literal = ""  # a glob: the text every matching command line starts with
        self.text = spec
        try:
            if spec.endswith(":*"):
                self.mode = "prefix"
                self.words = tuple(shlex.split(spec[:-2]))
            elif "*" in spec:
                self.mode = "glob"
                self.pattern = _glob(spec)
                self.literal = _glob_literal(spec)
            else:
                # Exact: the same words, or (for a line that is not simple,
                # like the ones asks suggest) exactly the same text.
                self.mode = "exact"
                try:
                    self.words = tuple(shlex.split(spec))
                except ValueError:
                    self.words = ()
        except ValueError as exc:
            raise ValueError(f"cannot split the command words: {exc}") from None
        if self.mode == "prefix" and not self.words:
            raise ValueError("the specifier names no command")

    @classmethod
    def combine(cls, matchers: list[BashRule]) -> CombinedBashRules:
        """Every rule of one behavior and tool as one lookup (the engine's
        optional ``combine`` protocol)."""
        return CombinedBashRules(matchers)

    def _hits(self, argv: tuple[str, ...]) -> bool:
        if not argv:
            return False
        if self.mode == "prefix":
            return argv[: len(self.words)] == self.words
        if self.mode == "exact":
            return bool(self.words) and argv == self.words
        assert self.pattern is not None
        return bool(self.pattern.fullmatch(" ".join(argv)))

    def matches(self, request: PermissionRequest) -> bool:
        command = request.input.get("command")
        if not isinstance(command, str):
            return False
        if self.mode == "exact" and command.strip() == self.text:
            return True
        info = analysis(request, command)
        if self.rule.behavior != "allow":
            return any(self._hits(c) for c in info.candidates())
        argvs = info.argvs
        if argvs is None:
            return False  # nothing we cannot read word for word is allowed by a rule
        covered: set[int] = request.extra.setdefault(_COVERED, set())
        hit = False
        for i, argv in enumerate(argvs):
            if self._hits(argv):
                covered.add(i)
                hit = True
        # A rule allows a line it takes part in: one whose every part is
        # read-only is not this rule's doing (the vote speaks for it).
        missing = [i for i in range(len(argvs)) if i not in covered]
        return hit and all(info.read_ok(request, i) for i in missing)


class CombinedBashRules:
    """Many ``BashRule`` of one behavior, answering as if each were asked in
    turn (``first_match``: the index of the first that would match).

    Prefix rules are a dict keyed by their words (one lookup per distinct
    prefix length), exact rules a dict keyed by their words and one by their
    text, glob rules grouped by the first word of the text they start with
    (the few whose literal start holds no blank are tried in turn).

    Allow rules share the ``request.extra`` record of covered parts, as
    ``BashRule.matches`` does: rule ``j`` matches when it hits a part of the
    line and every part is covered by one of the rules up to ``j`` (or by a
    rule the engine asked earlier in this request), or is read-only with its
    paths allowed; the record is left as asking the rules one by one would
    leave it.
    """

    def __init__(self, matchers: list[BashRule]):
        if not matchers:
            raise ValueError("no rules to combine")
        behaviors = {m.rule.behavior for m in matchers}
        if len(behaviors) != 1:
            raise ValueError("rules of different behaviors do not combine")
        self.allow = behaviors == {"allow"}
        self.size = len(matchers)
        self.texts: dict[str, int] = {}
        self.prefixes: dict[tuple[str, ...], int] = {}
        self.exact: dict[tuple[str, ...], int] = {}
        self.globs: dict[str, list[tuple[int, re.Pattern[str]]]] = {}
        self.loose: list[tuple[int, str, re.Pattern[str]]] = []
        for index, m in enumerate(matchers):
            if m.mode == "prefix":
                self.prefixes.setdefault(m.words, index)
            elif m.mode == "exact":
                self.texts.setdefault(m.text, index)
                if m.words:
                    self.exact.setdefault(m.words, index)
            elif m.mode == "glob" and m.pattern is not None:
                first, blank, _ = m.literal.partition(" ")
                if blank:
                    self.globs.setdefault(first, []).append((index, m.pattern))
                else:
                    self.loose.append((index, m.literal, m.pattern))
            else:
                raise ValueError(f"a rule of unknown mode {m.mode!r}")
        self.lengths = tuple(sorted({len(w) for w in self.prefixes}))

    def _first_hit(self, argv: tuple[str, ...], best: int = _NONE) -> int:
        """The index of the first rule hitting ``argv`` if below ``best``, else ``best``."""
        if not argv:
            return best
        n = len(argv)
        prefixes = self.prefixes
        for length in self.lengths:
            if length > n:
                break
            index = prefixes.get(argv[:length])
            if index is not None and index < best:
                best = index
        index = self.exact.get(argv)
        if index is not None and index < best:
            best = index
        if self.globs or self.loose:
            line = " ".join(argv)
            for index, pattern in self.globs.get(line.partition(" ")[0], ()):
                if index >= best:
                    break
                if pattern.fullmatch(line):
                    best = index
                    break
            for index, literal, pattern in self.loose:
                if index >= best:
                    break
                if line.startswith(literal) and pattern.fullmatch(line):
                    best = index
                    break
        return best

    def first_match(self, request: PermissionRequest) -> int | None:
        command = request.input.get("command")
        if not isinstance(command, str):
            return None
        text = self.texts.get(command.strip(), _NONE) if self.texts else _NONE
        if text == 0:
            return 0
        info = analysis(request, command)
        if not self.allow:
            best = text
            for argv in info.candidates():
                best = self._first_hit(argv, best)
                if best == 0:
                    break
            return best if best != _NONE else None
        argvs = info.argvs
        if argvs is None:
            return text if text != _NONE else None
        # Rules before ``text`` are asked one by one anyway: each records the
        # parts it covers (and rule ``text`` then matches on its text alone).
        covered: set[int] = request.extra.setdefault(_COVERED, set())
        firsts = [self._first_hit(argv) for argv in argvs]
        # Rule j must hit a part itself: j is at least the first rule hitting
        # any part. And every part not covered before this group must be hit
        # by a rule up to j or be read-only with its paths allowed: a part
        # whose first rule is later than that needs its own. Parts whose
        # first rule is no later decide nothing, so their paths are not voted
        # on (a one-part line never asks read_ok).
        needed = min(firsts, default=_NONE)
        if len(firsts) > 1:
            for first, i in sorted(((f, i) for i, f in enumerate(firsts) if i not in covered), reverse=True):
                if first <= needed:
                    break
                if not info.read_ok(request, i):
                    needed = first
                    break
        if text <= needed:
            covered.update(i for i, f in enumerate(firsts) if f < text)
            return text if text != _NONE else None
        covered.update(i for i, f in enumerate(firsts) if f <= needed)
        return needed if needed != _NONE else None


def _glob(spec: str) -> re.Pattern[str]:
    """``*`` matches anything; a trailing `` *`` also matches nothing at all."""
    text = " ".join(spec.split())
    tail = text.endswith(" *")
    body = text[:-2] if tail else text
    regex = ".*".join(re.escape(piece) for piece in body.split("*"))
    if tail:
        regex += "(?: .*)?"
    return re.compile(regex, re.DOTALL)


def _glob_literal(spec: str) -> str:
    """What every line a ``_glob(spec)`` matches starts with."""
    text = " ".join(spec.split())
    body = text[:-2] if text.endswith(" *") else text
    return body.split("*", 1)[0]
