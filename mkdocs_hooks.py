"""mkdocs hooks for pegboard's docs (mkdocs.yml names this file).

The reference is read from the source by griffe, which finds a package as a
folder of its name on a search path. pegboard's layout maps folders to
packages instead (core/ is ``pegboard``, plugins/ is ``pegboard.plugins``:
pyproject's package-dir), so before the build this lays out the installed
shape under build/griffe/ as symbolic links, and mkdocs.yml points the python
handler there. Nothing is copied: the pages are made from the files as they
are in the checkout.
"""

from __future__ import annotations

import html
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent
DOCS = ROOT / "docs"
LAYOUT = ROOT / "build" / "griffe"


def lay_out(root: Path = ROOT, layout: Path = LAYOUT) -> Path:
    """``layout/pegboard/``: a link to each entry of core/, and ``plugins`` to plugins/."""
    package = layout / "pegboard"
    if layout.exists():
        shutil.rmtree(layout)
    package.mkdir(parents=True)
    for entry in (root / "core").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "plugins").symlink_to(root / "plugins")
    return layout


# Before mkdocstrings' own on_config: its python handler lists the search paths
# when it is made, and a build/griffe/ made after that is never searched (a fresh
# clone's first build found no pegboard at all).
@event_priority(100)
def on_config(config: Any) -> Any:
    lay_out(ROOT, _layout_of(config))
    return config


def on_files(files: Files, config: Any) -> Files:
    """Add the generated reference pages (below) to the site: to pegboard's
    own, whose pages they link (a site of one page, as a test builds, gets none)."""
    if Path(config["docs_dir"]).resolve() != DOCS:
        return files
    for uri, make in ((COMMANDS_PAGE, command_line_page), (CONFIGURATION_PAGE, configuration_page)):
        files.append(File.generated(config, uri, content=make()))
    return files


def _layout_of(config: Any) -> Path:
    """The python handler's first search path (mkdocs.yml: ``paths``), relative to the config file."""
    try:
        paths = config["plugins"]["mkdocstrings"].config["handlers"]["python"]["paths"]
    except (KeyError, TypeError):
        return LAYOUT
    base = Path(config["config_file_path"]).resolve().parent
    return base / paths[0] if paths else LAYOUT


# --- pages generated from the code ------------------------------------------------
#
# The command-line and configuration references are written from the loaded
# program at every build: the click commands (the core's and those plugins add
# through pegboard_register_commands) and the config models (the core's and each
# plugin's pegboard_config_model). They are in no file under docs/, so they
# cannot go stale.

COMMANDS_PAGE = "reference/commands.md"
CONFIGURATION_PAGE = "reference/configuration.md"
GENERATED_PAGES = (COMMANDS_PAGE, CONFIGURATION_PAGE)
GLOSSARY = "../glossary.md"

# What every command shares (the click runner's and pegboard's own codes);
# a command says more in an "Exit status:" paragraph of its help.
COMMON_EXIT_STATUS = (
    "0 done; 1 the command ran and failed (what failed is on stderr); "
    "2 a usage error (an unknown option, a missing argument) or configuration that must be fixed "
    "(each problem on stderr with its file and key)."
)
EXIT_STATUS = "Exit status:"


@contextmanager
def isolated_pegboard() -> Iterator[Path]:
    """pegboard as on a fresh machine: no user config, no trusted folders, no
    system policy, an empty project folder (yielded). A reference written from
    the builder's own setup would say what their config says."""
    import pytest

    from pegboard.testing import isolate

    with tempfile.TemporaryDirectory(prefix="pegboard-docs-") as tmp, pytest.MonkeyPatch.context() as patch:
        home = Path(tmp)
        isolate(home, patch)
        project = home / "project"
        project.mkdir()
        yield project


def _plugin_of(module: str, plugins: dict[str, str]) -> str:
    """The plugin whose package holds ``module`` ("core" for the core's own)."""
    for name, package in plugins.items():
        if module == package or module.startswith(package + "."):
            return name
    return "core"


