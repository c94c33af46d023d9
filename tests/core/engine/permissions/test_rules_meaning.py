"""Rules and config say what they mean: an MCP tool rule names one tool,
``enabled`` is a boolean, remembered grants round-trip whatever the path,
and a domain rule never covers a longer host that ends with it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401  (fixture)

from pegboard import ConfigError, PermissionRequest, Toolbox
from pegboard._loading.config import config_dir

MCP_SHAPED = """
from pydantic import BaseModel
from pegboard import Tool, ToolNamespace, Vote, hookimpl


class In(BaseModel):
    x: int = 0


@hookimpl
def pegboard_register_tools(register):
    for name in ("mcp__srv__read", "mcp__srv__read__delete_all", "mcp__srv__write", "mcp__srv2__read"):
        register(Tool(name=name, handler=lambda a, c: "ran", input_model=In, permission="unrestricted"))


@hookimpl
def pegboard_tool_namespaces():
    # its mcp__srv__* tools form a group, as the mcp plugin declares for its servers
    return [ToolNamespace("mcp", label="MCP server", unknown_hint="is it approved and listed? `pegboard mcp list`")]


@hookimpl
def pegboard_permission(request):
    return Vote.ask("an MCP tool") if request.tool.name.startswith("mcp__") else None
"""


def user_config(text: str) -> Path:
    path = config_dir() / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def decide(toolbox: Toolbox, tool: str, arguments: dict[str, object], mode: str = "default") -> str:
    session = toolbox.session(mode)
    request = PermissionRequest(tool=toolbox.tools[tool], input=arguments, session=session, policy=session.policy)
    return toolbox.permissions.evaluate(request).decision


def test_an_mcp_tool_rule_matches_exactly_that_tool(plugin_factory: PluginFactory) -> None:
    user_config('[permissions]\nallow = ["mcp__srv__read"]\n')
    toolbox = plugin_factory(MCP_SHAPED)
    assert decide(toolbox, "mcp__srv__read", {}) == "allow"
    # Not a prefix: the server's tool called read__delete_all is another tool.
    assert decide(toolbox, "mcp__srv__read__delete_all", {}) == "ask"
    assert decide(toolbox, "mcp__srv__write", {}) == "ask"
    assert decide(toolbox, "mcp__srv2__read", {}) == "ask"


@pytest.mark.parametrize("rule", ["mcp__srv", "mcp__srv__*"])
def test_a_server_rule_covers_every_tool_of_that_server_only(plugin_factory: PluginFactory, rule: str) -> None:
    user_config(f'[permissions]\ndeny = ["{rule}"]\n')
    toolbox = plugin_factory(MCP_SHAPED)
    for name in ("mcp__srv__read", "mcp__srv__read__delete_all", "mcp__srv__write"):
        assert decide(toolbox, name, {}) == "deny", name
    assert decide(toolbox, "mcp__srv2__read", {}) == "ask"


@pytest.mark.parametrize("value", ['"false"', "0", '"no"', "1"])
def test_enabled_must_be_true_or_false(tmp_path: Path, value: str) -> None:
    path = user_config(f"[plugins.web]\nenabled = {value}\n")
    with pytest.raises(ConfigError) as caught:
        Toolbox.load(cwd=tmp_path, plugins=["web"])
    assert caught.value.problems == [f"{path}: [plugins.web] enabled: expected true or false, not {eval(value)!r}"]


def test_enabled_false_switches_the_plugin_off(tmp_path: Path) -> None:
    user_config("[plugins.web]\nenabled = false\n")
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["web"])
    assert not toolbox.records["web"].enabled and "WebFetch" not in toolbox.tools


@pytest.mark.parametrize("scope", ["user", "project"])
def test_a_remembered_rule_with_any_characters_round_trips(tmp_path: Path, scope: str) -> None:
    folder = tmp_path / "café 😀 \"quoted\" \\ back"
    folder.mkdir()
    rule = f"Read(/{folder.relative_to('/')}/**)"
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["fs"])
    where = toolbox.permissions.remember(rule, scope, toolbox.session())
    assert Path(where).name == "granted.toml"
    again = Toolbox.load(cwd=tmp_path, plugins=["fs"])  # the file reads back: no configuration error
    assert rule in [r["rule"] for r in again.permissions.listing()]
    target = folder / "a.txt"
    target.write_text("x")
    assert decide(again, "Read", {"file_path": str(target)}, "dontAsk") == "allow"
    # A second rule keeps the first.
    again.permissions.remember("Read(//etc/hosts)", scope, again.session())
    rules = [r["rule"] for r in Toolbox.load(cwd=tmp_path, plugins=["fs"]).permissions.listing()]
    assert rule in rules and "Read(//etc/hosts)" in rules


@pytest.mark.parametrize("others", [[], ["domain:docs.python.org", "domain:*.pypi.org"]])
def test_a_domain_rule_does_not_cover_a_longer_host_ending_with_it(tmp_path: Path, others: list[str]) -> None:
    rules = ", ".join(f'"WebFetch({spec})"' for spec in ["domain:example.com", *others])
    user_config(f"[permissions]\nallow = [{rules}]\n")
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["web"])
    assert decide(toolbox, "WebFetch", {"url": "https://example.com/x", "prompt": "p"}) == "allow"
    for url in ("https://notexample.com/", "https://www.notexample.com/", "https://xexample.com/",
                "https://example.com.evil.net/"):
        assert decide(toolbox, "WebFetch", {"url": url, "prompt": "p"}) != "allow", url


def test_a_wildcard_domain_rule_does_not_cover_a_longer_host_ending_with_it(tmp_path: Path) -> None:
    user_config('[permissions]\nallow = ["WebFetch(domain:*.example.com)", "WebFetch(domain:*.pypi.org)"]\n')
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["web"])
    assert decide(toolbox, "WebFetch", {"url": "https://a.example.com/", "prompt": "p"}) == "allow"
    for url in ("https://notexample.com/", "https://a.notexample.com/", "https://example.com/"):
        assert decide(toolbox, "WebFetch", {"url": url, "prompt": "p"}) != "allow", url


# --- a rule that names no known tool ----------------------------------------------------------


@pytest.mark.parametrize("rule", ["bash", "BASH(rm:*)", "read"])
def test_a_rule_differing_from_a_tool_only_in_case_is_an_error(tmp_path: Path, rule: str) -> None:
    path = user_config(f'[permissions]\ndeny = ["{rule}"]\n')
    with pytest.raises(ConfigError) as caught:
        Toolbox.load(cwd=tmp_path, plugins=["shell", "fs"])
    (problem,) = caught.value.problems
    nearest = "Bash" if rule.lower().startswith("bash") else "Read"
    assert problem.startswith(f"{path}: [permissions] deny: rule {rule!r}: no tool is called")
    assert f"did you mean {nearest!r}?" in problem


def doctor(tmp_path: Path, plugins: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from pegboard._cli.main import cli

    done = CliRunner().invoke(cli, ["--cwd", str(tmp_path), "doctor"], env={"PEGBOARD_PLUGINS": plugins})
    return done.exit_code, done.output


def test_doctor_fails_on_a_rule_naming_no_known_tool(tmp_path: Path) -> None:
    path = user_config('[permissions]\ndeny = ["Bahs(rm:*)", "Nope", "WebFetch(domain:x.test)"]\n'
                       'ask = ["mcp__srv__read"]\n[plugins.web]\nenabled = false\n')
    # (the mcp plugin declares the mcp__ namespace whose unknown tools are only a WARN)
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["shell", "web", "mcp"])  # loads: the rules may be for other installs
    assert {r.text for r, _ in toolbox.permissions.unknown} == {"Bahs(rm:*)", "Nope", "WebFetch(domain:x.test)",
                                                                "mcp__srv__read"}
    code, out = doctor(tmp_path, "shell,web,mcp")
    assert code == 1
    assert (f"FAIL  config: {path}: [permissions] deny: rule 'Bahs(rm:*)' names no known tool, so it denies "
            "nothing; did you mean 'Bash'?") in out
    assert f"FAIL  config: {path}: [permissions] deny: rule 'Nope' names no known tool, so it denies nothing\n" in out
    assert "WARN  config: " in out and "'mcp__srv__read': no tool of that MCP server is known" in out
    # The switched-off plugin's tool is known to doctor, which takes the inventory.
    assert "WebFetch(domain:x.test)" not in out


def test_doctor_is_quiet_when_every_rule_names_a_known_tool(tmp_path: Path) -> None:
    user_config('[permissions]\ndeny = ["Bash(rm:*)", "Monitor", "Edit(./x)"]\n')
    code, out = doctor(tmp_path, "shell,fs")
    assert "names no known tool" not in out and "FAIL" not in out, out
