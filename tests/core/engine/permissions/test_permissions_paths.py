"""Path facts the engine relies on: resolving, containment, and the
protected-path matcher, each checked against its reference."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pathspec
import pytest

from pegboard._loading.config import DEFAULT_PROTECTED
from pegboard._util.path_facts import (
    _resolve,
    gitignore_form,
    is_within,
    relative_posix,
    resolve_path,
    resolve_text,
)
from pegboard._engine.permissions.protected import path_matcher


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path))
    (root / "real" / "sub").mkdir(parents=True)
    (root / "real" / "sub" / "f.txt").write_text("x")
    (root / "outside").mkdir()
    (root / "link").symlink_to(root / "real")
    (root / "real" / "escape").symlink_to(root / "outside")
    (root / "dangling").symlink_to(root / "outside" / "not-yet")
    (root / "loop").symlink_to(root / "loop")
    (root / "file").write_text("x")
    return root


NAMES = ["real", "link", "escape", "dangling", "loop", "file", "missing", "..", ".", "sub", "f.txt"]


def test_fast_realpath_agrees_with_the_reference(tree: Path) -> None:
    checked = 0
    for depth in (1, 2, 3):
        for parts in itertools.product(NAMES, repeat=depth):
            path = os.path.join(str(tree), *parts)
            assert _resolve(path)[0] == os.path.realpath(path), path
            # "nothing there" lets a vote skip looking again: it must never be said of a path that exists
            real = os.path.realpath(path)
            assert _resolve(path) == (real, not os.path.lexists(real)), path
            checked += 1
    assert checked > 1000


def test_resolve_follows_symlinks_out_of_the_tree(tree: Path) -> None:
    assert resolve_path("link/escape/new.txt", tree) == tree / "outside" / "new.txt"
    assert resolve_path("dangling", tree) == tree / "outside" / "not-yet"
    assert resolve_path(str(tree / "link" / "sub" / "f.txt"), Path("/")) == tree / "real" / "sub" / "f.txt"
    with pytest.raises(ValueError, match="NUL"):
        resolve_path("a\x00b", tree)
    assert resolve_text("link/sub/new/deeper.txt", tree) == (str(tree / "real" / "sub" / "new" / "deeper.txt"), True)
    assert resolve_text("~", tree) == (os.path.realpath(Path.home()), False)
    assert resolve_text("/new.txt", tree) == ("/new.txt", not os.path.lexists("/new.txt"))


@pytest.mark.parametrize("path, directory", [
    ("/srv/app", "/srv/app"), ("/srv/app/x", "/srv/app"), ("/srv/app2", "/srv/app"), ("/srv", "/srv/app"),
    ("/x", "/"), ("/", "/"), ("/srv/app/", "/srv/app"), ("/srv/app/x/y", "/srv/app/"),
])
def test_containment_agrees_with_pathlib(path: str, directory: str) -> None:
    try:
        reference: str | None = Path(path).relative_to(Path(directory)).as_posix()
    except ValueError:
        reference = None
    assert is_within(Path(path), Path(directory)) == (reference is not None)
    assert relative_posix(Path(path), Path(directory)) == reference


def test_protected_matcher_agrees_with_pathspec() -> None:
    patterns = [*DEFAULT_PROTECTED, ".git", "secrets/**", "secrets", "*.tfstate", "infra/prod/**", "infra/prod"]
    fast = path_matcher(patterns)
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    rels = [".git", ".git/config", "a/.git/HEAD", ".gitignore", "x.git", ".github/x", ".ssh", ".ssh/id",
            ".bashrc", "a/.bashrc", ".bashrc.bak", ".config/fish/config.fish", "a/.config/fish/x",
            "secrets", "secrets/k", "a/secrets/k", "s.tfstate", "a/b/s.tfstate", "infra/prod/x",
            "a/infra/prod/x", "infra/dev/x", ".pegboard/config.toml", ".mcp.json", "a/.mcp.json",
            ".gitconfig", "src/main.py", ".profile", ".zshrc", "docs/.zshenv"]
    for rel in rels:
        assert fast(rel) == spec.match_file(rel), rel
    # With a negation the order of lines matters: pathspec decides.
    negated = [*patterns, "!.mcp.json"]
    assert not path_matcher(negated)(".mcp.json") and path_matcher(negated)(".git/config")


@pytest.mark.parametrize("negate", [False, True])
def test_protected_under_bases_agrees_with_each_base_in_turn(negate: bool) -> None:
    """``matches_under`` checks bare names once on the whole path: the same
    answer as asking pathspec relative to each base the path lies under."""
    patterns = [*DEFAULT_PROTECTED, ".git", "*.tfstate", "infra/prod/**", *(["!.mcp.json"] if negate else [])]
    fast = path_matcher(patterns)
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    bases = ("/srv/app/", "/home/u/", "/")
    paths = ["/srv/app/.git/config", "/srv/app/src/x.py", "/srv/app", "/srv/app/infra/prod/k", "/infra/prod/k",
             "/srv/infra/prod/k", "/home/u/.bashrc", "/home/u/p/.bashrc", "/home/u/.config/fish/c",
             "/srv/app/.config/fish/c", "/srv/.config/fish/c", "/srv/app/a.tfstate", "/srv/.gitx/y",
             "/home/u/.ssh/id", "/srv/app/.mcp.json", "/.mcp.json", "/", "/home/u", "/srv/app/x/.pegboard/c",
             "/srv/app/.config/fish\n", "/srv/app/.config\n/fish/c", "/srv/app/infra/prod/\n",
             "/srv/app/.bashrc.bak", "/srv/app/x.git/y", "/srv/app/.gitx", "/srv/app/a/.ssh", "/.git", "/.git/x"]
    for path in paths:
        expected = any(len(path) > len(b) and path.startswith(b) and spec.match_file(path[len(b):]) for b in bases)
        assert fast.matches_under(path, bases) == expected, path


def test_request_path_facts_agree_with_the_file_system(tree: Path) -> None:
    """What a vote asks of the request: the real path as text and as a Path,
    and its lstat (None when nothing is there), each as looking it up anew would say."""
    from pegboard import PermissionRequest, Toolbox

    toolbox = Toolbox.load(cwd=tree, plugins=[])
    session = toolbox.session("default")
    tool = toolbox.tools["ScratchpadRead"]
    names = [os.path.join(*p) for depth in (1, 2) for p in itertools.product(NAMES, repeat=depth)]
    (tree / "hard").write_text("x")
    os.link(tree / "hard", tree / "hard2")
    for raw in [*names, "hard", str(tree / "new" / "deeper"), "~", "/"]:
        request = PermissionRequest(tool=tool, input={}, session=session, policy=session.policy)
        text = request.resolve_str(raw)
        assert text == str(request.resolve(raw)) == os.path.realpath(os.path.join(tree, os.path.expanduser(raw)))
        try:
            expected: os.stat_result | None = os.lstat(text)
        except OSError:
            expected = None
        got = request.lstat(raw)
        assert (got is None) == (expected is None), raw
        if got is not None and expected is not None:
            assert (got.st_ino, got.st_nlink) == (expected.st_ino, expected.st_nlink), raw
    assert PermissionRequest(tool=tool, input={}, session=session, policy=session.policy).lstat("hard").st_nlink == 2


@pytest.mark.parametrize("body, rest", [
    ("^a/b", "a/b"), ("^(?:.+/)?x(?:(?:/)|$)", "(?:.+/)?x(?:(?:/)|$)"), ("^[^/]*x", "[^/]*x"),
    ("^[]|^]x", "[]|^]x"), ("^(a|b)c", "(a|b)c"), ("^a\\|b", "a\\|b"),
    # each of these, with a base put in front of the rest, would stop matching what it matched
    ("^a|^b", None), ("^a|b", None), ("^a(?:^b)", None), ("a", None), ("^a\\Ab", None), ("^a\\\\|b", None),
    ("^(a)\\1", None), ("^(?P<x>a)(?P=x)", None),
])
def test_protected_bodies_join_the_bases_only_when_the_anchor_holds_for_all(body: str, rest: str | None) -> None:
    from pegboard._engine.permissions.protected import _after_anchor

    assert _after_anchor(body) == rest


@pytest.mark.parametrize("seed", range(4))
def test_protected_under_bases_agrees_on_random_paths(seed: int) -> None:
    """The joined expression against pathspec base by base, on random paths
    built from names the patterns care about (and a few they do not)."""
    import random

    rng = random.Random(seed)
    patterns = [*DEFAULT_PROTECTED, "*.tfstate", "infra/prod/**", "secrets/", "**/keys/*.pem", "a?c/**"]
    fast = path_matcher(patterns)
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    mapped = pathspec.GitIgnoreSpec.from_lines([gitignore_form(p) for p in patterns])
    names = [".git", ".ssh", ".config", "fish", "infra", "prod", "x.tfstate", "secrets", "keys", "k.pem", "abc",
             "src", "srv", "app", "home", "u", ".bashrc", ".mcp.json", ".pegboard", "a b", "new\nline", ".gitx"]
    bases_choices = [("/srv/app/", "/home/u/", "/"), ("/srv/app/", "/"), ("/home/u/", "/srv/app/src/", "/")]
    checked = 0
    for _ in range(400):
        bases = rng.choice(bases_choices)
        start = rng.choice([*bases, "/"])
        path = start + "/".join(rng.choice(names) for _ in range(rng.randint(0, 4)))
        path = path.rstrip("/") or "/"
        under = [path[len(b):] for b in bases if len(path) > len(b) and path.startswith(b)]
        got = fast.matches_under(path, bases)
        assert got == any(fast(rel) for rel in under), (path, bases)  # the same as one base at a time
        # pathspec's own answer, with newlines as gitignore_form makes them
        assert got == any(mapped.match_file(gitignore_form(rel)) for rel in under), (path, bases)
        if any(spec.match_file(rel) for rel in under):
            assert got, (path, bases)  # never less protective than pathspec on the raw text
        checked += got
    assert checked > 50  # the paths hit protected patterns often enough to mean something



@pytest.mark.parametrize("negate", [False, True])
def test_a_newline_in_a_folder_name_does_not_hide_a_protected_path(negate: bool) -> None:
    """pathspec's "**" is ".*", which stops at a newline: anyone can make a
    folder named "a<newline>b" and put a protected name or pattern under it."""
    fast = path_matcher([*DEFAULT_PROTECTED, ".git", "**/keys/**", "*.tfstate", *(["!.mcp.json"] if negate else [])])
    bases = ("/srv/app/", "/")
    for path in ("/srv/app/a\nb/keys/k.pem", "/srv/app/a\nb/x.tfstate", "/srv/app/a\nb/.git/config",
                 "/srv/app/x\n/.bashrc"):
        assert fast.matches_under(path, bases), path
        assert fast(path[len("/srv/app/"):]), path
    assert not fast.matches_under("/srv/app/a\nb/x.tfstat", bases)


def _documented_defaults() -> list[str]:
    """The patterns in docs/permissions.md's table of default protected paths."""
    import re

    doc = (Path(__file__).parents[4] / "docs" / "permissions.md").read_text()
    section = doc.split("## Protected paths", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, re.M)


