"""The hook the web plugin declares (``pegboard_add_hooks``)."""

from __future__ import annotations

from pegboard import hookspec


@hookspec(firstresult=True)
def pegboard_summarize(prompt: str, content: str, url: str) -> str | None:
    """Host callback: answer ``prompt`` about ``content`` (a page fetched from
    ``url``, as Markdown) with a model. May be a coroutine. WebFetch returns
    the page itself, saying so, when nothing answers."""
