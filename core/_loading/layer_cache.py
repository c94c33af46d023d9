"""What a large config file said, and that its rules passed their checks,
remembered from the load before: so that 10,000 rules are not parsed and
compiled again on every ``Toolbox.load``.

Two entries per config file, in ``<config dir>/cache/``:

* ``toml-*``: the file's parsed TOML, under the SHA-256 of its bytes. Any
  changed byte is a new digest, so a full parse; so is an entry that does
  not read back cleanly (marshal holds only plain data: nothing in it runs).
* ``rules-*``: digests of rule sets whose every rule parsed and compiled,
  each digest covering the rules' text, their file and layer, and the
  versions and source files of pegboard and of every plugin (see
  ``PermissionEngine``): a changed rule, a new plugin version or a plugin
  that compiles rules differently means the rules are checked again at load.
* ``compiled-*``: per file, behavior and tool, what the plugins' matchers
  kept of those rules when a process compiled them (the rule cache
  protocol: a matcher's or combined group's ``save()``, plain data), under
  the same digest: the next process builds its matchers from it instead of
  parsing every rule again. A changed rule or plugin is another digest, so
  nothing kept is used. Only plain data can be kept (marshal refuses
  anything else), and what a plugin kept reaches only that plugin's own
  code, which checks anything the disk decides (a path's real name).
* ``protected-*``: the protected-path patterns in force as the regular
  expressions pathspec makes of them, under the patterns and pathspec's own
  files (``_protected``): the first write decided in a process then imports
  no pathspec.

Only the person's own files are remembered (a file of theirs they could
rewrite anyway), never the system policy nor a file someone else owns: an
entry must not let anyone change what a file says who could not change the
file. The folder is pegboard's config folder, which the file tools and the
shell's sandbox protect like the config itself. Small files are not
remembered: parsing them costs less than reading an entry. A cache that
cannot be written only costs speed.
"""

from __future__ import annotations

import errno
import hashlib
import marshal
import os
import stat
import sys
from pathlib import Path
from typing import Any
from .._util.atomic import atomic_write
from .._util.path_facts import resolve_path

__all__ = ["TOML_MIN_BYTES", "describe_file_type", "mark_rules_checked", "package_files", "read_compiled",
           "read_plain", "read_regular_file", "read_toml", "rules_checked", "stamp", "write_compiled", "write_plain"]

FORMAT = 2  # 2: the core's modules moved into folders
# tomllib parses about 3.5 MB/s here: below this a file parses faster than an entry is checked.
TOML_MIN_BYTES = 8 * 1024
# Rule sets kept per file: one for each plugin set or project root it was loaded with lately.
KEPT_RULE_SETS = 4


def read_toml(path: Path, cache_dir: Path | None) -> dict[str, Any]:
    """The parsed TOML of ``path``: from the cache under ``cache_dir`` when the
    file's bytes are the ones parsed before, else parsed (and remembered).
    ``cache_dir`` None: parse, remember nothing. Raises ``OSError`` (for
    anything but a regular file too), ``UnicodeDecodeError`` and
    ``tomllib.TOMLDecodeError`` (for values nested deeper than ``MAX_DEPTH``
    too)."""
    raw, st = read_regular_file(path)
    owned = st.st_uid == os.geteuid()
    if cache_dir is None or not owned or len(raw) < TOML_MIN_BYTES:
        return _parse(raw)
    digest = hashlib.sha256(raw).digest()
    slot = _slot(cache_dir, "toml", path)
    entry = _read_entry(slot)
    if entry is not None and entry.get("digest") == digest and isinstance(entry.get("data"), dict):
        return entry["data"]
    data = _parse(raw)
    try:
        encoded = marshal.dumps({**_header(), "digest": digest, "data": data})
    except ValueError:  # a datetime value: not plain data, so never remembered
        return data
    _write(slot, encoded)
    return data


# Deeper than any config needs: what merges, copies and validates layers
# recurses, so a 5,000-deep array must stop here, as a config error.
MAX_DEPTH = 64


def _parse(raw: bytes) -> dict[str, Any]:
    import tomllib

    try:
        data = tomllib.loads(raw.decode())
    except RecursionError:  # tomllib recurses into arrays and inline tables
        raise tomllib.TOMLDecodeError(f"arrays or tables nested more than {MAX_DEPTH} deep") from None
    if _deeper_than(data, MAX_DEPTH):  # dotted keys and [a.b.c] headers nest without recursing
        raise tomllib.TOMLDecodeError(f"arrays or tables nested more than {MAX_DEPTH} deep")
    return data


