"""What the box hides: credentials, pegboard's own folders, what operators add.

A command the classifier cannot read word by word runs in the box unasked, and
can print any file it can read (``cat ~/.ssh/id_rsa | base64``). The box
therefore hides, by default, where credentials live: bubblewrap mounts an
empty read-only folder over a folder and ``/dev/null`` over a file; the
Landlock launcher grants reading everywhere but there. Operators add paths
with ``[plugins.shell] hidden_paths``; every layer's list counts (a later
layer cannot take an earlier one's entries back).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pegboard.paths import config_dir, data_dir

__all__ = ["DEFAULT_HIDDEN", "hidden_paths", "layered_hidden"]

DEFAULT_HIDDEN = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.kube",
    "~/.config/gcloud",
    "~/.pypirc",
    "~/.npmrc",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.azure",
    "~/.vault-token",
    "~/.terraform.d/credentials.tfrc.json",
    "/etc/shadow",
    "/etc/gshadow",
)


def layered_hidden(layers: Iterable[Any], plugin: str) -> tuple[str, ...]:
    """``[plugins.<plugin>] hidden_paths`` of every config layer, in order
    (``plugin``: the name the shell plugin is installed under)."""
    out: list[str] = []
    for layer in layers:
        data = getattr(layer, "data", None)
        plugins = data.get("plugins") if isinstance(data, Mapping) else None
        shell = plugins.get(plugin) if isinstance(plugins, Mapping) else None
        entries = shell.get("hidden_paths") if isinstance(shell, Mapping) else None
        if isinstance(entries, list):
            out += [e for e in entries if isinstance(e, str) and e.strip()]
    return tuple(dict.fromkeys(out))


def hidden_paths(root: Path, extra: Iterable[str] = ()) -> tuple[Path, ...]:
    """The real paths to hide that exist now (a mount needs something to
    cover; what does not exist has nothing to show): the defaults,
    pegboard's config and data folders, and ``extra`` (``~/`` for the home
    folder, relative to ``root``)."""
    out: list[Path] = []
    for entry in (*DEFAULT_HIDDEN, *extra):
        path = Path(os.path.expanduser(entry.strip()))
        real = Path(os.path.realpath(path if path.is_absolute() else root / path))
        if os.path.lexists(real):
            out.append(real)
    for own in (config_dir(), data_dir()):
        real = Path(os.path.realpath(own))
        if real.is_dir():
            out.append(real)
    return tuple(dict.fromkeys(out))