def _commands(project: Path) -> list[tuple[tuple[str, ...], click.Command, click.Context, str]]:
    """Every command of ``pegboard`` as the console script loads it, in
    ``project``: (its words, the command, its context, the plugin that adds it)."""
    from pegboard._cli.main import cli
    from pegboard.cli import CLIState

    found: list[tuple[tuple[str, ...], click.Command, click.Context, str]] = []
    root = click.Context(cli, info_name="pegboard", obj=CLIState(cwd=project))
    with root:
        toolbox = root.obj.toolbox(listing=True)
        plugins = {name: record.module for name, record in toolbox.records.items() if name != "core"}

        def walk(command: click.Command, ctx: click.Context, words: tuple[str, ...]) -> None:
            module = getattr(command.callback, "__module__", None) or type(command).__module__
            found.append((words, command, ctx, _plugin_of(module, plugins)))
            if isinstance(command, click.Group):
                for name in command.list_commands(ctx):
                    sub = command.get_command(ctx, name)
                    if sub is not None and not sub.hidden:
                        walk(sub, click.Context(sub, info_name=name, parent=ctx), (*words, name))

        walk(cli, root, ("pegboard",))
    return found


def page_title(page: str) -> str:
    """A page's title: its first ``# `` heading."""
    for line in (DOCS / page).read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page


def _outside_code(text: str, change: Any) -> str:
    """``change`` applied to the parts of ``text`` outside `code`."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if index % 2 else change(part) for index, part in enumerate(parts))


def _link_pages(text: str, escape: bool = False) -> str:
    """A page the text names as a terminal shows it (``docs/store.md``) as a
    link from the generated pages (reference/), titled as the page is."""
    out = []
    for number, piece in enumerate(re.split(r"\bdocs/([\w/-]+\.md)\b", text)):
        if number % 2 == 0:
            out.append(re.sub(r"([\\*_\[\]])", r"\\\1", html.escape(piece, quote=False)) if escape else piece)
        elif (DOCS / piece).is_file():
            out.append(f"[{page_title(piece)}](../{piece})")
        else:
            out.append(f"docs/{piece}")
    return "".join(out)


def _escape(text: str) -> str:
    """Help text as Markdown: `code` kept, everything else literal, and the pages it names links."""
    return _outside_code(text, lambda part: _link_pages(part, escape=True))


def _paragraphs(text: str) -> list[str]:
    return [" ".join(line.strip() for line in block.splitlines())
            for block in re.split(r"\n\s*\n", text.strip()) if block.strip()]


def split_help(help_text: str | None) -> tuple[list[str], str | None]:
    """A command's help: its paragraphs, and its "Exit status:" paragraph (None without one)."""
    body, status = [], None
    for paragraph in _paragraphs(help_text or ""):
        if paragraph.startswith(EXIT_STATUS):
            status = paragraph[len(EXIT_STATUS):].strip()
        else:
            body.append(paragraph)
    return body, status


def anchor(words: tuple[str, ...]) -> str:
    return "-".join(words)


def _metavar(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Argument):
        name = (param.metavar or (param.name or "").upper())
        name = name if param.required else f"[{name}]"
        return f"{name}..." if param.nargs == -1 else name
    assert isinstance(param, click.Option)
    names = ", ".join([*param.opts, *param.secondary_opts])
    if param.is_flag or param.count:
        return names
    if param.metavar:
        return f"{names} {param.metavar}"
    if isinstance(param.type, click.Choice):
        return f"{names} {(param.name or '').upper()}"
    return f"{names} {param.type.name.upper()}"


def _choices(param: click.Parameter, glossary: set[str]) -> str:
    if not isinstance(param.type, click.Choice):
        return ""
    names = [str(c) for c in param.type.choices]
    shown = [f"[`{c}`]({GLOSSARY}#{c.lower()})" if c in glossary else f"`{c}`" for c in names]
    return " One of " + ", ".join(shown) + "."


def _param_line(param: click.Parameter, ctx: click.Context, glossary: set[str]) -> str:
    text = _escape(getattr(param, "help", None) or "")
    text += _choices(param, glossary)
    if isinstance(param, click.Option):
        default = param.default
        if not param.is_flag and default not in (None, (), [], "") and not callable(default):
            text += f" Default: `{default}`."
        if param.envvar and isinstance(param.envvar, str):
            text += f" Also read from `{param.envvar}`."
        if param.multiple:
            text += " May be given more than once."
        if param.required:
            text += " Required."
    elif isinstance(param, click.Argument):
        text += " Any number of them." if param.nargs == -1 else "" if param.required else " Optional."
    return f"- `{_metavar(param, ctx)}`: {text.strip()}"