def test_the_default_protected_paths_are_the_documented_ones(tmp_path: Path) -> None:
    """docs/permissions.md and the defaults name the same patterns, and the
    engine protects each one where the docs say: a bare name at any depth,
    ``dir/**`` the folder and what is in it."""
    from pegboard import Toolbox

    documented = _documented_defaults()
    assert documented == list(DEFAULT_PROTECTED)
    for added in (".envrc", ".vscode/**", ".gitmodules"):  # editors and direnv run these
        assert added in documented
    root = Path(os.path.realpath(tmp_path)) / "proj"
    root.mkdir()
    toolbox = Toolbox.load(cwd=root, plugins=[])
    session = toolbox.session()
    for pattern in documented:
        name = pattern.removesuffix("/**")
        places = [root / name, Path.home() / name]
        if "/" not in name:
            places.append(root / "vendor" / "lib" / name)
        if pattern.endswith("/**"):
            places += [p / "inner" / "file" for p in list(places)]
        for place in places:
            assert session.is_protected(str(place)), (pattern, place)
    assert not session.is_protected(str(root / "src" / "main.py"))


@pytest.mark.slow
def test_symlink_free_shortcut_agrees_with_the_general_way(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where openat2 is there, a path with no symlink in it is resolved in one
    call: its answer, missing names counted, is the general way's."""
    from pegboard._util import path_facts as _paths

    if not _paths._openat2:
        pytest.skip("no openat2 here")
    paths = [os.path.join(str(tree), *parts) for depth in (1, 2, 3)
             for parts in itertools.product([*NAMES, "new", "a b", "x\ny"], repeat=depth)]
    paths += [str(tree) + "//real", str(tree) + "/real/", str(tree / "real") + "/./sub", "/", "/tmp"]
    fast = {path: _paths._resolve_counted(path) for path in paths}
    used = sum(_paths._symlink_free(path) is not None for path in paths)
    assert used > 100  # the shortcut answered most of them
    assert _paths._symlink_free(str(tree / "link" / "sub")) is None  # a symlink on the way
    assert _paths._symlink_free(str(tree / "dangling")) is None  # a dangling one is something there
    monkeypatch.setattr(_paths, "_openat2", [])
    for path in paths:
        real, missing = _paths._resolve_counted(path)
        # the same real path; nothing there for both or for neither; the
        # shortcut does not count the missing names (1 for any number)
        assert fast[path][0] == real and (fast[path][1] > 0) == (missing > 0), path
        assert fast[path][1] <= missing, path
