"""The built site: every internal link and anchor leads somewhere, and every
table fits the text column in a real browser at 1280 px.

mkdocs' strict build checks the links written in Markdown; this checks the
HTML it made, so links from the theme, the generated references and
mkdocstrings count too. External links are not followed (this machine may not
reach them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"


class _Page(HTMLParser):
    """A page's ids and the links it makes (href and src)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in ("href", "src") and tag != "base":
                self.links.append(value)


def read_page(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def broken_links(site: Path) -> list[str]:
    """Every internal link of the site that leads to no file, or to no element of its anchor."""
    pages = {path: read_page(path) for path in site.rglob("*.html")}
    problems = []
    for path, page in sorted(pages.items()):
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue  # external: not checked here
            target_ref, fragment = urldefrag(link)
            # (404.html links from the site's root: it is served for any address)
            base = site if target_ref.startswith("/") else path.parent
            target = (base / unquote(target_ref).lstrip("/")).resolve() if target_ref else path
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site)}: {link}"
            if not target.is_relative_to(site.resolve()) and target_ref:
                problems.append(f"{where}: leads outside the site")
            elif not target.exists():
                problems.append(f"{where}: no such file")
            elif fragment and target.suffix == ".html":
                found = pages.get(target) or pages.get(Path(os.path.relpath(target)))
                ids = (found or read_page(target)).ids
                if unquote(fragment) not in ids:
                    problems.append(f"{where}: no element has the id {fragment!r}")
    return problems


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as .ci/run builds it (strict), in a folder of the test's own."""
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    built = subprocess.run([str(mkdocs), "build", "--strict", "--quiet", "-f", str(ROOT / "mkdocs.yml"),
                            "--site-dir", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr
    return out


def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text('<h1 id="top">x</h1><a href="a/">a</a> <a href="#top">t</a>'
                                         '<a href="https://example.com/x">out</a> <img src="logo.png">')
    (tmp_path / "a" / "index.html").write_text('<a href="../#nope">b</a> <a href="../b/">c</a>'
                                               '<a href="../index.html#top">ok</a> <a href="/a/">root</a>')
    (tmp_path / "logo.png").write_bytes(b"")
    assert broken_links(tmp_path) == ["a/index.html: ../#nope: no element has the id 'nope'",
                                      "a/index.html: ../b/: no such file"]


@pytest.mark.slow
def test_every_internal_link_and_anchor_of_the_built_site_leads_somewhere(site: Path) -> None:
    assert (site / "reference" / "commands" / "index.html").is_file()
    assert (site / "reference" / "configuration" / "index.html").is_file()
    problems = broken_links(site)
    assert problems == [], "broken links in the built site:\n" + "\n".join(problems)


# What each table's box is measured against: Material wraps a table in a
# scrolling box, so a table too wide shows as a box that scrolls sideways.
MEASURE = """() => [...document.querySelectorAll('article table')].map(table => {
    const box = table.closest('.md-typeset__scrollwrap') || table.parentElement;
    const head = table.querySelector('tr');
    return {width: table.scrollWidth, room: box.clientWidth,
            page: document.documentElement.scrollWidth > window.innerWidth,
            head: head ? head.innerText.replace(/\\s+/g, ' ').slice(0, 60) : ''};
})"""


@pytest.mark.slow
def test_every_table_fits_the_page_at_1280_px(site: Path) -> None:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian's chromium package)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python (the dev group)")
    too_wide = []
    measured = 0
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
                                    args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for html in sorted(site.rglob("index.html")):
                page.goto(html.as_uri())
                for table in page.evaluate(MEASURE):
                    measured += 1
                    if table["width"] > table["room"] + 1 or table["page"]:
                        too_wide.append(f"{html.parent.relative_to(site).as_posix() or '/'}: the table "
                                        f"'{table['head']}' is {table['width']} px in {table['room']} px")
        finally:
            browser.close()
    assert measured > 30  # the tables were found
    assert too_wide == [], "tables wider than the page at 1280 px:\n" + "\n".join(too_wide)