GLOBAL_OPTIONS = ("cwd", "config")


def exit_status_lines(status: str | None) -> list[str]:
    """A command's "Exit status:" paragraph as a list, one code an item
    ("0 allow; 1 deny; ..."), or the common codes for one without it."""
    if status is None:
        return ["Exit status: the [common codes](#exit-status).", ""]
    items = re.split(r";\s*(?=\d+ )", status.rstrip("."))
    lines = ["Exit status:", ""]
    for item in items:
        code, _, what = item.partition(" ")
        lines.append(f"- **{code}** {_escape(what)}" if code.isdigit() else f"- {_escape(item)}")
    return [*lines, ""]


def command_line_page() -> str:
    """The command-line reference: every command of the loaded program,
    its usage, options, arguments and exit status."""
    from pegboard._api.policy import POLICY_NAMES

    glossary = set(POLICY_NAMES)
    with isolated_pegboard() as project:
        commands = _commands(project)
    lines = [
        "# Command line",
        "",
        "<!-- Generated at build time by mkdocs_hooks.py from the loaded `pegboard` command",
        "     (the core's commands and those plugins add with pegboard_register_commands). -->",
        "",
        "Every command of `pegboard`, written from the program itself when this site is",
        "built: the core's commands and those the built-in plugins add",
        "(`pegboard_register_commands`, [Writing a plugin](../plugins.md)).",
        "`pegboard COMMAND --help` says the same at a terminal.",
        "",
        "## Global options",
        "",
        "Every command that reads configuration takes these, before or after its name:",
        "",
        "- `--cwd DIRECTORY`: the project root and working directory (default: the current directory).",
        "- `--config FILE`: an extra config file, above the user and project files; also read from",
        "  `PEGBOARD_CONFIG` ([Configuration](../config.md)).",
        "",
        "`pegboard --version` prints the version; `--help` after any command prints its help.",
        "",
        "## Exit status",
        "",
        f"Unless a command says otherwise: {COMMON_EXIT_STATUS}",
        "",
        "## Commands",
        "",
    ]
    for words, command, ctx, plugin in commands[1:]:
        if len(words) == 2:
            summary = command.get_short_help_str(limit=120)
            lines.append(f"- [`{' '.join(words)}`](#{anchor(words)}): {_escape(summary)}")
    lines.append("")
    for words, command, ctx, plugin in commands[1:]:
        level = "#" * min(len(words) + 1, 4)
        lines += [f"{level} `{' '.join(words)}` {{#{anchor(words)}}}", ""]
        body, status = split_help(command.help)
        lines += [*(_escape(p) + "\n" for p in body)]
        if plugin != "core":
            page = DOCS / "plugins" / f"{plugin}.md"
            origin = f"[{plugin}](../plugins/{plugin}.md)" if page.is_file() else f"`{plugin}`"
            lines += [f"From the {origin} plugin.", ""]
        if isinstance(command, click.Group):
            own = [p for p in command.get_params(ctx) if isinstance(p, click.Option)
                   and p.name not in GLOBAL_OPTIONS and "--help" not in p.opts]
            if own:
                lines += ["Options:", "", *(_param_line(p, ctx, glossary) for p in own), ""]
            lines.append("Commands:\n")
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    lines.append(f"- [`{name}`](#{anchor((*words, name))}): "
                                 f"{_escape(sub.get_short_help_str(limit=120))}")
            lines.append("")
            continue
        pieces = " ".join(command.collect_usage_pieces(ctx))
        lines += [f"Usage: `{' '.join(words)} {pieces}`", ""]
        params = [p for p in command.get_params(ctx) if "--help" not in getattr(p, "opts", ())]
        # click's arguments carry no help: the usage line names them, the help says what they are
        arguments = [p for p in params if isinstance(p, click.Argument)
                     and (isinstance(p.type, click.Choice) or not p.required or p.nargs != 1)]
        options = [p for p in params if isinstance(p, click.Option) and p.name not in GLOBAL_OPTIONS
                   and not (p.name == "version")]
        if arguments:
            lines += ["Arguments:", "", *(_param_line(p, ctx, glossary) for p in arguments), ""]
        if options:
            lines += ["Options:", "", *(_param_line(p, ctx, glossary) for p in options), ""]
        shared = [f"`--{p.name}`" for p in params if p.name in GLOBAL_OPTIONS]
        if shared:
            lines += [f"Also the [global options](#global-options) {' and '.join(shared)}.", ""]
        lines += exit_status_lines(status)
    return "\n".join(lines)


