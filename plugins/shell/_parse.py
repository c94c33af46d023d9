"""Turn a bash command line into simple parts, or say why it cannot be.

The classifier and the rule matcher only ever look at what this module hands
them: a list of simple commands (``Part``) whose words are literal strings,
joined by ``&&``, ``||``, ``;``, newlines and ``|``. Anything else bash can do
(substitutions, expansions, assignments, subshells, functions, control flow,
here-documents, redirections to real files, background jobs) makes the whole
line "not simple", and a line that is not simple is never read-only and never
matched by an allow rule. Fail closed: a node type we do not list is refused.

tree-sitter-bash is an approximation of bash's grammar, so the parse is also
checked against the source bytes: any byte the tree does not account for must
be a blank, and a command's words may not be separated by a newline (bash would
end the command there). Where the two grammars could disagree, we refuse.

tree_sitter is imported lazily so that loading the plugin stays cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["MAX_PARTS", "Parsed", "Part", "Word", "parse_command", "all_command_words"]

# More parts than this is not something a person reviews; refuse rather than
# spend time, and never let the cap turn into an allow.
MAX_PARTS = 50
MAX_LENGTH = 20_000

_GLOB_CHARS = frozenset("*?[")
# Characters bash treats specially in an unquoted word that we do not model.
_UNMODELLED_UNQUOTED = frozenset("{}$`()<>|;&\n")


@dataclass(frozen=True)
class Word:
    """One argument as bash will pass it, when it is literal.

    ``glob``: an unquoted ``*``, ``?`` or ``[`` makes bash expand it against
    the file system. ``tilde``: an unquoted leading ``~`` or ``~/`` (HOME).
    """

    value: str
    glob: bool = False
    tilde: bool = False


@dataclass(frozen=True)
class Part:
    """One simple command: its words, and where its output goes."""

    words: tuple[Word, ...]
    in_pipeline: bool = False
    last_in_pipeline: bool = True
    stdout_discarded: bool = False

    @cached_property
    def argv(self) -> tuple[str, ...]:
        # Kept (parsed lines are cached, and each decision reads it several times).
        return tuple(w.value for w in self.words)


@dataclass(frozen=True)
class Parsed:
    """``parts`` when the line is simple; otherwise ``reason`` says why not."""

    parts: tuple[Part, ...] | None
    reason: str = ""
    background: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def simple(self) -> bool:
        return self.parts is not None


class _NotSimple(Exception):
    pass


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _tree(command: str) -> Any:
    return _parser().parse(command.encode("utf-8", "surrogatepass"))


@lru_cache(maxsize=2048)
def parse_command(command: str) -> Parsed:
    """Split ``command`` into simple parts, or explain why it is not simple."""
    if len(command) > MAX_LENGTH:
        return Parsed(None, f"the command is longer than {MAX_LENGTH} characters")
    if "\x00" in command:
        return Parsed(None, "the command contains a NUL byte")
    root = _tree(command).root_node
    if root.has_error:
        return Parsed(None, "the command does not parse as bash")
    source = command.encode("utf-8", "surrogatepass")
    try:
        _check_coverage(root, source)
        parts: list[Part] = []
        _statements(root, parts)
    except _NotSimple as exc:
        return Parsed(None, str(exc))
    if not parts:
        return Parsed(None, "the command is empty")
    if len(parts) > MAX_PARTS:
        return Parsed(None, f"the command has more than {MAX_PARTS} parts")
    return Parsed(tuple(parts))


# --- source coverage ----------------------------------------------------------


def _check_coverage(root: Node, source: bytes) -> None:
    """Every byte outside the tree's leaves must be a blank or a newline.

    A backslash outside any leaf (``ls a\\<newline>b``, which bash joins into
    one word while tree-sitter splits it) means the grammars disagree.
    """
    pos = 0
    for start, end in _leaf_ranges(root):
        gap = source[pos:start]
        if gap.strip(b" \t\n"):
            raise _NotSimple("the command uses syntax the classifier does not model")
        pos = max(pos, end)
    if source[pos:].strip(b" \t\n"):
        raise _NotSimple("the command uses syntax the classifier does not model")


def _leaf_ranges(node: Node) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.child_count == 0 or n.type in ("word", "raw_string", "string_content", "comment", "number"):
            out.append((n.start_byte, n.end_byte))
        else:
            stack.extend(reversed(n.children))
    out.sort()
    return out


# --- statements ---------------------------------------------------------------


def _statements(node: Node, parts: list[Part]) -> None:
    """program / list: statements joined by ; newline && ||."""
    for child in node.children:
        kind = child.type
        if kind in (";", "&&", "||", "comment"):
            continue
        if kind == "&":
            raise _NotSimple("the command starts a background job (&)")
        if kind == "list":
            _statements(child, parts)
        elif kind == "pipeline":
            _pipeline(child, parts)
        elif kind in ("command", "redirected_statement"):
            parts.append(_simple(child, in_pipeline=False, last=True))
        else:
            raise _NotSimple(f"the command uses {_describe(kind)}")
        if len(parts) > MAX_PARTS:
            raise _NotSimple(f"the command has more than {MAX_PARTS} parts")


def _pipeline(node: Node, parts: list[Part]) -> None:
    members = [c for c in node.children if c.type not in ("|", "comment")]
    for c in node.children:
        if c.type == "|&":
            raise _NotSimple("the command pipes standard error (|&)")
    for i, member in enumerate(members):
        if member.type not in ("command", "redirected_statement"):
            raise _NotSimple(f"the command uses {_describe(member.type)} in a pipeline")
        parts.append(_simple(member, in_pipeline=True, last=i == len(members) - 1))


def _simple(node: Node, *, in_pipeline: bool, last: bool) -> Part:
    redirects: list[Node] = []
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        if body is None or body.type != "command":
            raise _NotSimple("the command redirects something other than a simple command")
        # Nodes are fresh objects on every access: compare positions, not identity.
        redirects = [c for c in node.children if (c.start_byte, c.end_byte) != (body.start_byte, body.end_byte)]
        node = body
    words: list[Word] = []
    prev_end: int | None = None
    for child in node.children:
        if prev_end is not None and b"\n" in _gap(node, prev_end, child.start_byte):
            raise _NotSimple("a newline inside one command")
        prev_end = child.end_byte
        kind = child.type
        if kind == "command_name":
            inner = child.children
            if len(inner) != 1:
                raise _NotSimple("the program name is not a plain word")
            words.append(_word(inner[0]))
        elif kind == "variable_assignment":
            raise _NotSimple("the command sets a variable")
        elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            redirects.append(child)
        else:
            words.append(_word(child))
    if not words:
        raise _NotSimple("a command without a program")
    discarded = False
    for r in redirects:
        discarded = _redirect(r) or discarded
    return Part(tuple(words), in_pipeline=in_pipeline, last_in_pipeline=last, stdout_discarded=discarded)


def _gap(node: Node, start: int, end: int) -> bytes:
    text: bytes = node.text or b""
    return text[start - node.start_byte:end - node.start_byte]


def _redirect(node: Node) -> bool:
    """Allow only redirections that cannot write or read a real file:
    ``N>/dev/null``, ``&>/dev/null``, ``</dev/null`` and fd duplication
    (``2>&1``, ``>&2``). Returns True when standard output is thrown away."""
    if node.type != "file_redirect":
        raise _NotSimple("the command uses a here-document or here-string")
    fd: str | None = None
    op: str | None = None
    dest: Node | None = None
    for c in node.children:
        if c.type == "file_descriptor":
            fd = (c.text or b"").decode()
        elif not c.is_named:
            op = c.type
        else:
            dest = c
    if op is None or dest is None:
        raise _NotSimple("a redirection the classifier does not model")
    target = _word(dest)
    if op in (">&", "<&") and re.fullmatch(r"\d+|-", target.value) and not target.glob:
        return False
    if target.value != "/dev/null" or target.glob or target.tilde:
        raise _NotSimple("the command redirects to or from a file")
    if op in (">", ">>", ">|"):
        return fd in (None, "1")
    if op in ("&>", "&>>"):
        return True
    if op == "<":
        return False
    raise _NotSimple(f"the redirection {op} is not modelled")


# --- words --------------------------------------------------------------------


def _word(node: Node) -> Word:
    kind = node.type
    text = (node.text or b"").decode("utf-8", "surrogatepass")
    if kind == "word":
        return _unquoted(text)
    if kind == "number":
        if not re.fullmatch(r"-?\d+", text):
            raise _NotSimple(f"the number {text!r} is not plain")
        return Word(text)
    if kind == "raw_string":
        return Word(text[1:-1])
    if kind == "string":
        return Word(_double_quoted(node))
    if kind == "concatenation":
        pieces = [_word(c) for c in node.children]
        value = "".join(p.value for p in pieces)
        glob = any(p.glob for p in pieces)
        # Only a leading unquoted ~ expands; a later one is literal once joined.
        tilde = pieces[0].tilde if pieces else False
        return Word(value, glob=glob, tilde=tilde)
    raise _NotSimple(f"the command uses {_describe(kind)}")


def _unquoted(text: str) -> Word:
    out: list[str] = []
    glob = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 < len(text):
                if text[i + 1] != "\n":  # backslash-newline is a line continuation
                    out.append(text[i + 1])
                i += 2
                continue
            raise _NotSimple("a trailing backslash")
        if ch in _UNMODELLED_UNQUOTED:
            raise _NotSimple(f"the unquoted character {ch!r} (quote it to make it literal)")
        if ch in _GLOB_CHARS:
            glob = True
        if ch == "~" and i > 0:
            # bash expands ~ after = or : in some words; refuse rather than model it.
            if text[i - 1] in "=:":
                raise _NotSimple("a ~ after = or : (quote it)")
        out.append(ch)
        i += 1
    value = "".join(out)
    tilde = False
    if text.startswith("~"):
        if not (text == "~" or text.startswith("~/")):
            raise _NotSimple("~user expansion (quote it or write the path)")
        tilde = True
    return Word(value, glob=glob, tilde=tilde)


def _double_quoted(node: Node) -> str:
    for c in node.children:
        if c.type not in ('"', "string_content"):
            raise _NotSimple(f"the command uses {_describe(c.type)} inside double quotes")
    # The node's own text, not its children: tree-sitter leaves blank-only
    # content out of the children, and the value must be exactly bash's.
    raw = (node.text or b"").decode("utf-8", "surrogatepass")[1:-1]
    if re.search(r'(?<!\\)(?:\\\\)*[$`]', raw):
        raise _NotSimple("an expansion inside double quotes")
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


_DESCRIPTIONS = {
    "command_substitution": "command substitution ($(...) or backticks)",
    "process_substitution": "process substitution (<(...) or >(...))",
    "simple_expansion": "a variable expansion ($NAME)",
    "expansion": "a parameter expansion (${...})",
    "arithmetic_expansion": "arithmetic expansion ($((...)))",
    "ansi_c_string": "an ANSI-C string ($'...')",
    "translated_string": "a translated string ($\"...\")",
    "subshell": "a subshell",
    "compound_statement": "a { ...; } group",
    "function_definition": "a function definition",
    "if_statement": "if", "while_statement": "a loop", "for_statement": "a loop",
    "c_style_for_statement": "a loop", "case_statement": "case",
    "variable_assignment": "a variable assignment",
    "variable_assignments": "variable assignments",
    "declaration_command": "a declaration (export, declare, local)",
    "unset_command": "unset",
    "test_command": "a [[ ]] or [ ] test",
    "negated_command": "! negation",
    "brace_expression": "brace expansion",
}


def _describe(kind: str) -> str:
    return _DESCRIPTIONS.get(kind, f"{kind.replace('_', ' ')}")


# --- best effort, for deny rules ------------------------------------------------

_WRAPPERS = frozenset({
    "env", "sudo", "doas", "nice", "nohup", "timeout", "time", "exec", "command", "builtin",
    "xargs", "stdbuf", "ionice", "chrt", "taskset", "setsid", "unbuffer", "watch", "strace",
    "ltrace", "busybox", "flock", "chroot", "runuser", "su", "script", "caffeinate",
})


def all_command_words(command: str) -> list[tuple[str, ...]]:
    """Every command anywhere in the line, words as written (quotes removed
    where literal, raw text otherwise), plus the command each known wrapper
    runs. Used only to make deny and ask rules match widely: never to allow.
    """
    try:
        root = _tree(command).root_node
    except Exception:
        return []
    found: list[tuple[str, ...]] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "command":
            words: list[str] = []
            for c in n.children:
                if c.type in ("variable_assignment", "file_redirect", "heredoc_redirect", "herestring_redirect"):
                    continue
                target = c.children[0] if c.type == "command_name" and c.children else c
                try:
                    words.append(_word(target).value)
                except _NotSimple:
                    words.append((target.text or b"").decode("utf-8", "replace"))
            if words:
                found.extend(_unwrap(tuple(words)))
        stack.extend(n.children)
    return found


def _unwrap(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The command itself and, for wrappers, what follows their own options,
    and for ``sh -c``/``bash -c`` the script re-parsed."""
    out = [words]
    name = words[0].rsplit("/", 1)[-1]
    rest = list(words[1:])
    if name != words[0]:
        out.append((name, *rest))  # /bin/rm is rm
    if name in ("sh", "bash", "dash", "zsh", "ksh", "fish"):
        # -c, and clusters such as -lc or -ec: the next word is a script.
        for i, w in enumerate(rest):
            if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", w) and i + 1 < len(rest):
                out.extend(all_command_words(rest[i + 1]))
                break
        return out
    if name == "eval" and rest:
        out.extend(all_command_words(" ".join(rest)))
        return out
    if name in _WRAPPERS:
        # Which word starts the wrapped command depends on each wrapper's
        # options (sudo -u x, timeout 5, env A=B); every suffix is a candidate,
        # which can only make a deny rule match more often.
        for i in range(len(rest)):
            out.extend(_unwrap(tuple(rest[i:])))
    return out
