"""The read-only classifier: what each part of a command does to files.

``classify(command, cwd, home)`` parses the line (``_parse``), checks each part
against the allow-list (``_programs``, ``_git``) and resolves the paths it
names. It decides nothing about permission: ``_permission`` turns the verdict
into a vote under the session's policy. Anything not positively understood is
``other``, and ``other`` is never auto-allowed.

Globs: an unquoted ``*``, ``?`` or ``[`` is accepted only in an operand that is
a path (never as an option's value, where one word could become several), and
is expanded here the way bash will expand it; a match starting with ``-``
(a file named ``--output=x``) makes the part ``other``, since bash would hand
it to the program as an option. Every match must resolve where the literal
would. A file created between this check and the run by a process already
running is the residual race; see docs/plugins/shell.md.
"""

from __future__ import annotations

import glob as globlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pegboard.paths import is_within

from ._git import GIT_NESTED, GIT_SUBCOMMANDS
from ._parse import Parsed, Part, Word, parse_command
from ._programs import PROGRAMS, SHOWS_FILES, SHOWS_FIRST_LINES, Spec

__all__ = ["PartVerdict", "Verdict", "classify"]

Kind = Literal["read", "edit", "other"]


@dataclass(frozen=True, init=False)
class PartVerdict:
    """One part: ``read`` (read-only), ``edit`` (a file command) or ``other``.

    ``reads``/``writes``: resolved paths. ``shows``: files whose content the
    part prints, with the number of lines shown (None: all of it).
    """

    part: Part
    kind: Kind
    reason: str = ""
    reads: tuple[Path, ...] = ()
    writes: tuple[Path, ...] = ()
    shows: tuple[tuple[Path, int | None], ...] = ()
    git: bool = False

    def __init__(self, part: Part, kind: Kind, reason: str = "", reads: tuple[Path, ...] = (),
                 writes: tuple[Path, ...] = (), shows: tuple[tuple[Path, int | None], ...] = (),
                 git: bool = False) -> None:
        # Every Bash decision makes one per part: a frozen dataclass's own
        # __init__ sets each field through object.__setattr__, at several
        # times the cost of one update (as the core's Vote and Decision do).
        self.__dict__.update(part=part, kind=kind, reason=reason, reads=reads, writes=writes, shows=shows,
                             git=git)


@dataclass(frozen=True, init=False)
class Verdict:
    command: str
    parsed: Parsed
    parts: tuple[PartVerdict, ...] = ()
    cwds: tuple[Path, ...] = ()

    def __init__(self, command: str, parsed: Parsed, parts: tuple[PartVerdict, ...] = (),
                 cwds: tuple[Path, ...] = ()) -> None:
        self.__dict__.update(command=command, parsed=parsed, parts=parts, cwds=cwds)

    @property
    def simple(self) -> bool:
        return self.parsed.simple

    @property
    def read_only(self) -> bool:
        return self.simple and all(p.kind == "read" for p in self.parts)

    @property
    def file_edit(self) -> bool:
        """Only read-only parts and file commands, at least one of the latter."""
        return (self.simple and all(p.kind in ("read", "edit") for p in self.parts)
                and any(p.kind == "edit" for p in self.parts))

    @property
    def uses_git(self) -> bool:
        return any(p.git for p in self.parts)

    @property
    def reason(self) -> str:
        if not self.simple:
            return self.parsed.reason
        for p in self.parts:
            if p.kind == "other":
                return p.reason
        return "read-only" if self.read_only else "file commands"


class _Other(Exception):
    pass