# --- the configuration reference ------------------------------------------------


def field_descriptions(model: type[Any]) -> dict[str, str]:
    """Each field's description: ``Field(description=...)``, else the string
    under the field in the class's source (an attribute docstring, read here
    rather than by pydantic: reading the source at every start-up costs)."""
    import ast
    import inspect
    import textwrap

    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if not hasattr(klass, "model_fields") or klass.__module__.startswith("pydantic"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, [*body[1:], None]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                found[node.target.id] = inspect.cleandoc(after.value.value)
    for name, info in model.model_fields.items():
        if info.description:
            found[name] = info.description
    # one line each: a description is a table cell
    return {name: " ".join(found[name].split()) for name in model.model_fields if name in found}


def _type_name(annotation: Any, plural: bool = False) -> str:
    """An annotation in TOML's words (``plural``: as what an array or a table holds)."""
    import types
    import typing

    from pydantic import BaseModel, SecretStr

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0], plural)
    if origin in (typing.Union, types.UnionType):
        text = " or ".join(_type_name(a, plural) for a in args if a is not type(None))
        return f"{text}, or unset" if type(None) in args else text
    if origin is typing.Literal:
        values = [f'`"{a}"`' if isinstance(a, str) else f"`{str(a).lower()}`" for a in args]
        return ("any of " if plural else "") + ", ".join(values[:-1]) + (" or " if len(values) > 1 else "") + values[-1]
    if origin in (list, tuple, set, frozenset):
        return ("arrays" if plural else "array") + (f" of {_type_name(args[0], True)}" if args else "")
    if origin is dict:
        return ("tables" if plural else "table") + (f" of {_type_name(args[1], True)}" if len(args) == 2 else "")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "tables" if plural else "table"
    if annotation is SecretStr:
        return "secret strings" if plural else "string (a secret: never shown)"
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if annotation in simple:
        return simple[annotation] + ("s" if plural else "")
    return getattr(annotation, "__name__", str(annotation))


