"""``pegboard approvals serve`` in a real browser: Debian's Chromium driven
by Playwright (never ``playwright install``). A session's host runs in its
own process (tests/_approval_host.py) and waits for the answer; the page is
opened at the address the command printed."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
PEGBOARD = shutil.which("pegboard") or str(Path(sys.executable).parent / "pegboard")
HOST = Path(__file__).parents[2] / "_approval_host.py"
WAIT_MS = 60_000


def _env() -> dict[str, str]:
    return {**os.environ, "PEGBOARD_PLUGINS": "fs", "PYTHONPATH": os.pathsep.join(sys.path)}


_READERS: dict[int, queue.Queue[str]] = {}


def _line(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The process's next line on stdout (read by a thread: a pipe's reader buffers ahead)."""
    lines = _READERS.get(proc.pid)
    if lines is None:
        lines = _READERS[proc.pid] = queue.Queue()
        stdout = proc.stdout
        assert stdout is not None
        threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"{proc.args} said nothing within {timeout:g} s") from None


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright (Python) is not installed: it is in the dev dependency group")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian's package chromium; .ci/run installs it)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def page_url(project: Path) -> Iterator[str]:
    """The address ``pegboard approvals serve`` printed (its server runs until the test ends)."""
    proc = subprocess.Popen([PEGBOARD, "approvals", "serve", "--cwd", str(project)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())
    try:
        first = _line(proc)
        assert "approvals page" in first, first + (proc.stderr.read() if proc.poll() is not None else "")
        url = _line(proc).strip()
        assert url.startswith("http://127.0.0.1:") and "token=" in url
        yield url
    finally:
        _stop(proc)
        assert proc.stderr is not None
        said = proc.stderr.read()
        assert "failed" not in said, said


@pytest.fixture
def start_host(project: Path) -> Iterator[Any]:
    started: list[subprocess.Popen[str]] = []

    def start(content: str, session_id: str = "conv-1") -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen([sys.executable, str(HOST), str(project), session_id, content],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        started.append(proc)
        said = json.loads(_line(proc))
        assert "pending call" in said["told"]
        return proc, said["pending"]

    yield start
    for proc in started:
        _stop(proc)


def _result(proc: subprocess.Popen[str]) -> dict[str, Any]:
    result = json.loads(_line(proc, timeout=90))
    assert "error" not in result, result
    return result


def test_a_call_appears_is_approved_on_the_page_and_runs(browser: Any, page_url: str, start_host: Any,
                                                         project: Path) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone's
    page.goto(page_url)
    expect(page.locator("#calls")).to_contain_text("No call waits")
    host, pending_id = start_host("written after approval\n")
    # The page was not reloaded: the event stream says a call waits, and the card comes in.
    card = page.locator(f"#call-{pending_id}")
    expect(card).to_be_visible(timeout=WAIT_MS)
    expect(card).to_contain_text("Write")
    expect(card).to_contain_text("conv-1")
    expect(card).to_contain_text(str(project))
    assert page.title().startswith("(1)")
    card.get_by_role("button", name="Approve once").click()
    expect(page.locator("#notice")).to_contain_text(f"Approved {pending_id}")
    result = _result(host)
    assert not result["is_error"], result
    assert (project / "out.txt").read_text() == "written after approval\n"
    # The host ran it: the page says so by itself.
    expect(page.locator(f"#answered-{pending_id}")).to_contain_text("ran", timeout=WAIT_MS)
    expect(page.locator(f"#answered-{pending_id}")).to_contain_text("approved once by")
    expect(page.locator("#calls")).to_contain_text("No call waits")


def test_a_denial_with_a_message_reaches_the_model(browser: Any, page_url: str, start_host: Any,
                                                   project: Path) -> None:
    from playwright.sync_api import expect

    host, pending_id = start_host("never written\n")
    page = browser.new_page()
    page.goto(page_url)
    card = page.locator(f"#call-{pending_id}")
    card.get_by_label("Message to the model").fill("Put it under docs/ instead.")
    card.get_by_role("button", name="Deny").click()
    expect(page.locator("#notice")).to_contain_text(f"Denied {pending_id}")
    result = _result(host)
    assert result["is_error"] and "Put it under docs/ instead." in result["text"], result
    assert not (project / "out.txt").exists()
    expect(page.locator(f"#answered-{pending_id}")).to_contain_text("the model was told", timeout=WAIT_MS)


def test_the_served_page_refuses_requests_without_the_token_or_the_form_token(page_url: str,
                                                                              start_host: Any) -> None:
    _, pending_id = start_host("x")
    base = page_url.split("?")[0]
    for url in (base, base + "?token=wrong", base + "events", base + "answer"):
        assert httpx.get(url).status_code == 403, url
    token = page_url.split("token=")[1]
    forged = httpx.post(f"{base}answer?token={token}", data={"id": pending_id, "digest": "0" * 64,
                                                            "action": "approve"})
    assert forged.status_code == 403 and "CSRF" in forged.text
    page = httpx.get(page_url)
    assert page.status_code == 200 and pending_id in page.text and "waits for you" in page.text