def classify(command: str, cwd: Path, home: Path | None = None) -> Verdict:
    """Classify every part of ``command`` run in ``cwd``."""
    parsed = parse_command(command)
    if parsed.parts is None:
        return Verdict(command, parsed, (), (cwd,))
    home = home or Path(os.path.expanduser("~"))
    # A `cd` changes where later parts run; after `a || cd x` either place is
    # possible, so every path is checked against every directory seen so far.
    cwds: list[Path] = [cwd]
    moved: list[Path] = []
    out: list[PartVerdict] = []
    for part in parsed.parts:
        try:
            verdict = _part(part, tuple(cwds), home)
        except _Other as exc:
            verdict = PartVerdict(part, "other", str(exc))
        if verdict.kind != "other" and any(is_within(p, m) for p in (*verdict.reads, *verdict.writes)
                                           for m in moved):
            # What cp or mv put there was not on disk when the paths were checked.
            verdict = PartVerdict(part, "other", "it uses a path an earlier part copied or moved")
        out.append(verdict)
        if part.argv[0] in ("cp", "mv") and verdict.kind == "edit":
            moved.extend(verdict.writes)
        if part.argv[0] == "cd" and verdict.kind == "read" and verdict.reads:
            if part.in_pipeline:
                continue  # a cd in a pipeline runs in a subshell
            cwds.extend(p for p in verdict.reads if p not in cwds)
    return Verdict(command, parsed, tuple(out), tuple(cwds))


def _part(part: Part, cwds: tuple[Path, ...], home: Path) -> PartVerdict:
    words = part.words
    name = words[0]
    if name.glob or name.tilde or "/" in name.value:
        raise _Other(f"{name.value!r} is not a plain program name")
    prog = name.value
    args = words[1:]
    if prog == "cd":
        return _cd(part, args, cwds, home)
    if prog == "git":
        return _git(part, args, cwds, home)
    if prog == "find":
        return _find(part, args, cwds, home)
    if prog == "sed":
        return _sed(part, args, cwds, home)
    spec = PROGRAMS.get(prog)
    if spec is None:
        # returned, not raised: most commands a model runs are not on the list,
        # and the exception cost more than the rest of classifying the part
        return PartVerdict(part, "other", f"{prog} is not a known read-only command")
    operands, values = _options(prog, spec, args)
    if prog == "jq":
        _jq_filter(operands)
    reads, writes = _operand_paths(prog, spec, operands, values, cwds, home)
    if prog == "diff" and "--no-dereference" not in values and any(os.path.isdir(p) for p in reads):
        # Comparing folders (with -r or without) opens what every link in them
        # points to: a link in the checkout to ~/.aws is read.
        raise _Other("diff: comparing folders follows the symbolic links in them (add --no-dereference)")
    shows: tuple[tuple[Path, int | None], ...] = ()
    if spec.kind == "read" and part.last_in_pipeline and not part.stdout_discarded and len(reads) == 1:
        if prog in SHOWS_FILES and not values:
            shows = ((reads[0], None),)
        elif prog in SHOWS_FIRST_LINES and not (set(values) - {"-n", "--lines"}):
            count = _line_count(values)
            if count is not None:
                shows = ((reads[0], count),)
    if spec.kind == "edit":
        return PartVerdict(part, "edit", f"{prog} changes files", reads, writes)
    return PartVerdict(part, "read", "read-only", reads, (), shows)


# --- options ------------------------------------------------------------------


def _options(prog: str, spec: Spec, args: Sequence[Word]) -> tuple[list[Word], dict[str, str]]:
    """Check every option against the spec; return operands and option values.

    Options are recognised anywhere (GNU permutes arguments) until ``--``.
    """
    operands: list[Word] = []
    values: dict[str, str] = {}
    i = 0
    ended = False
    while i < len(args):
        w = args[i]
        text = w.value
        i += 1
        if ended or not text.startswith("-") or text == "-":
            operands.append(w)
            continue
        if text == "--":
            ended = True
            continue
        if spec.numeric and re.fullmatch(r"-\d+", text):
            values["-n"] = text[1:]
            continue
        if w.glob and not (text.startswith("--") and "=" in text.split("*")[0].split("?")[0].split("[")[0]):
            raise _Other(f"{prog}: the option {text!r} contains a glob (quote it)")
        if text.startswith("--"):
            opt, eq, value = text.partition("=")
            if eq:
                if opt not in spec.valued:
                    raise _Other(f"{prog}: option {opt} is not on the read-only list")
                values[opt] = value
            elif opt in spec.flags:
                values.setdefault(opt, "")
            elif opt in spec.valued:
                if i >= len(args):
                    raise _Other(f"{prog}: option {opt} needs a value")
                values[opt] = _plain_value(prog, args[i])
                i += 1
            else:
                raise _Other(f"{prog}: option {opt} is not on the read-only list")
            continue
        # A cluster of short options: -la is -l -a; -n3 is -n 3.
        j = 1
        while j < len(text):
            opt = "-" + text[j]
            if opt in spec.flags:
                values.setdefault(opt, "")
                j += 1
                continue
            if opt in spec.valued:
                rest = text[j + 1:]
                if rest:
                    values[opt] = rest
                elif i < len(args):
                    values[opt] = _plain_value(prog, args[i])
                    i += 1
                else:
                    raise _Other(f"{prog}: option {opt} needs a value")
                break
            raise _Other(f"{prog}: option {opt} is not on the read-only list")
    if spec.operands == "none" and operands:
        raise _Other(f"{prog} takes no operands here")
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        raise _Other(f"{prog}: more than {spec.max_operands} operand(s) may write a file")
    return operands, values


