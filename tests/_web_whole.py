"""A whole body converted in one go: what the web tests compare WebFetch's windows and pieces with."""

from __future__ import annotations

from dataclasses import dataclass

from pegboard.plugins.web._convert import open_body


@dataclass(frozen=True)
class Converted:
    kind: str
    text: str
    title: str | None = None


def convert(body: bytes, content_type: str | None, url: str) -> Converted:
    """Classify ``body`` and convert all of it (HTML in one piece, as if it were never cut)."""
    opened = open_body(body, content_type, url)
    return Converted(opened.kind, opened.text.read(), opened.title)
