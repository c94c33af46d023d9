"""The command-line and configuration references (reference/commands.md and
reference/configuration.md) are written by mkdocs_hooks.py from the loaded
program at build time: every command the core and the plugins register, with
its options and exit status, and every key of the config models, with its
type, default and description. These tests hold the sources to that: a
command without an "Exit status:" paragraph or a config key without a
description fails here, not on a page nobody reads."""

from __future__ import annotations

import re
from typing import Any

import click
import pytest

from test_docs_reference import hooks_module

hooks = hooks_module()


def builtin(plugin: str) -> bool:
    """The core's commands and the built-in plugins' (their package is pegboard.plugins.*)."""
    from pegboard import Toolbox

    if plugin == "core":
        return True
    records = Toolbox.load(listing=True).records
    return plugin in records and records[plugin].module.startswith("pegboard.plugins.")


@pytest.fixture(scope="module")
def commands() -> list[tuple[tuple[str, ...], click.Command, click.Context, str]]:
    with hooks.isolated_pegboard() as project:
        return hooks._commands(project)


@pytest.fixture(scope="module")
def commands_page() -> str:
    return str(hooks.command_line_page())


def section(page: str, words: tuple[str, ...]) -> str:
    """A command's part of the page: from its heading to the next heading."""
    start = page.index(f"{{#{hooks.anchor(words)}}}")
    following = re.search(r"^#{2,4} ", page[start:].split("\n", 1)[1], re.M)
    return page[start:] if following is None else page[start:start + len(page[start:].split("\n", 1)[0]) + 1
                                                         + following.start()]


@pytest.mark.slow
def test_every_builtin_command_says_its_exit_status(commands: list[Any]) -> None:
    missing = [" ".join(words) for words, command, _, plugin in commands
               if not isinstance(command, click.Group) and builtin(plugin)
               and hooks.split_help(command.help)[1] is None]
    assert missing == [], ("commands whose help has no paragraph starting 'Exit status:' (one code each, "
                           "separated by ';': 'Exit status: 0 done; 1 ...; 2 a usage or configuration error.')")


@pytest.mark.slow
def test_the_command_page_has_every_command_option_and_exit_status(
        commands: list[Any], commands_page: str) -> None:
    assert len(commands) > 40  # the core's commands and the plugins'
    for words, command, ctx, plugin in commands[1:]:
        text = section(commands_page, words)
        for param in command.get_params(ctx):
            if isinstance(param, click.Option) and "--help" not in param.opts and not (
                    isinstance(command, click.Group) and param.name in hooks.GLOBAL_OPTIONS):
                assert f"`{param.opts[0]}" in text or f"`{param.opts[0]}`" in text, (words, param.opts)
        if not isinstance(command, click.Group):
            assert "Exit status:" in text, words
            _, status = hooks.split_help(command.help)
            for code in re.findall(r"(?:^|; )(\d+) ", status or ""):
                assert f"- **{code}** " in text, (words, code)
        if plugin != "core":
            assert f"From the [{plugin}](../plugins/{plugin}.md) plugin." in text, words
    # commands plugins add through pegboard_register_commands are there, credited to their plugin
    assert {" ".join(w) for w, *_ in commands} >= {"pegboard mcp refresh", "pegboard schedule worker",
                                                   "pegboard checkpoints restore", "pegboard agent run"}
    # the --mode choices link to the glossary
    assert "[`acceptEdits`](../glossary.md#acceptedits)" in commands_page


def test_exit_status_is_a_list_of_codes() -> None:
    assert hooks.exit_status_lines("0 allow (with --batch: every line answered); 1 deny; 3 ask.") == [
        "Exit status:", "", "- **0** allow (with --batch: every line answered)", "- **1** deny", "- **3** ask", ""]
    assert "common codes" in hooks.exit_status_lines(None)[0]


def test_help_text_is_literal_but_for_code_and_the_pages_it_names() -> None:
    text = hooks._escape("Every decision, when [audit] enabled = true (docs/store.md); `a_b*` stays; <x>")
    assert text == ("Every decision, when \\[audit\\] enabled = true ([The store](../store.md)); `a_b*` stays; "
                    "&lt;x&gt;")


def config_models() -> list[tuple[str, type[Any]]]:
    """The core's tables and each built-in plugin's, nested tables included."""
    from pegboard import Toolbox
    from pegboard._loading.config import CoreConfig

    found: list[tuple[str, type[Any]]] = []

    def add(table: str, model: type[Any]) -> None:
        found.append((table, model))
        for name, info in model.model_fields.items():
            for suffix, inner in hooks._nested_models(info.annotation):
                add(f"{table}.{name}{suffix}", inner)

    for name, info in CoreConfig.model_fields.items():
        for _, model in hooks._nested_models(info.annotation):
            add(name, model)
    for name, record in Toolbox.load(listing=True).records.items():
        hook = getattr(record.obj, "pegboard_config_model", None)
        if record.module.startswith("pegboard.plugins.") and hook is not None:
            add(f"plugins.{name}", hook())
    return found


@pytest.mark.slow
def test_every_config_key_has_a_description_and_a_row() -> None:
    models = config_models()
    assert {"permissions", "plugins.shell", "plugins.mcp.servers.<name>.oauth"} <= {t for t, _ in models}
    missing = [f"[{table}] {key}" for table, model in models
               for key in model.model_fields if key not in hooks.field_descriptions(model)]
    assert missing == [], ("config keys without a description: give the field Field(description=...) "
                           "or a docstring on the line under it")
    page = hooks.configuration_page()
    for table, model in models:
        start = page.index(f"### `[{table}]`")
        rows = page[start:].split("\n### ", 1)[0]
        for name, info in model.model_fields.items():
            assert f"| `{info.alias or name}` |" in rows, (table, name)
    # every row is one line (a description over two lines would end its table)
    for table in re.findall(r"\| key \| type .*?\n\n", page, re.S):
        assert all(line.startswith("| ") for line in table.strip().splitlines()), table
    # the user-scope options are marked as such
    assert "| `sandbox` | " in page and "**User scope.** auto: bubblewrap" in page


def test_attribute_docstrings_count_as_descriptions() -> None:
    from pydantic import BaseModel, Field

    class Sample(BaseModel):
        plain: int = 1
        """Said under the field."""
        given: str = Field("x", description="said in Field")
        bare: bool = False

    assert hooks.field_descriptions(Sample) == {"plain": "Said under the field.", "given": "said in Field"}
    assert hooks._type_name(dict[str, list[str]]) == "table of arrays of strings"
    assert hooks._toml_value(["a", True, 2]) == '`["a", true, 2]`' and hooks._toml_value(None) == "unset"