# jq's module system reads any file it can name: ``import "../../.aws/x" as
# $c;`` loads JSON, ``include``/``import`` load jq code, ``modulemeta`` reads a
# module's file. The filter is always the first operand (``-f``, ``-L``,
# ``--args`` and ``--rawfile`` are not on jq's list).
_JQ_FILE_WORDS = re.compile(r"\b(?:import|include|modulemeta)\b")


def _jq_filter(operands: list[Word]) -> None:
    if operands and _JQ_FILE_WORDS.search(operands[0].value):
        raise _Other("jq: import, include and modulemeta read files the command does not name")


def _plain_value(prog: str, word: Word) -> str:
    if word.glob:
        raise _Other(f"{prog}: an option value {word.value!r} contains a glob (quote it)")
    return word.value


def _line_count(values: dict[str, str]) -> int | None:
    raw = values.get("-n", values.get("--lines", "10"))
    return int(raw) if raw.isdigit() else None


# --- paths --------------------------------------------------------------------


def _operand_paths(prog: str, spec: Spec, operands: list[Word], values: dict[str, str],
                   cwds: tuple[Path, ...], home: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    if spec.operands in ("text", "none"):
        if any(w.glob for w in operands):
            raise _Other(f"{prog}: a glob among its operands (quote it)")
        return (), ()
    path_words = list(operands)
    if spec.operands == "pattern_paths":
        # -e is a pattern only where it takes a value (grep, rg); jq's -e is --exit-status.
        has_pattern_option = (any(k in values and k in spec.valued for k in ("-e", "--regexp", "-f", "--file"))
                              or any(k in values for k in ("--files", "--type-list")))
        if not has_pattern_option:
            if not path_words:
                raise _Other(f"{prog}: no pattern")
            if path_words[0].glob:
                raise _Other(f"{prog}: the pattern contains an unquoted glob (quote it)")
            path_words = path_words[1:]
    if spec.kind == "edit":
        return _edit_paths(prog, path_words, values, cwds, home)
    paths = [p for w in path_words for p in _resolve(w, cwds, home)]
    if not path_words and (spec.implicit_cwd or spec.operands == "pattern_paths"):
        paths = list(cwds)
    return tuple(paths), ()


def _edit_paths(prog: str, words: list[Word], values: dict[str, str], cwds: tuple[Path, ...],
                home: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """Reads and writes of touch, mkdir, cp and mv.

    cp and mv into an existing directory write ``dir/<name of source>``,
    resolved (a link there leads elsewhere); mv also removes its sources.
    """
    if not words:
        raise _Other(f"{prog}: no operands")
    if prog not in ("cp", "mv"):
        return (), tuple(p for w in words for p in _resolve(w, cwds, home))
    if len(words) < 2:
        raise _Other(f"{prog}: needs a source and a destination")
    sources, dest = words[:-1], words[-1]
    if any(w.glob for w in words):
        raise _Other(f"{prog}: a glob among its operands")
    src_paths = [p for w in sources for p in _resolve(w, cwds, home)]
    writes: list[Path] = []
    no_target = any(k in values for k in ("-T", "--no-target-directory"))
    for target in _resolve(dest, cwds, home):
        if target.is_dir() and not no_target:
            for w in sources:
                name = os.path.basename(w.value.rstrip("/")) or w.value
                writes.append(Path(os.path.realpath(target / name)))
        else:
            if len(sources) != 1:
                raise _Other(f"{prog}: several sources need an existing directory")
            writes.append(target)
    if prog == "mv":
        return (), tuple(src_paths + writes)
    return tuple(src_paths), tuple(writes)


def _resolve(word: Word, cwds: tuple[Path, ...], home: Path) -> list[Path]:
    """The real paths ``word`` names from each possible working directory."""
    text = word.value
    if word.tilde:
        text = str(home) + text[1:]
    out: list[Path] = []
    for cwd in cwds:
        if word.glob:
            matches = globlib.glob(text, root_dir=cwd) if not os.path.isabs(text) else globlib.glob(text)
            for m in matches:
                if m.startswith("-"):
                    raise _Other(f"the glob {word.value!r} matches {m!r}, which the program would take as an option")
            names = matches or [text]
        else:
            names = [text]
        for name in names:
            out.append(Path(os.path.realpath(os.path.join(cwd, name))))
    return out


# --- special programs -------------------------------------------------------------


def _cd(part: Part, args: Sequence[Word], cwds: tuple[Path, ...], home: Path) -> PartVerdict:
    if len(args) != 1 or args[0].value.startswith("-") or args[0].glob:
        raise _Other("cd takes exactly one directory here")
    return PartVerdict(part, "read", "read-only", tuple(_resolve(args[0], cwds, home)))


_FIND_ZERO = frozenset({
    "-print", "-print0", "-prune", "-empty", "-true", "-false", "-not", "!", "-a", "-and", "-o", "-or",
    "(", ")", ",", "-depth", "-d", "-xdev", "-mount", "-readable", "-writable", "-executable", "-nouser",
    "-nogroup", "-noleaf", "-ls", "-quit",
})
_FIND_ONE = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-type", "-xtype",
    "-maxdepth", "-mindepth", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-perm",
    "-user", "-group", "-uid", "-gid", "-links", "-inum", "-samefile", "-newer", "-anewer", "-cnewer",
    "-regextype", "-lname", "-ilname", "-used", "-printf",
})
_FIND_PATH_VALUES = frozenset({"-samefile", "-newer", "-anewer", "-cnewer"})