def _toml_value(value: Any) -> str:
    """A default as TOML, on one line ("unset" for None)."""
    import json

    def inline(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(inline(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {inline(x)}" for k, x in v.items()) + "}"
        return str(v)

    return "unset" if value is None else f"`{inline(value)}`"


def _bounds(info: Any) -> str:
    words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
    found = []
    for item in info.metadata:
        for key, word in words.items():
            value = getattr(item, key, None)
            if value is not None:
                found.append(f"{word} {value}")
    return "; ".join(found)


def _nested_models(annotation: Any) -> list[tuple[str, type[Any]]]:
    """The models a field holds: ("", Model) for a table, ("<name>", Model) for a table of them."""
    import types
    import typing

    from pydantic import BaseModel

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [("", annotation)]
    if origin is typing.Annotated or origin in (typing.Union, types.UnionType):
        return [found for a in args for found in _nested_models(a)]
    if origin is dict and len(args) == 2:
        return [(".<name>", model) for _, model in _nested_models(args[1])]
    return []


def model_sections(model: type[Any], table: str, scoped: bool = False) -> list[str]:
    """A table's keys (type, default, what it does), then its nested tables."""
    from pegboard import UserScope

    descriptions = field_descriptions(model)
    doc = inspect_doc(model)
    lines = [f"### `[{table}]` {{#{_table_anchor(table)}}}", ""]
    if doc:
        lines += [doc, ""]
    if scoped:
        lines += ["**User scope**: never taken from a project's config ([trusted folders](../security.md)).", ""]
    lines += ['<div class="config-keys" markdown>', "",
              "| key | type | default | what it does |", "| --- | --- | --- | --- |"]
    nested: list[tuple[str, type[Any]]] = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        inner = _nested_models(info.annotation)
        default = info.get_default(call_default_factory=True)
        what = _rst(descriptions.get(name, ""))
        bounds = _bounds(info)
        if bounds:
            what += f" ({bounds})"
        if any(isinstance(m, UserScope) for m in info.metadata):
            what = f"**User scope.** {what}"
        if inner:
            nested += [(f"{table}.{key}{suffix}", sub) for suffix, sub in inner]
            what += " See " + ", ".join(f"[`[{table}.{key}{s}]`](#{_table_anchor(f'{table}.{key}{s}')})"
                                        for s, _ in inner) + "."
        lines.append(f"| `{key}` | {_type_name(info.annotation)} | {_toml_value(default)} | {what.strip()} |")
    lines += ["", "</div>", ""]
    for sub_table, sub in nested:
        lines += model_sections(sub, sub_table)
    return lines


def _table_anchor(table: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", table.lower()).strip("-")


def _rst(text: str) -> str:
    """A docstring's text as Markdown: reStructuredText's literals (``x``) as
    Markdown's (`x`), and the pages it names links."""
    return _outside_code(re.sub(r"``(.+?)``", r"`\1`", text), _link_pages)


def inspect_doc(model: type[Any]) -> str:
    """The model's own docstring's first paragraph, less a leading name of its table."""
    import inspect

    doc = model.__dict__.get("__doc__") or ""
    first = " ".join(_paragraphs(inspect.cleandoc(doc))[:1])
    first = re.sub(r"^``\[[^\]]*\]``\s*(\(user scope\))?[:.]?\s*", "", first)
    return _rst(first[:1].upper() + first[1:])


def configuration_page() -> str:
    """The configuration reference: every key of the core's tables and of each
    loaded plugin's ``[plugins.<name>]``, from the config models."""
    from pegboard._loading.config import CoreConfig
    from pegboard._loading.scope import UserScope

    with isolated_pegboard() as project:
        from pegboard import Toolbox

        toolbox = Toolbox.load(cwd=project, listing=True)
        plugin_models = {}
        for name, record in sorted(toolbox.records.items()):
            if name == "core" or record.obj is None:
                continue
            hook = getattr(record.obj, "pegboard_config_model", None)
            plugin_models[name] = hook() if hook is not None else None
    lines = [
        "# Configuration keys",
        "",
        "<!-- Generated at build time by mkdocs_hooks.py from the config models (the core's",
        "     CoreConfig and each plugin's pegboard_config_model). -->",
        "",
        "Every key pegboard reads from its TOML files, written from the config models",
        "when this site is built. [Configuration](../config.md) says where the files are, how",
        "the layers combine and what a project's own files may set; a key marked",
        "**user scope** is taken only from your own config, `--config` or the system policy.",
        "`pegboard config show` prints what is in force and the file behind each value.",
        "",
        "## The core's tables",
        "",
    ]
    for name, info in CoreConfig.model_fields.items():
        if name == "plugins":
            continue
        scoped = any(isinstance(m, UserScope) for m in info.metadata)
        for _, model in _nested_models(info.annotation):
            lines += model_sections(model, name, scoped)
    lines += [
        "## Plugins' tables",
        "",
        "Each plugin reads `[plugins.<name>]`. Two keys are the core's, in every plugin's table:",
        "",
        "| key | type | default | what it does |",
        "| --- | --- | --- | --- |",
        "| `enabled` | boolean | `true` | `false`: the plugin is not imported and offers no tools |",
        '| `defer` | `"auto"`, `"always"` or `"never"` | `"auto"` | which of its tools are deferred '
        "(listed by name, loaded through ToolSearch): the plugin's own choice, all or none |",
        "",
    ]
    for name, plugin_model in plugin_models.items():
        page = DOCS / "plugins" / f"{name}.md"
        link = f" ([its page](../plugins/{name}.md))" if page.is_file() else ""
        if plugin_model is None:
            lines += [f"### `[plugins.{name}]` {{#{_table_anchor(f'plugins.{name}')}}}", "",
                      f"The {name} plugin{link} takes no options of its own.", ""]
            continue
        section = model_sections(plugin_model, f"plugins.{name}")
        section[2:2] = [f"From the {name} plugin{link}.", ""]
        lines += section
    return "\n".join(lines)
