"""Secrets stay out of what pegboard keeps and prints: the audit row's input
preview (each shape through a real audited call), the store URL in
``config show``, ``store info`` and ``doctor`` (plain, %-encoded, as
``?password=``, or holding a raw ``@``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard._services.audit import flush_all
from pegboard._services.audit import redact
from pegboard._services.store import redact_url

PEGBOARD = str(Path(sys.executable).parent / "pegboard")

PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEkeybodyKEYBODY\n-----END RSA PRIVATE KEY-----"
# (command, the secret in it that no audit row may keep)
SHAPES = [
    ("curl -u bob:Curl-pw-77 https://example.com/api", "Curl-pw-77"),
    ("curl --user 'bob:Quoted-pw-78' https://example.com", "Quoted-pw-78"),
    ("mysql -u root -pMysql-pw-79 shop", "Mysql-pw-79"),
    ("echo Sudo-pw-80 | sudo -S apt-get update", "Sudo-pw-80"),
    ("sudo -S whoami <<< Here-pw-81", "Here-pw-81"),
    ("sshpass -p Sshpass-pw-82 ssh deploy@host", "Sshpass-pw-82"),
    ("export STRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("export R=rk_live_51H8aBcDeFgHiJkLmN", "51H8aBcDeFgHiJkLmN"),
    ("git clone https://bob:p@ss-83@example.com/repo.git", "ss-83"),
    ("git clone https://bob:p@ss-84@example.com/repo.git", "p@ss"),
    ("passwd=Passwd-pw-85 ./deploy", "Passwd-pw-85"),
    ("pass=Pass-pw-86 ./deploy", "Pass-pw-86"),
    ("./deploy --pass Dashpass-pw-87", "Dashpass-pw-87"),
    ("PASSWORD=Upper-pw-88 ./deploy", "Upper-pw-88"),
    ("aws s3 ls # AKIAIOSFODNN7EXAMPL9", "AKIAIOSFODNN7EXAMPL9"),
    ("gh auth status ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "ghp_ABCDEFGHIJKLMNOP"),
    ("echo github_pat_11ABCDEFG0abcdefghijklmnopqrstuv", "github_pat_11ABCDEFG0"),
    ("echo xoxb-1234567890-abcdefghijkl", "xoxb-1234567890"),
    ("echo AIzaSyA-1234567890abcdefghijklmnopqrst", "AIzaSyA-12345"),
    ("cat > id_rsa <<EOF\n" + PRIVATE_KEY + "\nEOF", "MIIEkeybodyKEYBODY"),
    ("echo eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIz", "eyJzdWIiOiIxMjM0"),
    ("ANTHROPIC=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv ./run", "AbCdEfGhIjKlMnOp"),
    ("OPENAI=sk-proj-AbCdEfGhIjKlMnOpQrSt12 ./run", "AbCdEfGhIjKlMnOp"),
]


def test_each_secret_shape_is_absent_from_its_audit_row(tmp_path: Path, store_url: str,
                                                        user_config: Callable[[str], Path]) -> None:
    # Every Bash call denied by a rule: recorded with its preview, nothing run.
    user_config('\n[audit]\nenabled = true\n[permissions]\ndeny = ["Bash"]\n')
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["shell"])

    async def calls() -> None:
        async with toolbox.session(session_id="secrets") as session:
            for n, (command, _secret) in enumerate(SHAPES):
                result = await session.call("Bash", {"command": command}, call_id=f"s{n}")
                assert result.is_error  # the deny rule

    asyncio.run(calls())
    flush_all()
    from sqlalchemy import select

    from pegboard._services.tables import audit

    with toolbox.plugins.stores("pegboard").begin(read_only=True) as conn:
        rows = {r.call_id: r.input_preview for r in conn.execute(select(audit.c.call_id, audit.c.input_preview))}
    assert len(rows) == len(SHAPES)
    for n, (command, secret) in enumerate(SHAPES):
        shown = rows[f"s{n}"]
        assert secret not in shown, (command, shown)
        assert f"command=\"{command[:4]}" in shown, shown  # the row is still about this command


@pytest.mark.parametrize("text", [
    "git log --oneline -5", "ssh -p 2222 host", "mkdir -p build/out", "mysql -u root -p shop",
    "echo hello | sudo tee /etc/motd", "curl https://example.com/x", "grep -rn 'token' src/",
    "sudo -S true", "docker login registry.example.com",
])
def test_ordinary_commands_are_kept_whole(text: str) -> None:
    assert redact(text) == text


def test_a_url_password_is_hidden_to_its_last_at() -> None:
    assert redact_url("postgresql://bob:p@ss@db:5432/x") == "postgresql://bob:***@db:5432/x"
    assert redact_url("postgresql://bob:s3cr%40t@db/x") == "postgresql://bob:***@db/x"
    assert redact_url("postgresql://db/x?user=bob&PASSWORD=q") == "postgresql://db/x?user=bob&PASSWORD=***"
    assert redact("git clone https://u:p@ss@host/r") == "git clone https://u:***@host/r"


# --- the store URL in every output --------------------------------------------------


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PEGBOARD, *args, "--cwd", str(home)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PEGBOARD_PLUGINS": "fs"})


# (url, the secret part); the server is a closed port on loopback: nothing answers
URLS = [
    ("postgresql+psycopg://bob:Plain-pw-90@127.0.0.1:9/x", "Plain-pw-90"),
    ("postgresql+psycopg://bob:Enc%40pw-91@127.0.0.1:9/x", "pw-91"),
    ("postgresql+psycopg://bob@127.0.0.1:9/x?password=Query-pw-92&sslmode=disable", "Query-pw-92"),
    ("postgresql+psycopg://bob:Raw@pw-93@127.0.0.1:9/x", "pw-93"),
]


@pytest.mark.slow
@pytest.mark.parametrize("url, secret", URLS)
def test_no_output_shows_the_store_password(url: str, secret: str, tmp_path: Path,
                                            user_config: Callable[[str], Path]) -> None:
    user_config(f'[store]\nurl = "{url}"\n')
    shown = run(tmp_path, "config", "show")
    assert shown.returncode == 0, shown.stderr
    assert "store.url" in shown.stdout and "***" in shown.stdout
    as_json = run(tmp_path, "config", "show", "--json")
    [row] = [r for r in json.loads(as_json.stdout) if r["key"] == "store.url"]
    assert "***" in row["value"]
    info = run(tmp_path, "store", "info")
    doctor = run(tmp_path, "doctor")
    for out in (shown, as_json, info, doctor):
        assert secret not in out.stdout + out.stderr, out.stdout + out.stderr


def test_a_raw_at_in_the_password_is_refused_with_what_to_write(user_config: Callable[[str], Path],
                                                                  tmp_path: Path) -> None:
    from pegboard._services.store import Store, StoreError

    store = Store("postgresql+psycopg://bob:Raw@pw-94@127.0.0.1:9/x")
    with pytest.raises(StoreError, match="raw '@'.*%40") as caught:
        store.engine
    assert "pw-94" not in str(caught.value)


def test_config_show_hides_a_plugins_credentials(user_config: Callable[[str], Path], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pegboard._cli.main import cli

    user_config('[plugins.fs]\nnote = "https://u:Note-pw-95@example.com"\n'
                '[plugins.fs.env]\nGITHUB_TOKEN = "Token-96"\n')
    result = CliRunner().invoke(cli, ["--cwd", str(tmp_path), "config", "show", "--json"])
    rows: list[dict[str, Any]] = json.loads(result.output)
    text = json.dumps(rows)
    assert "Note-pw-95" not in text and "Token-96" not in text, text


def test_a_hook_error_that_quotes_an_input_is_printed_redacted(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from pegboard import hookimpl

    class Host:
        @hookimpl
        def pegboard_event(self, kind: str, data: dict[str, Any]) -> None:
            raise ValueError(f"cannot show {data}")  # quotes the call's input

    class Ask(Host):
        @hookimpl
        def pegboard_ask(self, request: Any, decision: Any) -> Any:
            from pegboard import Answer

            return Answer.later()

    session = Toolbox.load(cwd=tmp_path, plugins=["fs"], host=Ask()).session("default")
    asyncio.run(session.call("Write", {"file_path": str(tmp_path / "a.env"),
                                       "content": "PASSWORD=Hook-pw-97\n"}))
    err = capsys.readouterr().err
    assert "pegboard_event" in err and "failed" in err, err
    assert "Hook-pw-97" not in err, err