def _find(part: Part, args: Sequence[Word], cwds: tuple[Path, ...], home: Path) -> PartVerdict:
    """find's expression is its own language: accept listed tests and
    actions only (no -exec, -execdir, -ok, -delete, -fprint, -fls ...)."""
    i = 0
    while i < len(args) and args[i].value in ("-H", "-P"):  # not -L: it follows links out
        i += 1
    starts: list[Word] = []
    while i < len(args) and not (args[i].value.startswith("-") or args[i].value in ("(", "!", ")")):
        starts.append(args[i])
        i += 1
    reads = [p for w in starts for p in _resolve(w, cwds, home)] or list(cwds)
    while i < len(args):
        w = args[i]
        if w.glob:
            raise _Other(f"find: {w.value!r} is an unquoted glob (quote it)")
        if w.value in _FIND_ZERO:
            i += 1
        elif w.value in _FIND_ONE:
            if i + 1 >= len(args) or args[i + 1].glob:
                raise _Other(f"find: {w.value} needs a quoted value")
            if w.value in _FIND_PATH_VALUES:
                reads.extend(_resolve(args[i + 1], cwds, home))
            i += 2
        else:
            raise _Other(f"find: {w.value} is not on the read-only list")
    return PartVerdict(part, "read", "read-only", tuple(reads))


_SED_ADDR = r"(?:\d+|\$|/(?:[^/\\\n]|\\.)*/)"
_SED_PRINT = re.compile(rf"{_SED_ADDR}?(?:,{_SED_ADDR})?\s*[pl=]|{_SED_ADDR}?(?:,{_SED_ADDR})?\s*!?\s*d|q\d*|\d+q\d*")
_SED_SUBST = re.compile(r"s(?P<d>[/|#,:@])(?:(?!(?P=d))[^\\\n]|\\.)*(?P=d)(?:(?!(?P=d))[^\\\n]|\\.)*(?P=d)[gpiI\d]*")


