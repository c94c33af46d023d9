"""pegboard doctor says plainly whether commands are sandboxed."""

from __future__ import annotations

from pathlib import Path

from pegboard import Toolbox
from pegboard.plugins.shell._config import ShellConfig
from pegboard.plugins.shell._doctor import checks
from pegboard.plugins.shell._sandbox import backend_for


def test_sandbox_off_fails_loudly() -> None:
    sandbox = [c for c in checks(ShellConfig(sandbox="off"), "shell") if c.name == "sandbox"]
    assert sandbox and sandbox[0].status == "fail"
    assert "unconfined" in sandbox[0].detail and "none counts as sandboxed" in sandbox[0].detail


def test_sandbox_check_names_the_working_backend() -> None:
    backend = backend_for("auto")
    (sandbox,) = [c for c in checks(ShellConfig(), "shell") if c.name == "sandbox"]
    if backend == "none":
        assert sandbox.status == "fail"
    else:
        assert sandbox.status in ("ok", "warn") and backend in sandbox.detail.lower()


def test_bash_level_follows_the_sandbox(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text('[plugins.shell]\nsandbox = "off"\n')
    assert Toolbox.load(cwd=root, plugins=["shell"], config=cfg).tools["Bash"].permission == "unrestricted"
    expected = "read" if backend_for("auto") != "none" else "unrestricted"
    assert Toolbox.load(cwd=root, plugins=["shell"]).tools["Bash"].permission == expected


def test_config_refuses_variables_that_run_code() -> None:
    import pytest
    from pydantic import ValidationError

    for bad in ({"pass_env": ["BASH_ENV"]}, {"env": {"LD_PRELOAD": "x"}}, {"pass_env": ["GIT_DIR"]},
                {"sandbox": "maybe"}, {"unknown_key": 1}):
        with pytest.raises(ValidationError):
            ShellConfig.model_validate(bad)
