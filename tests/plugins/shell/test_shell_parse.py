"""The parser's words are bash's words: checked against real bash.

Every program name in a line is defined as a bash function that records its
arguments; the line runs in an empty directory (so globs stay literal), and
the recorded argv must equal what the parser says for each part.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pegboard.plugins.shell._parse import parse_command

AGREE = [
    r"""ls 'a b' "c d" e\ f""",
    r"""echo "x\\y" "\$HOME" "\`x\`" "a\"b" """,
    "ls\t-la\tsrc",
    r"""git log --format='%H %s' -5""",
    r"""echo a#b #c""",
    'echo "multi\nline"',
    r"""echo 'a'"b"c\d""",
    r"""echo \\ \" \' \$""",
    "ls -- -x",
    "echo a;echo b\necho c",
    "echo a && echo b",
    'echo "a\\\nb"',
    "echo '' \"\" x",
    r"""echo "a'b" 'a"b' """,
    r"""echo \#notcomment""",
    r"""echo a\ \ b""",
    r"""echo "\n\t" '\n'""",
    "echo x | cat | wc",
    "echo a=b --c=d",
    "echo é ü 'tab\there'",
    r"""echo "!x" !x a\!b""",
    "echo [a] ? *",
    r"""echo "*" '?' \*""",
    "echo ~ ~/x a~b",
    "'ls' \"-la\" l's'",
    "echo x 2>/dev/null >&2 </dev/null",
    "  echo   padded   ",
]


@pytest.mark.parametrize("line", AGREE)
def test_parsed_words_match_bash(line: str, tmp_path: Path) -> None:
    parsed = parse_command(line)
    assert parsed.parts is not None, parsed.reason
    names = sorted({p.argv[0] for p in parsed.parts})
    rec = tmp_path / "rec"
    rec.mkdir()
    # One file per call: members of a pipeline run at the same time.
    funcs = "".join(f"{n}() {{ printf '%s\\0' {n} \"$@\" > \"$(mktemp -p {rec})\"; }}\n" for n in names)
    work = tmp_path / "empty"
    work.mkdir()
    home = str(tmp_path / "home")
    subprocess.run(["bash", "--noprofile", "--norc", "-c", funcs + line], cwd=work,
                   env={"PATH": os.environ["PATH"], "HOME": home}, capture_output=True, check=False, timeout=30)
    got = [tuple(f.read_text().split("\0")[:-1]) for f in rec.iterdir()]
    want = [tuple(home + w.value[1:] if w.tilde else w.value for w in p.words) for p in parsed.parts]
    assert sorted(got) == sorted(want)


@pytest.mark.parametrize("line", [
    "ls a\\\nb",         # bash joins the words, tree-sitter splits them
    "echo a\rb",          # a carriage return is not a blank to bash
    "echo $'\\x41'",
    'echo "$(id)"',
    "ls @(a|b)",
])
def test_lines_where_the_grammars_may_disagree_are_not_simple(line: str) -> None:
    assert parse_command(line).parts is None