def _sed(part: Part, args: Sequence[Word], cwds: tuple[Path, ...], home: Path) -> PartVerdict:
    """sed prints; its ``w``, ``W``, ``r``, ``R`` and ``e`` commands, the ``e``
    and ``w`` flags of ``s`` and ``-i`` write or execute. Only scripts made of
    print, delete, quit and plain substitution commands are accepted."""
    spec = Spec(frozenset({"-n", "-E", "-r", "-s", "-z", "-u", "--quiet", "--silent", "--regexp-extended",
                           "--separate", "--null-data", "--unbuffered", "--posix"}),
                frozenset())
    scripts: list[str] = []
    rest: list[Word] = []
    i = 0
    while i < len(args):
        text = args[i].value
        if re.fullmatch(r"-[^-]*e.*", text) and text != "-e":
            # -ne SCRIPT: the script hides inside a cluster; make it explicit.
            raise _Other("sed: write -e on its own")
        if text in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(_plain_value("sed", args[i + 1]))
            i += 2
            continue
        if args[i].value.startswith("--expression="):
            scripts.append(args[i].value.partition("=")[2])
            i += 1
            continue
        rest.append(args[i])
        i += 1
    operands, values = _options("sed", spec, rest)
    if not scripts:
        if not operands:
            raise _Other("sed: no script")
        if operands[0].glob:
            raise _Other("sed: the script contains an unquoted glob (quote it)")
        scripts.append(operands[0].value)
        operands = operands[1:]
    for script in scripts:
        for command in re.split(r"[;\n]", script):
            command = command.strip()
            if command and not (_SED_PRINT.fullmatch(command) or _SED_SUBST.fullmatch(command)):
                raise _Other(f"sed: the script command {command!r} is not on the read-only list")
    reads = tuple(p for w in operands for p in _resolve(w, cwds, home))
    shows: tuple[tuple[Path, int | None], ...] = ()
    quiet = any(k in values for k in ("-n", "--quiet", "--silent"))
    if quiet and len(scripts) == 1 and len(reads) == 1 and part.last_in_pipeline and not part.stdout_discarded:
        m = re.fullmatch(r"(?:1,)?(\d+|\$)p", scripts[0].strip())
        if m and (scripts[0].strip().startswith("1,") or m.group(1) == "$"):
            shows = ((reads[0], None if m.group(1) == "$" else int(m.group(1))),)
    return PartVerdict(part, "read", "read-only", reads, (), shows)


def _git(part: Part, args: Sequence[Word], cwds: tuple[Path, ...], home: Path) -> PartVerdict:
    if not args:
        raise _Other("git without a subcommand")
    sub = args[0].value
    if sub == "--version" and len(args) == 1:
        return PartVerdict(part, "read", "read-only", git=True)
    if sub.startswith("-"):
        raise _Other(f"git: the global option {sub} is not allowed without asking")
    rest = args[1:]
    nested = GIT_NESTED.get(sub)
    if nested is not None and rest and rest[0].value in nested:
        spec = nested[rest[0].value]
        rest = rest[1:]
    elif sub in GIT_SUBCOMMANDS and not (sub == "stash" or sub == "worktree"):
        spec = GIT_SUBCOMMANDS[sub]
    else:
        raise _Other(f"git {sub} is not a read-only git command")
    operands, values = _options(f"git {sub}", spec, rest)
    if sub in ("branch", "tag") and operands and not ({"-l", "--list"} & set(values)):
        raise _Other(f"git {sub} with a name creates or changes one")
    if sub == "config":
        if not ({"--get", "--get-all", "--get-regexp", "--list", "-l"} & set(values)):
            raise _Other("git config without --get or --list may write")
        if len(operands) > 2:
            raise _Other("git config with a value writes")
        operands = []
    if spec.operands in ("text", "none"):
        operands = []
    elif spec.operands == "pattern_paths" and not ({"-e"} & set(values)):
        operands = operands[1:]
    reads = [p for w in operands for p in _resolve(w, cwds, home)] + list(cwds)
    return PartVerdict(part, "read", "read-only", tuple(reads), git=True)
