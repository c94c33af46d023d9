"""The host ``pegboard call`` uses: it asks the person at this terminal."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from .._api.hookspecs import hookimpl
from .._util.progress import paused
from .._api.decisions import Answer

if TYPE_CHECKING:
    from .._api.decisions import Decision, PermissionRequest

__all__ = ["TerminalHost"]


class TerminalHost:
    """Asks the person at the terminal."""

    @hookimpl
    def pegboard_ask(self, request: PermissionRequest, decision: Decision) -> Answer:
        who = f" (asked by {' > '.join(request.session.chain)})" if request.session.parent is not None else ""
        suggestion = decision.suggestions[0] if decision.suggestions else request.tool.name
        with paused():  # no spinner over the question
            click.echo(f"{request.tool.name} wants to run{who}: {decision.reason}", err=True)
            click.echo(json.dumps(dict(request.input), default=str)[:500], err=True)
            choice = click.prompt(f"Allow? [y]es once / [a]lways ({suggestion}) for this project / [n]o",
                                  type=click.Choice(["y", "a", "n"]), default="n", err=True)
        if choice == "y":
            return Answer(allow=True)
        if choice == "a":
            return Answer(allow=True, remember="project", rule=suggestion)
        return Answer(allow=False, message="The person declined this call.")

    @hookimpl
    def pegboard_elicit(self, source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """A form, one prompt per field; an empty answer keeps the default."""
        with paused():
            return self._form(source, message, schema)

    def _form(self, source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        click.echo(f"{source} asks: {message}", err=True)
        if not click.confirm("Answer it?", default=True, err=True):
            return {"action": "decline"}
        required = set(schema.get("required") or ())
        content: dict[str, Any] = {}
        kinds = {"integer": int, "number": float, "boolean": bool}
        for name, field in (schema.get("properties") or {}).items():
            label = field.get("title") or name
            if field.get("description"):
                label += f" ({field['description']})"
            choices = field.get("enum") or field.get("oneOf") and [o.get("const") for o in field["oneOf"]]
            kind: Any = click.Choice([str(c) for c in choices]) if choices else kinds.get(field.get("type"), str)
            default = field.get("default")
            if default is None and name not in required:
                default = ""
            value = click.prompt(label, type=kind, default=default, show_default=default not in (None, ""),
                                 err=True)
            if value != "" or name in required:
                content[name] = value
        return {"action": "accept", "content": content}
