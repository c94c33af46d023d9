"""The config loader takes hostile input (a checkout's files) and fails
closed with ``ConfigError`` naming the file, never with a traceback
(issue 30 item 4): deep nesting, and random TOML-ish bytes (hypothesis,
fixed seed, bounded examples)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pegboard._loading.config import ConfigError, load_settings
from pegboard.testing import PegboardEnv

DEEP = {
    "array": "a = " + "[" * 5000 + "]" * 5000 + "\n",
    "inline table": "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n",
    "dotted key": "[plugins.x]\n" + ".".join(["k"] * 3000) + " = 1\n",
    "table header": "[" + ".".join(["t"] * 3000) + "]\n",
    "array of inline tables": "a = [" + "{b = [" * 1000 + "]}" * 1000 + "]\n",
}


@pytest.mark.parametrize("shape", sorted(DEEP))
@pytest.mark.parametrize("which", ["user", "project"])
def test_deep_nesting_is_a_config_error_naming_the_file(pegboard_env: PegboardEnv, tmp_path: Path, shape: str,
                                                        which: str) -> None:
    if which == "user":
        path = pegboard_env.user_config(DEEP[shape])
    else:
        path = tmp_path / ".pegboard" / "config.toml"
        path.parent.mkdir()
        path.write_text(DEEP[shape], encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(tmp_path)
    assert str(raised.value).startswith(f"{path}: not valid TOML: arrays or tables nested more than")


def test_a_big_deep_file_is_refused_before_it_is_remembered(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    # Above the layer cache's size floor, so the cached path is the one taken.
    path = pegboard_env.user_config("# padding\n" * 2000 + DEEP["table header"])
    with pytest.raises(ConfigError, match="nested more than"):
        load_settings(tmp_path)
    with pytest.raises(ConfigError, match="nested more than"):
        load_settings(tmp_path)
    assert path.stat().st_size > 8 * 1024


TOKENS = st.sampled_from([*"[]{}=\"'.,#\n\t abcxyz019_-+:", "true", "false", "[permissions]", "[plugins.fs]",
                          "[[x]]", "allow", "mode", "enabled", '"""', "'''", "\\u0000", "1979-05-27T07:32:00Z",
                          "inf", "nan", "0x1F", "1e400", "\u00e9", "\ud800"])
TOMLISH = st.lists(TOKENS, max_size=60).map("".join)
KEYS = st.sampled_from(["permissions", "tools", "plugins", "mode", "allow", "deny", "ask", "enabled", "block",
                        "fs", "web", "store", "url", "audit", "results", "max_chars", "protected_paths", "x"])
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=8)


def render(value: object) -> str:
    import json

    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{k} = {render(v)}" for k, v in value.items()) + "}"


STRUCTURED = st.dictionaries(KEYS, st.dictionaries(KEYS, VALUES, max_size=4), max_size=4).map(
    lambda tables: "".join(f"[{t}]\n" + "".join(f"{k} = {render(v)}\n" for k, v in body.items())
                           for t, body in tables.items()))


def load_from(env: PegboardEnv, root: Path, raw: bytes) -> None:
    path = env.config_dir / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    try:
        load_settings(root)
    except ConfigError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)


FUZZ = settings(derandomize=True, max_examples=250, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.slow
@FUZZ
@given(raw=st.binary(max_size=120) | TOMLISH.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_random_toml_ish_bytes_raise_only_config_errors(pegboard_env: PegboardEnv, tmp_path: Path,
                                                        raw: bytes) -> None:
    load_from(pegboard_env, tmp_path, raw)


@pytest.mark.slow
@FUZZ
@given(text=STRUCTURED)
def test_random_valid_toml_raises_only_config_errors(pegboard_env: PegboardEnv, tmp_path: Path, text: str) -> None:
    load_from(pegboard_env, tmp_path, text.encode())
