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
  config read-only and ``auto_allow_if_sandboxed`` is on: allow (not in plan);
* otherwise ask, offering a ``Bash(<prefix>:*)`` rule per part.

Rules: ``Bash(git log:*)`` is a word prefix, ``Bash(npm run *)`` a glob over
the words, ``Bash(make test)`` exact words (or, for a line that is not simple,
exactly that text: what an ask suggests for such a line). They are matched per part of the
parsed command, so quoting and spacing neither defeat nor widen them. An allow
rule covers a command only when every part is covered by an allow rule or is
read-only: parts covered by earlier rules are remembered in ``request.extra``
for the engine's later rules of the same request. Deny and ask rules match
any command anywhere in the line, also inside substitutions and wrappers.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard._decisions import RANK, Vote

from ._classify import PartVerdict, Verdict, classify
from ._parse import all_command_words, parse_command
from ._sandbox import Backend, Box, backend_for, private_tmp, protected_inside, protects_inside

if TYPE_CHECKING:
    from pegboard._decisions import PermissionRequest, Rule
    from pegboard._session import Session

    from ._config import ShellConfig

__all__ = ["BashRule", "SandboxPlan", "shell_cwd", "sandbox_plan", "vote"]

_COVERED = "shell.allow_covered"
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9._-]*")


def shell_cwd(session: Session) -> Path:
    """Where the next command runs: the shell's directory, else the root."""
    cwd = session.plugin_state("shell").get("cwd")
    if isinstance(cwd, Path) and cwd.is_dir():
        return cwd
    return Path(os.path.realpath(session.root))


@dataclass(frozen=True)
class SandboxPlan:
    backend: Backend
    box: Box

    @property
    def safe(self) -> bool:
        """Whether a command in this box may run without asking."""
        return protects_inside(self.backend, self.box)


def sandbox_plan(session: Session, config: ShellConfig, disable: bool, *,
                 prepare: bool = False) -> SandboxPlan | None:
    """The sandbox the next command runs in, or None when it runs unconfined.

    The unrestricted level and the ask-every-call policy do not confine (an
    approved call there runs as the person's own); every other policy does,
    with the working directories writable only where the policy offers
    workspace tools or more and is not plan mode. ``prepare``: about to run,
    so create what the box needs (deciding permission changes nothing on disk).
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
    dirs = tuple(Path(os.path.realpath(d)) for d in session.working_dirs)
    from pegboard._config import config_dir

    cwd = shell_cwd(session)
    extra = [Path(os.path.realpath(config_dir()))]
    if (cwd / ".git").exists():
        extra.append(cwd / ".git")
    if prepare and writes and backend == "bubblewrap":
        # A missing .pegboard could be created by a sandboxed command and hold
        # allow rules for the next session: make it exist, so it is bound read-only.
        (Path(os.path.realpath(session.root)) / ".pegboard").mkdir(exist_ok=True)
    readonly = protected_inside(dirs, extra) if writes else ()
    tmp = private_tmp(session.data_dir) if prepare else None
    return SandboxPlan(backend, Box(dirs if writes else (), readonly, config.allow_network, tmp,
                                    unix_sockets=config.allow_unix_sockets))


# --- the vote -----------------------------------------------------------------


def vote(request: PermissionRequest, config: ShellConfig) -> Vote:
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
    verdict = classify(command, shell_cwd(session))
    if _names_config(command, session):
        return Vote.ask("the command names pegboard's configuration", suggest=suggestions(command))
    if verdict.read_only or verdict.file_edit:
        votes = list(_path_votes(request, verdict.parts))
        if verdict.uses_git:
            from ._git import git_toplevels

            from ._runner import sanitized_path

            dirs = [Path(os.path.realpath(d)) for d in request.working_dirs]
            path = sanitized_path(os.environ.get("PATH", ""), dirs)
            votes.extend(request.path_vote(top, write=False) for top in git_toplevels(verdict.cwds, path))
        worst = max(votes, key=lambda v: RANK[v.decision]) if votes else None
        if worst is None or worst.decision == "allow":
            what = "read-only command" if verdict.read_only else "file commands"
            return Vote.allow(f"{what} inside the working directories")
        if worst.decision == "deny" or worst.firm:
            return Vote(worst.decision, worst.reason, worst.firm, suggestions(command))
        if verdict.read_only:
            # A read outside: the sandbox does not narrow reads, so it does not help.
            return Vote.ask(worst.reason, suggest=suggestions(command))
    plan = sandbox_plan(session, config, disable=False)
    if plan is not None and plan.safe and config.auto_allow_if_sandboxed and not session.policy.read_only_tools:
        return Vote.allow(f"runs inside the {plan.backend} sandbox")
    return Vote.ask(f"{verdict.reason}", suggest=suggestions(command))


def _path_votes(request: PermissionRequest, parts: Iterable[PartVerdict]) -> Iterable[Vote]:
    for part in parts:
        for path in part.reads:
            yield request.path_vote(path, write=False)
        for path in part.writes:
            yield request.path_vote(path, write=True)


def _names_config(command: str, session: Session) -> bool:
    from pegboard._config import config_dir

    return ".pegboard" in command or str(config_dir()) in command


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


class BashRule:
    """One ``Bash(...)`` (or ``Monitor(...)``) rule, compiled."""

    def __init__(self, rule: Rule):
        self.rule = rule
        spec = (rule.specifier or "").strip()
        self.mode: str
        self.words: tuple[str, ...] = ()
        self.pattern: re.Pattern[str] | None = None
        self.text = spec
        try:
            if spec.endswith(":*"):
                self.mode = "prefix"
                self.words = tuple(shlex.split(spec[:-2]))
            elif "*" in spec:
                self.mode = "glob"
                self.pattern = _glob(spec)
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
        if self.rule.behavior != "allow":
            parsed = parse_command(command)
            candidates = [p.argv for p in parsed.parts or ()] + all_command_words(command)
            return any(self._hits(tuple(c)) for c in candidates if c)
        parsed = parse_command(command)
        if parsed.parts is None:
            return False  # nothing we cannot read word for word is allowed by a rule
        covered: set[int] = request.extra.setdefault(_COVERED, set())
        for i, part in enumerate(parsed.parts):
            if self._hits(part.argv):
                covered.add(i)
        missing = [i for i in range(len(parsed.parts)) if i not in covered]
        if not missing:
            return True
        verdict: Verdict = classify(command, shell_cwd(request.session))
        for i in missing:
            part = verdict.parts[i]
            if part.kind != "read":
                return False
            if any(v.decision != "allow" for v in _path_votes(request, [part])):
                return False
        return True


def _glob(spec: str) -> re.Pattern[str]:
    """``*`` matches anything; a trailing `` *`` also matches nothing at all."""
    text = " ".join(spec.split())
    tail = text.endswith(" *")
    body = text[:-2] if tail else text
    regex = ".*".join(re.escape(piece) for piece in body.split("*"))
    if tail:
        regex += "(?: .*)?"
    return re.compile(regex, re.DOTALL)


def rule_matcher(rule: Rule) -> BashRule | None:
    if rule.tool not in ("Bash", "Monitor") or rule.specifier is None:
        return None
    return BashRule(rule)
