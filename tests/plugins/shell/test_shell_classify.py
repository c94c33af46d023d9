"""The read-only classifier: every known bypass class stays out, everyday reads stay in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pegboard.plugins.shell._classify import classify
from pegboard.plugins.shell._parse import MAX_PARTS, all_command_words, parse_command


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("print(1)\n")
    (tmp_path / "b.py").write_text("x = 2\n")
    return tmp_path


EVERYDAY = [
    "ls -la",
    "ls",
    "git status",
    "git log --oneline -5",
    "git diff --stat HEAD~1",
    "git show HEAD --stat",
    "git branch -a",
    "git rev-parse --show-toplevel",
    "rg -n foo src",
    "rg -n 'fo+' -g '*.py'",
    "find . -name '*.py' -type f",
    "find src -maxdepth 2 -type d -print",
    "wc -l *.py",
    "wc -l src/*.py",
    "cat b.py",
    "head -n 3 b.py",
    "tail -20 b.py",
    "sed -n '1,5p' b.py",
    "grep -rn foo src",
    "ls -la | grep py | wc -l",
    "git log --oneline -5 && git status --short",
    "ls src; pwd",
    "cat b.py 2>/dev/null || echo missing",
    "git status 2>&1 | head -n 5",
    "echo 'hello world'",
    "cd src && ls",
    "sort -n b.py | uniq -c",
    "du -sh src",
    "ls \\src",
    "ls -- src",
]


@pytest.mark.parametrize("command", EVERYDAY)
def test_everyday_reads_are_read_only(command: str, proj: Path) -> None:
    verdict = classify(command, proj)
    assert verdict.read_only, (command, verdict.reason)


BYPASSES = {
    # chaining and newlines
    "newline": "ls\nrm -rf src",
    "chain-rm": "ls && rm -rf src",
    "semicolon": "ls; rm x",
    "pipe-to-sh": "cat b.py | sh",
    "background": "ls & rm x",
    # substitutions and expansions
    "cmd-subst": "ls $(rm -rf src)",
    "backticks": "ls `rm -rf src`",
    "cmd-subst-in-quotes": 'echo "$(touch x)"',
    "process-subst": "cat <(touch x)",
    "process-subst-out": "ls > >(sh)",
    "param-expansion": "ls ${HOME}",
    "param-default-assign": "echo ${X:=$(touch y)}",
    "simple-var": "ls $HOME",
    "arith": "echo $((1+2))",
    "ansi-c": "ls $'\\x2d\\x2dall'",
    "brace-expansion": "echo {-o,x}",
    "tilde-user": "ls ~root",
    "line-continuation": "ls a\\\nb",
    "hash-mid-word": "echo a#$(touch x)",
    "hash-after-escaped-space": "echo a\\ #$(touch x)",
    "hash-after-quote": 'echo "a"#`touch x`',
    "carriage-return": "ls\rrm x",
    # redirections
    "redirect-write": "ls > out.txt",
    "redirect-append": "echo x >> b.py",
    "redirect-fd-file": "ls >&out.txt",
    "redirect-read": "cat < /etc/shadow",
    "heredoc": "cat <<EOF\nx\nEOF",
    "herestring": "cat <<< x",
    "redirect-clobber": "ls >| b.py",
    # assignments, subshells, functions, control flow
    "assignment": "PAGER=sh git log",
    "bare-assignment": "X=1",
    "subshell": "(ls; rm x)",
    "group": "{ ls; rm x; }",
    "function": "f() { rm x; }; f",
    "if": "if true; then rm x; fi",
    "for": "for f in *; do rm $f; done",
    "while": "while true; do ls; done",
    "negation": "! rm x",
    "test-cmd": "[[ -f x ]]",
    "export": "export BASH_ENV=x",
    # flags that write or execute
    "sort-o": "sort -o out b.py",
    "sort-output": "sort --output=out b.py",
    "sort-compress": "sort --compress-program=sh b.py",
    "sort-compress-abbrev": "sort --compress-prog=sh b.py",
    "sort-T": "sort -T /tmp b.py",
    "sed-i": "sed -i s/a/b/ b.py",
    "sed-in-place": "sed --in-place s/a/b/ b.py",
    "sed-e-cmd": "sed 'e touch x' b.py",
    "sed-s-e": "sed 's/a/touch x/e' b.py",
    "sed-w": "sed 'w out' b.py",
    "sed-s-w": "sed 's/a/b/w out' b.py",
    "sed-cluster-e": "sed -ne 'e touch x' 1p",
    "sed-r-file": "sed 'r /etc/passwd' b.py",
    "find-exec": "find . -exec rm {} \\;",
    "find-exec-quoted": "find . -exec rm '{}' ';'",
    "find-execdir": "find . -execdir touch x ';'",
    "find-delete": "find . -delete",
    "find-fprint": "find . -fprint out",
    "find-ok": "find . -ok rm '{}' ';'",
    "rg-pre": "rg --pre sh foo",
    "rg-pre-eq": "rg --pre=sh foo",
    "rg-pre-abbrev": "rg --pr=sh foo",
    "rg-search-zip": "rg -z foo",
    "rg-config-flag": "rg --ignore-file /etc/x foo",
    "man-html": "man --html=firefox ls",
    "git-output": "git log --output=x",
    "git-diff-output": "git diff --output=x",
    "git-ext-diff": "git diff --ext-diff",
    "git-textconv": "git log -p --textconv",
    "git-grep-pager": "git grep -O foo",
    "git-grep-open-pager": "git grep --open-files-in-pager=sh foo",
    "tree-o": "tree -o out",
    "xxd-outfile": "xxd b.py out",
    "uniq-outfile": "uniq b.py out",
    "date-set": "date -s 2020-01-01",
    "hostname-set": "hostname evil",
    "grep-pattern-file": "grep -f /etc/shadow b.py",
    "ls-unknown": "ls -Z",
    "ls-long-abbrev": "ls --al",
    "cat-unknown": "cat --bogus b.py",
    # wrappers
    "env": "env ls",
    "env-assign": "env PAGER=sh git log",
    "sh-c": "sh -c 'ls'",
    "bash-c": "bash -c ls",
    "timeout": "timeout 5 ls",
    "xargs": "echo b.py | xargs rm",
    "nice": "nice ls",
    "nohup": "nohup ls",
    "sudo": "sudo ls",
    "exec": "exec ls",
    "command": "command ls",
    "builtin": "builtin cd /",
    "eval": "eval ls",
    "source": "source ./x.sh",
    "dot": ". ./x.sh",
    "watch": "watch ls",
    "stdbuf": "stdbuf -o0 ls",
    # git global options and write subcommands
    "git-c": "git -c core.pager=sh log",
    "git-C": "git -C /tmp log",
    "git-dir": "git --git-dir=/tmp/x log",
    "git-work-tree": "git --work-tree=/tmp log",
    "git-p": "git -p log",
    "git-exec-path": "git --exec-path=/tmp log",
    "git-commit": "git commit -m x",
    "git-push": "git push",
    "git-branch-create": "git branch evil",
    "git-branch-delete": "git branch -D main",
    "git-tag-create": "git tag v1",
    "git-config-set": "git config core.pager sh",
    "git-config-set-2": "git config --get core.pager sh extra",
    "git-stash": "git stash",
    "git-remote-add": "git remote add x y",
    "git-help": "git help log",
    "git-checkout": "git checkout .",
    # program names that are paths
    "relative-program": "./ls",
    "absolute-program": "/bin/rm -rf x",
    "glob-program": "l* -la",
    # globs in option values
    "grep-e-glob": "grep -e * b.py",
    "find-name-glob": "find . -name *.py",
}


@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_bypass_classes_are_not_read_only(name: str, proj: Path) -> None:
    verdict = classify(BYPASSES[name], proj)
    assert not verdict.read_only, (name, BYPASSES[name])
    assert not verdict.file_edit, (name, BYPASSES[name])


def test_glob_matching_a_dash_file_is_refused(proj: Path) -> None:
    # `wc -l *.py` with a file named like an option: bash hands the option over.
    assert classify("wc -l *.py", proj).read_only
    (proj / "--files0-from=x.py").write_text("")
    verdict = classify("wc -l *.py", proj)
    assert not verdict.read_only
    assert "option" in verdict.reason


def test_glob_with_literal_prefix_cannot_become_an_option(proj: Path) -> None:
    (proj / "src" / "-rf").write_text("")
    assert classify("ls src/*", proj).read_only


def test_glob_expansion_reports_every_match(proj: Path) -> None:
    verdict = classify("cat *.py src/*.py", proj)
    reads = {p for part in verdict.parts for p in part.reads}
    assert reads == {(proj / "b.py").resolve(), (proj / "src" / "a.py").resolve()}


def test_paths_are_resolved_through_symlinks(proj: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret").write_text("s")
    (proj / "link").symlink_to(outside)
    verdict = classify("cat link/secret", proj)
    assert verdict.read_only
    assert verdict.parts[0].reads == ((outside / "secret").resolve(),)


def test_cd_paths_are_checked_against_every_possible_directory(proj: Path) -> None:
    verdict = classify("cd src || cat ../b.py", proj)
    reads = {p for part in verdict.parts for p in part.reads}
    # ../b.py from src, and from the project (the cd may have failed).
    assert (proj / "b.py").resolve() in reads
    assert proj.parent.joinpath("b.py").resolve() in reads


def test_quoting_does_not_change_words(proj: Path) -> None:
    parsed = parse_command("git  'log'   \"--oneline\" -5")
    assert parsed.parts is not None
    assert parsed.parts[0].argv == ("git", "log", "--oneline", "-5")


def test_part_cap_never_allows(proj: Path) -> None:
    ok = " && ".join(["ls"] * MAX_PARTS)
    assert classify(ok, proj).read_only
    over = " && ".join(["ls"] * (MAX_PARTS + 1))
    verdict = classify(over, proj)
    assert not verdict.read_only and not verdict.simple


def test_combined_short_flags_are_split(proj: Path) -> None:
    assert classify("ls -lah", proj).read_only
    assert not classify("ls -laZ", proj).read_only
    assert classify("head -n3 b.py", proj).read_only


def test_argument_permutation_is_checked(proj: Path) -> None:
    # GNU sort takes options after operands: the flag is still seen.
    assert not classify("sort b.py -o out", proj).read_only
    assert not classify("sort b.py --compress-program=sh", proj).read_only
    # After --, words are operands, exactly as sort sees them.
    assert classify("sort -- -o", proj).read_only


def test_file_commands(proj: Path) -> None:
    v = classify("mkdir -p build && touch build/x && mv build/x build/y && cp b.py build/b.py", proj)
    assert v.file_edit and not v.read_only
    writes = {p for part in v.parts for p in part.writes}
    assert (proj / "build").resolve() in writes
    assert not classify("rm -rf build", proj).file_edit
    assert not classify("touch x && rm x", proj).file_edit


def test_shown_files(proj: Path) -> None:
    assert classify("cat b.py", proj).parts[0].shows == (((proj / "b.py").resolve(), None),)
    assert classify("head -n 5 b.py", proj).parts[0].shows == (((proj / "b.py").resolve(), 5),)
    assert classify("cat b.py | head", proj).parts[0].shows == ()
    assert classify("cat b.py > /dev/null", proj).parts[0].shows == ()


def test_deny_words_see_inside_everything() -> None:
    found = all_command_words("echo $(rm -rf x); sudo -u a timeout 5 rm y; bash -c 'git push'")
    assert ("rm", "-rf", "x") in found
    assert ("rm", "y") in found
    assert ("git", "push") in found


@pytest.mark.parametrize("command", ["grep -R x .", "grep --dereference-recursive x .", "rg -L x", "rg --follow x",
                                     "find -L . -name x", "find . -follow", "du -L .", "tree -l", "ls -LR"])
def test_following_links_while_recursing_is_not_read_only(command: str, proj: Path) -> None:
    # A link inside the project would lead the read outside it unseen.
    assert not classify(command, proj).read_only


def test_copy_into_a_directory_writes_the_resolved_name(proj: Path) -> None:
    (proj / "dest").mkdir()
    (proj / ".git").mkdir()
    (proj / "dest" / "a.py").symlink_to(proj / ".git" / "a.py")
    v = classify("cp src/a.py dest", proj)
    assert v.file_edit
    # The copy lands where dest/a.py leads: inside .git.
    assert v.parts[0].writes == ((proj / ".git" / "a.py").resolve(),)


def test_later_parts_may_not_use_what_cp_or_mv_created(proj: Path) -> None:
    # A repository can ship `link -> .git`; copying or moving it makes a new
    # name that did not exist when the paths were resolved.
    for cmd in ["mv src moved && touch moved/hooks/post-checkout",
                "cp b.py copy.py && touch copy.py"]:
        v = classify(cmd, proj)
        assert not v.file_edit and "copied or moved" in v.reason, cmd
    assert classify("mkdir -p build && touch build/x", proj).file_edit


@pytest.mark.parametrize("command", ["cp -r src x", "cp -a src x", "cp -P link x", "cp -d link x",
                                     "cp --recursive src x", "cp --archive src x"])
def test_copying_trees_or_links_is_not_a_file_command(command: str, proj: Path) -> None:
    assert not classify(command, proj).file_edit


def _bash(line: str, cwd: Path) -> None:
    """Run ``line`` in plain bash: the controls showing each refused line is dangerous."""
    import subprocess

    subprocess.run(["bash", "--noprofile", "--norc", "-c", line], cwd=cwd, capture_output=True, timeout=30,
                   check=False)


def test_a_glob_matching_a_file_with_one_dash_is_refused(proj: Path) -> None:
    """A file named ``-o.envrc`` turns ``sort *`` into ``sort -o .envrc ...``:
    one dash is enough for an option, as bash shows."""
    assert classify("sort *", proj).read_only
    (proj / "-o.envrc").write_text("")
    verdict = classify("sort *", proj)
    assert not verdict.read_only and not verdict.file_edit
    assert "-o.envrc" in verdict.reason and "option" in verdict.reason
    assert classify("sort ./*", proj).read_only  # a literal prefix: never an option
    _bash("sort *", proj)
    assert (proj / ".envrc").exists()  # the control: bash really wrote .envrc


@pytest.mark.parametrize("line", [
    "echo x >& .git/hooks/pre-commit",
    "echo x >&.git/hooks/pre-commit",
    "echo x 1>& .git/hooks/pre-commit",
    "cat b.py >& .git/hooks/pre-commit",
])
def test_a_duplicating_redirection_to_a_word_writes_a_file(line: str, proj: Path) -> None:
    """``>&WORD`` with a word that is not a descriptor number writes stdout and
    stderr to the file WORD; only ``>&2``-style duplications are harmless."""
    verdict = classify(line, proj)
    assert not verdict.simple and not verdict.read_only and not verdict.file_edit
    assert "redirects to or from a file" in verdict.reason
    (proj / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
    _bash(line, proj)
    assert (proj / ".git" / "hooks" / "pre-commit").exists()  # the control
    assert classify("echo x >&2", proj).read_only and classify("echo x 2>& 1", proj).read_only


@pytest.mark.parametrize("line", ["ls & ls", "cat b.py &", "ls | cat &", "ls &\nls", "ls && cat b.py & ls"])
def test_a_part_sent_to_the_background_is_not_simple(line: str, proj: Path) -> None:
    """Every part here is read-only on its own: only the ``&`` can refuse the
    line (a background job outlives the checks of the parts after it)."""
    verdict = classify(line, proj)
    assert not verdict.simple and not verdict.read_only
    assert "background" in verdict.reason
    assert classify(line.replace("&\n", ";\n").replace(" & ", " ; ").rstrip("&"), proj).read_only


def _outside_secret(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "credentials").write_text("SECRET-KEY\n")
    (outside / "creds.json").write_text('{"key": "SECRET-JSON"}\n')
    (outside / "mod.jq").write_text('def leak: "SECRET-MODULE";\n')
    return outside


def test_diff_of_folders_follows_links_unless_told_not_to(proj: Path,
                                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    """GNU diff compares what the links in a folder point to, with ``-r`` or
    without: a link in the checkout to ``~/.aws/credentials`` is read."""
    import subprocess

    outside = _outside_secret(tmp_path_factory)
    for side in ("a", "b"):
        (proj / side).mkdir()
        (proj / side / "same.txt").write_text("x\n")
    (proj / "a" / "aws").symlink_to(outside / "credentials")
    (proj / "b" / "aws").write_text("nothing\n")
    for line in ("diff a b", "diff -r a b", "diff -ru a b", "diff --recursive --brief a b", "diff -q src a"):
        verdict = classify(line, proj)
        assert not verdict.read_only and "--no-dereference" in verdict.reason, line
    shown = subprocess.run(["diff", "-r", "a", "b"], cwd=proj, capture_output=True, text=True, check=False)
    assert "SECRET-KEY" in shown.stdout  # the control: diff really printed the link's target
    for line in ("diff -r --no-dereference a b", "diff --no-dereference a b", "diff a/same.txt b/same.txt",
                 "diff -u b.py src/a.py"):
        assert classify(line, proj).read_only, line
    safe = subprocess.run(["diff", "-r", "--no-dereference", "a", "b"], cwd=proj, capture_output=True, text=True,
                          check=False)
    assert "SECRET-KEY" not in safe.stdout and "symbolic link" in safe.stdout


@pytest.mark.parametrize("line", [
    "jq -n 'import \"{rel}/creds\" as $c; $c'",
    "jq -n 'include \"{rel}/mod\"; leak'",
    "jq -n '\"{rel}/mod\" | modulemeta'",
    "jq -e 'import \"{rel}/creds\" as $c; $c' b.json",
    "jq -n -L {out} 'import \"mod\" as m; m::leak'",
    "jq -nL{out} '1'",
    "jq --library-path {out} -n 1",
    "jq -f {out}/prog.jq b.json",
    "jq --rawfile k {out}/credentials -n '$k'",
])
def test_jq_that_can_read_other_files_is_not_read_only(line: str, proj: Path,
                                                       tmp_path_factory: pytest.TempPathFactory) -> None:
    import subprocess

    outside = _outside_secret(tmp_path_factory)
    (proj / "b.json").write_text("{}\n")
    rel = os.path.relpath(outside, proj)
    line = line.replace("{rel}", rel).replace("{out}", str(outside))
    verdict = classify(line, proj)
    assert not verdict.read_only and not verdict.file_edit, line
    if line.startswith(("jq -n 'import", "jq -n 'include")):  # the control: jq reads a file named only in the filter
        shown = subprocess.run(["bash", "--noprofile", "--norc", "-c", line], cwd=proj, capture_output=True,
                               text=True, check=False)
        assert "SECRET" in shown.stdout, (line, shown.stderr)


def test_everyday_jq_is_read_only(proj: Path) -> None:
    (proj / "b.json").write_text('{"a": [1, 2]}\n')
    for line in ("jq . b.json", "jq -r '.a[]' b.json", "jq -e '.a' b.json", "jq -c '{important: .a}' b.json",
                 "jq -n '1 + 1'"):
        verdict = classify(line, proj)
        assert verdict.read_only, (line, verdict.reason)
    verdict = classify("jq -e '.a' b.json", proj)
    assert verdict.parts[0].reads == ((proj / "b.json").resolve(),)  # -e is not a pattern option for jq
