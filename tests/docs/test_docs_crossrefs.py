"""Where a page names another page, it links it: "docs/security.md says..."
in plain text is a dead end on the site, and breaks unseen when the page
moves. This finds such names in docs/ and README.md (outside code and
outside links) and says, for each, the link to write instead."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.M | re.S)
# inline code, links and images ([text](target), [text][ref]), autolinks, HTML comments and links
HIDDEN = re.compile(r"`[^`\n]*`|!?\[[^\]]*\]\([^)]*\)|\[[^\]]*\]\[[^\]]*\]|<https?://[^>]*>|<!--.*?-->"
                    r"|(?:href|src)=\"[^\"]*\"", re.S)
# a page's path as a terminal would show it: docs/x.md, docs/plugins/<name>.md, or x.md beside the page
NAMED = re.compile(r"(?<![\w/.:<>-])((?:docs/)?(?:[\w<>-]+/)*[\w<>-]+\.md|docs/(?:[\w-]+/)+)(?![\w/-])")


def blank(match: re.Match[str]) -> str:
    """What was matched, as spaces and its newlines (line numbers stay)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def page_title(page: Path) -> str:
    """The page's title in mkdocs.yml's nav (short: "Testing a plugin"), else its first heading."""
    import yaml

    def titles(entry: object) -> dict[str, str]:
        if isinstance(entry, list):
            return {k: v for item in entry for k, v in titles(item).items()}
        if isinstance(entry, dict):
            return {k: v for title, value in entry.items()
                    for k, v in ({value: str(title)} if isinstance(value, str) else titles(value)).items()}
        return {}

    nav = titles(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    relative = page.relative_to(DOCS).as_posix()
    if relative in nav:
        return nav[relative]
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page.stem


@functools.cache
def generated_pages() -> set[str]:
    from test_docs_reference import hooks_module

    return set(hooks_module().GENERATED_PAGES)


def target_of(name: str, source: Path) -> Path | None:
    """The docs page (or folder of pages) ``name`` means, read from ``source``; None if it is none of ours."""
    if name.startswith("docs/"):
        path = ROOT / name
    elif source.is_relative_to(DOCS):
        path = source.parent / name
    else:
        return None  # README.md's CHANGELOG.md and the like: files, not pages
    path = Path(os.path.normpath(path))
    if not path.is_relative_to(DOCS):
        return None
    known = path.exists() or "<" in path.name or path.relative_to(DOCS).as_posix() in generated_pages()
    return path if known else None


def advice(name: str, target: Path, source: Path) -> str:
    """The link to write in place of ``name``, from ``source``."""
    if "<" in target.name:
        folder = os.path.relpath(DOCS / "plugins", source.parent)
        return (f"name the pages meant, each as a link (`[fs]({folder}/fs.md)`, `[shell]({folder}/shell.md)`, ...), "
                f"or link the table of every plugin's keys, "
                f"`[Configuration keys]({os.path.relpath(DOCS / 'reference/configuration.md', source.parent)})`")
    if target.is_dir():
        index = target / "index.md"
        href = os.path.relpath(index, source.parent)
        return f"replace it with the link `[{page_title(index) if index.exists() else name}]({href})`"
    href = os.path.relpath(target, source.parent)
    title = page_title(target) if target.exists() else target.stem
    return f"replace it with the link `[{title}]({href})` (the words in [] may be any)"


def plain_references(source: Path, text: str | None = None) -> list[str]:
    """One line per page named in plain text in ``source``: where, what, and the link to write."""
    text = source.read_text(encoding="utf-8") if text is None else text
    text = HIDDEN.sub(blank, FENCE.sub(blank, text))
    found = []
    for match in NAMED.finditer(text):
        name = match.group(1)
        target = target_of(name, source)
        if target is None:
            continue
        line = text.count("\n", 0, match.start()) + 1
        found.append(f"{source.relative_to(ROOT)}:{line}: {name!r} names a page in plain text; "
                     f"{advice(name, target, source)}")
    return found


def sources() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_no_page_is_named_in_plain_text() -> None:
    found = [line for source in sources() for line in plain_references(source)]
    assert found == [], "pages named in plain text (link each one):\n" + "\n".join(found)


def test_the_finder_sees_plain_names_and_passes_links_and_code() -> None:
    page = DOCS / "config.md"
    text = """# A page

docs/security.md says what holds; see security.md and docs/plugins/<name>.md,
and docs/reference/ for the rest.

[Security](security.md) and [docs/store.md](store.md), a link split over
two lines: [the
store](store.md), `docs/store.md` in code, <!-- docs/store.md -->
Gemini CLI's docs/cli/trusted-folders.md is another project's.

```toml
mode = "default"   # docs/permissions.md
```
"""
    found = plain_references(page, text)
    assert [f.split(": ", 1)[0] for f in found] == ["docs/config.md:3", "docs/config.md:3", "docs/config.md:3",
                                                    "docs/config.md:4"]
    assert "replace it with the link `[Security](security.md)`" in found[0]
    assert "`[fs](plugins/fs.md)`" in found[2]
    assert "`[The Python API](reference/index.md)`" in found[3]
    # from a page in a folder, and from the README, the link is relative to the file that holds it
    nested = plain_references(DOCS / "plugins" / "fs.md", "see docs/security.md\n")
    assert "`[Security](../security.md)`" in nested[0]
    readme = plain_references(ROOT / "README.md", "docs/store.md has it; CHANGELOG.md too\n")
    assert len(readme) == 1 and "`[The store](docs/store.md)`" in readme[0]