def _deeper_than(data: object, limit: int) -> bool:
    """Whether ``data`` nests lists or dicts more than ``limit`` deep (without recursing)."""
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def read_regular_file(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` and its status, refusing (``OSError``) anything
    but a regular file: opened without blocking, so a FIFO put where a
    config file was expected is an error rather than a command that waits
    for a writer for ever, and checked on the open file itself."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({describe_file_type(st.st_mode)})")
        return fh.read(), st


def describe_file_type(mode: int) -> str:
    """What a file that is not a regular one is, in a word or two."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def rules_checked(cache_dir: Path, path: Path, key: bytes) -> bool:
    """Whether the rule set ``key`` (a digest) of the file ``path`` passed its checks before."""
    entry = _read_entry(_slot(cache_dir, "rules", path))
    keys = entry.get("keys") if entry is not None else None
    return isinstance(keys, list) and key in keys


def mark_rules_checked(cache_dir: Path, path: Path, key: bytes) -> None:
    """Remember that the rule set ``key`` of ``path`` passed its checks."""
    slot = _slot(cache_dir, "rules", path)
    entry = _read_entry(slot)
    keys = entry.get("keys") if entry is not None else None
    kept = [k for k in keys if isinstance(k, bytes) and k != key] if isinstance(keys, list) else []
    _write(slot, marshal.dumps({**_header(), "keys": [key, *kept][:KEPT_RULE_SETS]}))


def read_compiled(cache_dir: Path, path: Path, key: bytes, behavior: str,
                  tool: str) -> tuple[list[Any] | None, list[tuple[str, tuple[int, ...], Any]]] | None:
    """What was kept of the ``behavior`` rules for ``tool`` of the rule set
    ``key`` of the file ``path`` (``write_compiled``): per rule, what its
    matcher saved (or None), and the combined groups as (matcher class,
    positions, what the group saved); None when nothing usable was kept."""
    entry = _read_entry(_slot(cache_dir, "compiled", path, f"{behavior}\0{tool}"))
    if entry is None or entry.get("key") != key:
        return None
    rules, groups = entry.get("rules"), entry.get("groups")
    if (rules is not None and not isinstance(rules, list)) or not isinstance(groups, list):
        return None
    out: list[tuple[str, tuple[int, ...], Any]] = []
    for group in groups:
        if not (isinstance(group, list) and len(group) == 3 and isinstance(group[0], str)
                and isinstance(group[1], list) and all(type(i) is int for i in group[1])):
            return None
        out.append((group[0], tuple(group[1]), group[2]))
    return rules, out


def write_compiled(cache_dir: Path, path: Path, key: bytes, behavior: str, tool: str, rules: list[Any] | None,
                   groups: list[tuple[str, tuple[int, ...], Any]]) -> bool:
    """Keep what ``read_compiled`` gives back; False when it is not plain
    data (nothing is written then) or cannot be written."""
    try:
        encoded = marshal.dumps({**_header(), "key": key, "rules": rules,
                                 "groups": [[name, list(positions), data] for name, positions, data in groups]})
    except ValueError:  # an object marshal cannot hold: not plain data
        return False
    return _write(_slot(cache_dir, "compiled", path, f"{behavior}\0{tool}"), encoded)


def read_plain(cache_dir: Path, name: str) -> dict[str, Any] | None:
    """What ``write_plain`` kept under ``name`` (None: nothing, or nothing that reads back cleanly)."""
    return _read_entry(cache_dir / f"{name}.marshal")


def write_plain(cache_dir: Path, name: str, data: dict[str, Any]) -> bool:
    """Keep ``data`` (plain data) under ``name``; False when it is not plain data or cannot be written."""
    try:
        encoded = marshal.dumps({**_header(), **data})
    except ValueError:
        return False
    return _write(cache_dir / f"{name}.marshal", encoded)


def stamp(path: str | Path) -> list[int] | None:
    """A file's modification time and size, for a cache key (None: not there)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def package_files(module_name: str) -> list[str]:
    """The source files beside an imported module (a package's own folder),
    whose stamps tell an edited install from the one a cache entry saw."""
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if not file:
        return []
    folder = os.path.dirname(file)
    try:
        return [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".py")]
    except OSError:
        return []


def _header() -> dict[str, Any]:
    return {"format": FORMAT, "python": sys.version}


def _slot(cache_dir: Path, kind: str, path: Path, part: str = "") -> Path:
    name = hashlib.sha256(os.fsencode(os.path.abspath(path)) + (b"\0" + part.encode() if part else b"")).hexdigest()[:32]
    return cache_dir / f"{kind}-{name}.marshal"


def _read_entry(slot: Path) -> dict[str, Any] | None:
    try:
        with slot.open("rb") as fh:
            entry = marshal.loads(fh.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(entry, dict) or any(entry.get(k) != v for k, v in _header().items()):
        return None
    return entry


def _write(slot: Path, encoded: bytes) -> bool:
    try:
        slot.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(resolve_path(slot, slot.parent), encoded, default_mode=0o600)
    except (OSError, ValueError):
        return False  # a cache that cannot be written only costs speed
    return True
