"""The allow-list: which programs the classifier trusts, with which flags.

Every entry lists the flags it accepts; anything not listed makes the part not
read-only. That is deliberately an allow-list, never a deny-list: a deny-list
misses ``sort --compress-program``, ``rg --pre``, ``find -fprint`` and every
flag the next release adds. Long options must be written out in full (GNU
getopt accepts any unambiguous abbreviation, so ``--compress-prog`` reaches
``--compress-program``: an abbreviation we do not list is simply unknown).

Flags that follow symbolic links while recursing (``grep -R``, ``rg -L``,
``find -L``, ``du -L``, ``tree -l``, ``cp -L``) are left out too: a link
inside the working directories would otherwise lead a read outside them
without the outside path ever appearing on the command line. GNU ``diff``
follows links whenever it compares folders (``-r`` or not), so a folder
operand needs ``--no-dereference``; ``jq``'s ``import``/``include`` read
any file (the classifier refuses those filters, and ``-L``/``-f`` are absent).

Programs that run other programs (env, xargs, sh, timeout, nice, sudo, exec,
...) are absent on purpose, and so are flags that write (``-o``, ``--output``,
``-i``), execute (``--pre``, ``-exec``, ``-z`` for rg) or read their own
configuration from a path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["PROGRAMS", "Spec", "OperandKind"]

OperandKind = Literal["paths", "text", "pattern_paths", "none"]


@dataclass(frozen=True)
class Spec:
    """One program's accepted command-line shapes.

    ``flags``: switches without a value. ``valued``: options that take a
    value (``-n 3``, ``-n3``, ``--lines=3``, ``--lines 3``). ``numeric``:
    ``-5`` means a count (head, tail, git log). ``operands``: what the
    non-option words are. ``kind``: ``read`` for read-only programs,
    ``edit`` for the file commands acceptEdits lets run. ``implicit_cwd``:
    with no path operand the program reads the working directory.
    """

    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    numeric: bool = False
    operands: OperandKind = "paths"
    max_operands: int | None = None
    kind: Literal["read", "edit"] = "read"
    implicit_cwd: bool = False


def _s(flags: str = "", valued: str = "", **kw: object) -> Spec:
    extra = {"--help", "--version"}
    return Spec(frozenset(flags.split()) | extra, frozenset(valued.split()), **kw)  # type: ignore[arg-type]


PROGRAMS: Mapping[str, Spec] = {
    "ls": _s("-a -A -l -h -R -t -S -r -1 -d -F -i -s -c -u -n -g -o -p -x -C -m -Q -N -v -X -U -H -k -G -B "
             "--all --almost-all --human-readable --recursive --reverse --classify --directory --inode --size "
             "--literal --group-directories-first --full-time --no-group --numeric-uid-gid "
             "--ignore-backups --si --color",
             "-I -T -w --ignore --hide --sort --time-style --quoting-style --width --time --color --format "
             "--indicator-style --tabsize --block-size", implicit_cwd=True),
    "cat": _s("-n -b -A -E -s -T -v -e -t -u --number --number-nonblank --show-all --show-ends "
              "--squeeze-blank --show-tabs --show-nonprinting"),
    "head": _s("-q -v -z --quiet --silent --verbose --zero-terminated", "-n -c --lines --bytes", numeric=True),
    "tail": _s("-q -v -z --quiet --silent --verbose --zero-terminated", "-n -c --lines --bytes", numeric=True),
    "wc": _s("-l -w -c -m -L --lines --words --bytes --chars --max-line-length"),
    "grep": _s("-r -n -i -y -v -l -L -c -w -x -E -F -G -P -o -h -H -s -q -z -Z -a -I -T -b -U "
               "--recursive --line-number --ignore-case --no-ignore-case --invert-match "
               "--files-with-matches --files-without-match --count --word-regexp --line-regexp "
               "--extended-regexp --fixed-strings --basic-regexp --perl-regexp --only-matching --no-filename "
               "--with-filename --no-messages --quiet --silent --null-data --null --text --byte-offset "
               "--initial-tab --color --colour --line-buffered",
               "-e -A -B -C -m --regexp --after-context --before-context --context --max-count --include "
               "--exclude --exclude-dir --color --colour --label --binary-files -d --directories -D --devices",
               numeric=True, operands="pattern_paths"),
    "rg": _s("-n -N -i -S -s -l -c -w -x -F -v -u -. -o -H -I -U -P -0 -a -b -q -p "
             "--hidden --no-ignore --no-ignore-vcs --no-ignore-dot --no-ignore-global --no-ignore-parent "
             "--files --json --only-matching --line-number --no-line-number --heading --no-heading "
             "--multiline --multiline-dotall --stats --null --count --count-matches "
             "--files-with-matches --files-without-match --ignore-case --smart-case --case-sensitive "
             "--word-regexp --line-regexp --fixed-strings --invert-match --with-filename --no-filename "
             "--text --byte-offset --quiet --pretty --vimgrep --column --no-column --trim --type-list "
             "--no-messages --pcre2 --crlf --no-config --sort-files --unrestricted --color",
             "-g -t -T -A -B -C -e -m -d -M -r -E -j "
             "--glob --iglob --type --type-not --after-context --before-context --context --regexp "
             "--max-count --max-depth --max-columns --replace --sort --sortr --encoding --threads "
             "--max-filesize --color --colors --path-separator --field-match-separator",
             operands="pattern_paths", implicit_cwd=True),
    "pwd": _s("-L -P", operands="none"),
    "echo": _s("-n -e -E", operands="text"),
    "printf": _s("", operands="text"),
    "true": _s("", operands="text"),
    "false": _s("", operands="text"),
    "date": _s("-u -R --utc --universal --rfc-email", "-d -I --date --iso-8601 --rfc-3339", operands="text"),
    "whoami": _s("", operands="none"),
    "id": _s("-u -g -G -n -r -z --user --group --groups --name --real", operands="text", max_operands=1),
    "uname": _s("-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release "
                "--kernel-version --machine --processor --hardware-platform --operating-system",
                operands="none"),
    "hostname": _s("-f -s -i -I -d --fqdn --short --ip-address --all-ip-addresses --domain", operands="none"),
    "which": _s("-a", operands="text"),
    "type": _s("-a -t -p -P -f", operands="text"),
    "basename": _s("-a -z --multiple --zero", "-s --suffix", operands="text"),
    "dirname": _s("-z --zero", operands="text"),
    "realpath": _s("-e -m -s -q -z -L -P --canonicalize-existing --canonicalize-missing --no-symlinks "
                   "--quiet --zero --logical --physical", "--relative-to --relative-base"),
    "readlink": _s("-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing "
                   "--no-newline --quiet --silent --verbose --zero"),
    "stat": _s("-L -f -t --dereference --file-system --terse", "-c --format --printf"),
    "file": _s("-b -i -L -h -k -N -0 --brief --mime --mime-type --mime-encoding --dereference "
               "--no-dereference --keep-going --no-pad --print0"),
    "du": _s("-s -h -a -c -k -m -b -x -S -0 --summarize --human-readable --all --total --bytes "
             "--apparent-size --one-file-system --separate-dirs --si --null",
             "-d --max-depth --exclude --block-size -t --threshold", implicit_cwd=True),
    "df": _s("-h -H -k -T -i -a -l -P --human-readable --si --print-type --inodes --all --local --portability",
             "-t -x --type --exclude-type --output"),
    "tree": _s("-a -d -f -i -x -p -s -h -u -g -D -F -q -N -r -t -v -U -C -n -J -X --du --noreport "
               "--dirsfirst --gitignore --prune --si --inodes --device", "-L -P -I --charset --filelimit "
               "--sort", implicit_cwd=True),
    "sort": _s("-n -r -u -f -h -V -b -d -g -i -M -R -s -z -c -C --numeric-sort --reverse --unique "
               "--ignore-case --human-numeric-sort --version-sort --ignore-leading-blanks --dictionary-order "
               "--general-numeric-sort --ignore-nonprinting --month-sort --random-sort --stable "
               "--zero-terminated --check",
               "-k -t --key --field-separator"),
    "uniq": _s("-c -d -u -i -z -D --count --repeated --unique --ignore-case --zero-terminated",
               "-f -s -w --skip-fields --skip-chars --check-chars", max_operands=1),
    "cut": _s("-s -z -n --only-delimited --complement --zero-terminated",
              "-d -f -c -b --delimiter --fields --characters --bytes --output-delimiter"),
    "tr": _s("-d -s -c -C -t --delete --squeeze-repeats --complement --truncate-set1", operands="text"),
    "diff": _s("-u -q -r -N -w -b -B -i -a -s -y -p -t -T --unified --brief --recursive --new-file "
               "--ignore-all-space --ignore-space-change --ignore-blank-lines --ignore-case --text "
               "--report-identical-files --side-by-side --show-c-function --expand-tabs --initial-tab "
               "--minimal --color --strip-trailing-cr --no-dereference",
               "-U -W -x --width --exclude --color --label",
               numeric=True),
    "cmp": _s("-b -l -s --print-bytes --verbose --quiet --silent", "-n -i --bytes --ignore-initial",
              max_operands=2),
    "comm": _s("-1 -2 -3 -i -z --check-order --nocheck-order --total --zero-terminated",
               "--output-delimiter", max_operands=2),
    "nl": _s("-p", "-b -n -s -w -v -i", max_operands=1),
    "tac": _s("-b -r --before --regex", "-s --separator"),
    "rev": _s(""),
    "column": _s("-t -x -n -e", "-c -s -o --separator --output-separator"),
    "od": _s("-b -c -d -o -x -v", "-A -t -N -j -w"),
    "xxd": _s("-p -u -i -b -e -E", "-l -c -g -s", max_operands=1),
    "hexdump": _s("-C -c -b -d -o -x -v", "-n -s"),
    "md5sum": _s("-b -t -z --binary --text --tag --zero"),
    "sha1sum": _s("-b -t -z --binary --text --tag --zero"),
    "sha256sum": _s("-b -t -z --binary --text --tag --zero"),
    "sha512sum": _s("-b -t -z --binary --text --tag --zero"),
    "seq": _s("-w --equal-width", "-s -f --separator --format", operands="text"),
    "sleep": _s("", operands="text", max_operands=1),
    "printenv": _s("-0 --null", operands="text"),
    "test": _s("", operands="text"),
    "jq": _s("-r -j -c -s -n -e -S -a -C -M --raw-output --join-output --compact-output --slurp --null-input "
             "--exit-status --sort-keys --ascii-output --tab --raw-input -R",
             "--indent", operands="pattern_paths"),
    # File commands: never read-only, allowed in acceptEdits when every path is inside.
    "touch": _s("-a -m -c --no-create", "-d -t --date", kind="edit"),
    "mkdir": _s("-p -v --parents --verbose", "-m --mode", kind="edit"),
    # Not -r/-a/-P/-d: copying a tree (or a link as a link) can carry a symbolic
    # link to .git into a new name that a later part then writes through.
    "cp": _s("-p -v -n -u -T --verbose --no-clobber --update --no-target-directory", kind="edit"),
    "mv": _s("-v -n -u -T --verbose --no-clobber --update --no-target-directory", kind="edit"),
}

# Commands whose whole output is the file when given one: a run of these
# counts as the model having read the file (the fs plugin's tracker).
SHOWS_FILES = frozenset({"cat"})
# head and tail show a file in full only when it is short enough.
SHOWS_FIRST_LINES = frozenset({"head", "tail"})
