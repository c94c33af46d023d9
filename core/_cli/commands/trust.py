"""``pegboard trust``, the terminal's offer to trust a folder, and doctor's lines
about what the project's files set that was not applied or matches nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..shared import JSON, current_state, fail_config, global_options
from ..._loading.config import ConfigError, config_dir
from ..._engine.toolbox import Toolbox
from ..._loading.trust import TrustStore, real_root

if TYPE_CHECKING:
    from ..._loading.config import Settings
    from ..._loading.scope import Ignored

__all__ = ["offer_trust", "trust_command", "trust_lines", "unknown_rule_lines"]


def _settings(root: Path, config: Path | None, trusted: bool) -> Settings:
    """The settings as the folder gets them trusted or not, plugins loaded
    (they report the project files they leave out: skills, servers)."""

    try:
        return Toolbox.load(cwd=root, config=config, trust_project=trusted, listing=True).settings
    except ConfigError as exc:
        fail_config(exc)


def _would_apply(settings: Settings) -> list[Ignored]:
    return [i for i in settings.ignored if i.kind == "untrusted"]


def _trust_adds(root: Path, config: Path | None) -> tuple[list[Ignored], list[Ignored]]:
    """What trusting the folder would apply, and what its files set that stays
    ignored even then (user-scope options, files resolving outside it)."""
    still = _settings(root, config, True).ignored
    kept = {(i.source, i.what) for i in still}
    return [i for i in _would_apply(_settings(root, config, False)) if (i.source, i.what) not in kept], still


@click.command("trust")
@global_options
@click.argument("folder", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--revoke", is_flag=True, help="Stop trusting the folder.")
@click.option("--list", "list_", is_flag=True, help="List the trusted folders.")
@JSON
def trust_command(folder: Path | None, revoke: bool, list_: bool, as_json: bool) -> None:
    """Trust a project folder: let its own files (.pegboard/, and what plugins read there)
    widen what pegboard may do there (default: --cwd, else the current folder).

    Until a folder is trusted its files may only narrow: deny and ask rules,
    blocked tools and plugins. Trust is kept in your config folder, keyed by
    the folder's real path; folders inside it are not covered.

    Exit status: 0 done; 1 the trusted-folders file could not be read or written (the reason on
    stderr); 2 a usage error (a folder that is not a directory, --list with a folder or --revoke)."""

    store = TrustStore(config_dir())
    if list_:
        if folder is not None or revoke:
            raise click.UsageError("--list takes no folder and no --revoke")
        try:
            rows = [f.to_json() for f in store.folders()]
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        if as_json:
            click.echo(json.dumps(rows, indent=2))
        elif not rows:
            click.echo(f"no trusted folders ({store.path})")
        for row in rows if not as_json else []:
            gone = "" if row["exists"] else "  (no longer exists)"
            click.echo(f"{row['path']}  since {row['since'] or '?'}{gone}")
        return
    state = current_state()
    target = folder or state.cwd or Path.cwd()
    if not target.is_dir():
        raise click.UsageError(f"{target}: not a directory")
    real = real_root(target)
    try:
        changed = store.revoke(real) if revoke else store.trust(real)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps({"path": real, "trusted": not revoke, "changed": changed}))
        return
    if revoke:
        click.echo(f"{'no longer trusted' if changed else 'was not trusted'}: {real}")
        return
    click.echo(f"{'trusted' if changed else 'already trusted'}: {real}")
    applies, still = _trust_adds(Path(real), state.config)
    if applies:
        click.echo("its own files now apply in new sessions:")
        for item in applies:
            click.echo(f"  {item.what}  ({item.source})")
    if still:
        click.echo("still not applied, trusted or not:")
        for item in still:
            click.echo(f"  {item.describe()}")
    click.echo(f"(`pegboard trust --revoke {real}` undoes it)")


def offer_trust(root: Path, config: Path | None) -> None:
    """At a terminal, before a session in an untrusted folder whose files
    hold something that would widen what runs: list it and ask, as Claude
    Code asks "Do you trust the files in this folder?". Never elsewhere:
    headless, an untrusted folder stays untrusted."""

    store = TrustStore(config_dir())
    try:
        if store.is_trusted(root):
            return
    except ValueError:
        return  # the load that follows reports the file
    applies, _ = _trust_adds(root, config)
    if not applies:
        return
    real = real_root(root)
    click.echo(f"pegboard: {real} is not a trusted folder. Its own files would also apply:", err=True)
    for item in applies:
        click.echo(f"  {item.what}  ({item.source})", err=True)
    click.echo("Trust the files in this folder only if you trust where they came from.", err=True)
    if click.confirm("Trust this folder?", default=False, err=True):
        store.trust(real)
        click.echo(f"trusted: {real} (`pegboard trust --revoke` undoes it)", err=True)
    else:
        click.echo("Going on without them: the folder's files may only narrow what runs.", err=True)


def trust_lines(settings: Settings) -> list[tuple[str, str, str]]:
    """(status, name, detail) lines for ``pegboard doctor``: whether the
    folder is trusted, and each thing its files set or hold that was left out."""
    root = settings.root
    lines: list[tuple[str, str, str]] = []
    untrusted = _would_apply(settings)
    if settings.trusted:
        lines.append(("ok", "trust", f"{root} is trusted (`pegboard trust --revoke` undoes it)"))
    elif untrusted:
        lines.append(("warn", "trust", f"{root} is not trusted, so its own files may only narrow; "
                                       f"`pegboard trust {root}` applies what is listed below"))
    else:
        lines.append(("ok", "trust", f"{root} is not trusted; its files set nothing that would widen"))
    for item in settings.ignored:
        lines.append(("warn", "ignored", item.describe()))
    return lines


def unknown_rule_lines(toolbox: Toolbox) -> list[tuple[str, str]]:
    """(status, detail) for ``pegboard doctor``: each rule naming no tool this
    toolbox knows. A deny or ask rule that matches nothing is the worst kind
    of mistake, since it looks like protection: FAIL. A rule in a tool
    namespace a plugin declared (an MCP server's tools) is a WARN, since a
    group's tools may be known only later (once the server is approved and
    listed); the namespace's ``unknown_hint`` says what to check."""
    lines = []
    for rule, nearest in toolbox.permissions.unknown:
        hint = f"; did you mean {nearest!r}?" if nearest else ""
        namespaced = toolbox.permissions.namespace_of(rule.tool)
        if namespaced is not None:
            namespace = namespaced[0]
            check = f" ({namespace.unknown_hint})" if namespace.unknown_hint else ""
            lines.append(("warn", f"{rule.source}: [permissions] {rule.behavior}: rule {rule.text!r}: no tool of "
                                  f"that {namespace.label} is known{check}{hint}"))
            continue
        what = "denies" if rule.behavior == "deny" else ("asks about" if rule.behavior == "ask" else "allows")
        lines.append(("fail", f"{rule.source}: [permissions] {rule.behavior}: rule {rule.text!r} names no known "
                              f"tool, so it {what} nothing{hint}"))
    return lines
