"""The glossary (docs/glossary.md) defines every mode and level pegboard
accepts, each under a heading of its own anchor: the command-line reference
links each `--mode` choice there, and a mode added to the code without an
entry fails here."""

from __future__ import annotations

import re
from pathlib import Path

from pegboard._api.levels import LEVELS
from pegboard._api.policy import MODES, POLICY_NAMES

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "glossary.md"


def entries() -> dict[str, str]:
    """Each ``### name {#anchor}`` heading of the glossary: anchor -> name."""
    return {m.group(2): m.group(1) for m in re.finditer(r"^### (.+?) \{#([\w-]+)\}$", GLOSSARY.read_text(), re.M)}


def test_every_mode_and_level_has_an_entry_under_its_own_anchor() -> None:
    found = entries()
    assert set(MODES) < set(POLICY_NAMES) and set(LEVELS) < set(POLICY_NAMES)
    missing = [name for name in POLICY_NAMES if found.get(name.lower()) != name]
    assert missing == [], "modes and levels without a '### name {#name-lowercased}' heading in docs/glossary.md"


def test_modes_and_levels_are_under_their_sections() -> None:
    text = GLOSSARY.read_text()
    modes, levels = text.index("\n## Modes\n"), text.index("\n## Levels\n")
    after = text.index("\n## ", levels + 1)
    assert all(modes < text.index(f"### {m} ") < levels for m in MODES)
    assert all(levels < text.index(f"### {name} ") < after for name in POLICY_NAMES if name not in MODES)
