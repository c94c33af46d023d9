"""git: the inspection subcommands the classifier trusts, and how they run.

No global option is accepted (``-c``, ``-C``, ``--git-dir``, ``--work-tree``,
``-p``, ``--exec-path``, ``--namespace`` ... each one either runs code or points
git at another repository). Only named subcommands, each with its own flags.

A read-only-looking git command can still run code from the repository's own
configuration: ``core.fsmonitor``, a pager, ``diff.external``, a textconv or
filter driver named by ``.gitattributes``, ``gpg.program`` through ``%G?``.
A command that is allowed without asking therefore runs with that machinery
switched off, through ``git_safe_env`` (GIT_CONFIG_COUNT entries act like
``-c`` on every git the command starts, with command-line precedence).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from ._programs import Spec

__all__ = ["GIT_SUBCOMMANDS", "GIT_NESTED", "git_safe_env", "git_toplevels"]

_DIFF_FLAGS = (
    "-p -u -s --patch --no-patch --stat --shortstat --numstat --dirstat --summary --name-only --name-status "
    "-w -b --ignore-all-space --ignore-space-change --ignore-blank-lines --ignore-cr-at-eol --minimal "
    "--patience --histogram --color --no-color --word-diff --color-words --no-renames -R -a --text "
    "-M -C --find-renames --find-copies --full-index --binary --no-ext-diff --no-textconv --raw -z "
    "--check --exit-code --quiet --relative --compact-summary --abbrev --no-prefix"
)
_DIFF_VALUED = (
    "-U --unified --color --word-diff --diff-filter --abbrev --relative --stat --dirstat "
    "--diff-algorithm --src-prefix --dst-prefix --inter-hunk-context -G -S --find-renames -l"
)
_LOG_FLAGS = (
    "--oneline --graph --all --branches --tags --remotes --abbrev-commit --no-abbrev-commit --no-merges "
    "--merges --first-parent --reverse -i --regexp-ignore-case --follow --relative-date --left-right "
    "--cherry-pick --cherry-mark --boundary --topo-order --date-order --author-date-order --no-walk "
    "--decorate --no-decorate --source --parents --children --full-history --simplify-by-decoration "
    "--all-match --invert-grep -E -F --extended-regexp --fixed-strings --pickaxe-regex --no-show-signature "
    "--mailmap --no-mailmap --use-mailmap --log-size --ancestry-path --dense --sparse --count"
)
_LOG_VALUED = (
    "-n --max-count --skip --since --after --until --before --author --committer --grep --format --pretty "
    "--date --decorate --max-parents --min-parents"
)


def _g(flags: str = "", valued: str = "", **kw: object) -> Spec:
    return Spec(frozenset(flags.split()), frozenset(valued.split()), **kw)  # type: ignore[arg-type]


GIT_SUBCOMMANDS: Mapping[str, Spec] = {
    "status": _g("-s -b -v -z --short --branch --long --verbose --show-stash --ahead-behind "
                 "--no-ahead-behind --porcelain --ignored --renames --no-renames -u --untracked-files",
                 "--porcelain --untracked-files --ignored --ignore-submodules --column"),
    "log": _g(f"{_LOG_FLAGS} {_DIFF_FLAGS}", f"{_LOG_VALUED} {_DIFF_VALUED}", numeric=True),
    "show": _g(f"{_LOG_FLAGS} {_DIFF_FLAGS}", f"{_LOG_VALUED} {_DIFF_VALUED}"),
    "diff": _g(f"{_DIFF_FLAGS} --cached --staged --merge-base", _DIFF_VALUED),
    "shortlog": _g("-s -n -e -c --summary --numbered --email --committer --all --no-merges", "--format --group"),
    "rev-parse": _g("--show-toplevel --git-dir --absolute-git-dir --git-common-dir --is-inside-work-tree "
                    "--is-inside-git-dir --is-bare-repository --show-prefix --show-cdup --abbrev-ref --verify "
                    "-q --quiet --symbolic --symbolic-full-name --short --all --branches --tags "
                    "--show-superproject-working-tree --is-shallow-repository", "--short --abbrev-ref"),
    "rev-list": _g("--all --count --reverse --no-merges --merges --first-parent --objects --left-right "
                   "--topo-order --branches --tags", "-n --max-count --since --until --author --skip",
                   numeric=True),
    "ls-files": _g("-c -d -m -o -i -s -u -k -z -t -v --cached --deleted --modified --others --ignored "
                   "--stage --unmerged --killed --exclude-standard --directory --no-empty-directory "
                   "--error-unmatch --full-name --eol --sparse", "-x --exclude --abbrev"),
    "ls-tree": _g("-r -d -t -l -z --name-only --name-status --long --full-name --full-tree", "--abbrev --format"),
    "blame": _g("-w -s -e -l -t -c -f -n -p -M -C --porcelain --line-porcelain --show-email --show-name "
                "--show-number --root --incremental --abbrev", "-L --date --abbrev"),
    "describe": _g("--tags --all --always --long --contains --first-parent --exact-match", "--abbrev --match "
                   "--exclude --candidates"),
    "cat-file": _g("-p -t -s -e"),
    "show-ref": _g("--heads --tags --head -d --dereference -s --hash --verify -q --quiet --abbrev"),
    "merge-base": _g("-a --all --is-ancestor --octopus --independent --fork-point"),
    "name-rev": _g("--name-only --tags --all --always --no-undefined"),
    "grep": _g("-n -i -v -w -l -L -c -h -H -o -q -z -E -F -G -P -I -a --cached --untracked --no-index "
               "--line-number --ignore-case --invert-match --word-regexp --files-with-matches "
               "--files-without-match --count --full-name --extended-regexp --fixed-strings --basic-regexp "
               "--perl-regexp --text --break --heading --show-function --recurse-submodules --all-match",
               "-e -A -B -C -m --max-depth --max-count --context --after-context --before-context",
               operands="pattern_paths"),
    # Listing forms only: with an operand they create, rename or delete.
    "branch": _g("-a -r -v -vv --all --remotes --verbose --list -l --show-current --color --no-color "
                 "--column --no-column -i --ignore-case",
                 "--contains --no-contains --merged --no-merged --sort --format --points-at --color"),
    "tag": _g("-l --list -i --ignore-case --column --no-column --color",
              "--contains --no-contains --merged --no-merged --sort --format --points-at -n"),
    "config": _g("--get --get-all --get-regexp --list -l --local --worktree --show-origin --show-scope "
                 "--name-only -z --null --bool --int --path --includes --no-includes"),
    "remote": _g("-v --verbose", operands="none"),
    "version": _g("", operands="none"),
}

# Subcommands whose read-only form is a nested word: git stash list, git worktree list.
GIT_NESTED: Mapping[str, Mapping[str, Spec]] = {
    "stash": {"list": _g(_LOG_FLAGS, _LOG_VALUED, operands="none")},
    "worktree": {"list": _g("--porcelain -v --verbose -z", operands="none")},
    "remote": {"get-url": _g("--push --all", operands="text", max_operands=1)},
}

# What a poisoned .git/config could otherwise make a read-only command run.
_HARDENING: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.attributesFile", "/dev/null"),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("diff.external", ""),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("log.showSignature", "false"),
    # A partial clone fetches missing objects on demand (``git show`` of a
    # blob it lacks), through the remote the repository names, with the
    # transport and upload-pack command it names: no transport at all.
    ("protocol.allow", "never"),
    *((f"protocol.{name}.allow", "never") for name in (
        "file", "ext", "fd", "git", "ssh", "http", "https", "ftp", "ftps")),
)
# Set in the environment of a read-only git: GIT_NO_LAZY_FETCH (git 2.44+)
# makes a missing object an error instead of a fetch; GIT_ALLOW_PROTOCOL (a
# list naming no real transport) overrides every protocol.*.allow of any
# config, including ones for remote helpers this list does not know.
_ENV = {"GIT_NO_LAZY_FETCH": "1", "GIT_ALLOW_PROTOCOL": ""}
# What the repository's own config may define and the overrides answer. Not
# ``remote.<name>.uploadpack``: git keeps the first value it reads, so no
# later ``-c`` can replace it; git must never get as far as a transport.
_OWN_KEYS = r"^(filter|diff|merge)\..*\.|^protocol\..*\.allow$"


def _config_overrides(cwds: Iterable[Path], base_env: Mapping[str, str]) -> list[tuple[str, str]]:
    """Answer what the repository's config defines that would run code.

    Filter, diff and merge drivers are named by .gitattributes and defined by
    config; a ``protocol.<name>.allow = always`` beats ``protocol.allow``.
    Their names are only known by reading the config (which runs nothing).
    """
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for cwd in cwds:
        try:
            proc = subprocess.run(
                ["git", "config", "--null", "--name-only", "--get-regexp", _OWN_KEYS],
                cwd=cwd, env=dict(base_env), stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        for key in proc.stdout.decode("utf-8", "replace").split("\0"):
            section, _, rest = key.partition(".")
            name, _, variable = rest.rpartition(".")
            if not name or (section, name) in seen:
                continue
            seen.add((section, name))
            if section == "filter":
                out += [(f"filter.{name}.clean", ""), (f"filter.{name}.smudge", ""),
                        (f"filter.{name}.process", ""), (f"filter.{name}.required", "false")]
            elif section == "diff":
                out += [(f"diff.{name}.textconv", ""), (f"diff.{name}.command", "")]
            elif section == "merge":
                out += [(f"merge.{name}.driver", "false")]
            elif section == "protocol" and variable == "allow":
                out += [(f"protocol.{name}.allow", "never")]
    return out


def git_safe_env(env: Mapping[str, str], cwds: Iterable[Path]) -> dict[str, str]:
    """``env`` plus the settings that keep git from running repository code."""
    out = dict(env)
    out.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        **_ENV,
    })
    pairs = [*_HARDENING, *_config_overrides(cwds, out)]
    out["GIT_CONFIG_COUNT"] = str(len(pairs))
    for i, (key, value) in enumerate(pairs):
        out[f"GIT_CONFIG_KEY_{i}"] = key
        out[f"GIT_CONFIG_VALUE_{i}"] = value
    return out


def git_toplevels(cwds: Iterable[Path], path: str) -> list[Path]:
    """The git directories and work trees git would read from ``cwds``.

    A repository's own config can move its work tree anywhere
    (``core.worktree = /home/user``), and a ``.git`` file can name any git
    directory (another, private repository's history); then ``git diff`` or
    ``git log -p`` print from there. They are paths the command reads, and
    are voted on as such.
    """
    # ``path``: a PATH without the working directories (this runs before any approval).
    env = {"PATH": path, "HOME": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "false"}
    out: list[Path] = []
    for cwd in cwds:
        try:
            # In order: rev-parse prints each answer it can before one fails
            # (--show-toplevel fails in a bare repository or inside .git).
            proc = subprocess.run(["git", "rev-parse", "--absolute-git-dir", "--git-common-dir", "--show-toplevel"],
                                  cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            continue
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            if line.strip():
                out.append(Path(os.path.realpath(os.path.join(cwd, line.strip()))))
    return list(dict.fromkeys(out))
