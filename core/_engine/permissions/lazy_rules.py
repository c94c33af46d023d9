"""Rules that passed their checks at an earlier load, compiled when first used.

A config file's rules are parsed and compiled at ``Toolbox.load``, so that a
mistake is reported to the operator there. When the same rules passed the
same checks before (``_layercache`` remembers the digest ``rule_set_key``
gives), the load skips that work: the layer's rules are grouped by tool at
the first decision, and each group compiled at the first decision that
consults it. Every rule still applies to every decision; only the moment it
is compiled moves.

The key covers everything a rule's checks depend on besides its text: the
file and layer it comes from, the project root its paths are relative to,
the interpreter, pegboard's and every plugin's version and source files,
which plugins compile rules, and the tools (with their owners and declared
rule names) that rules may name. Anything else that makes a remembered rule
fail when it is finally compiled is handled as a rule that cannot be
checked: a deny or ask rule applies to every call it covers, an allow rule
to none (fail closed), and the problem is kept in ``late_problems``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._loading.config import RULE_KEYS, Layer
from ..._api.decisions import CompiledRule, strip_group_wildcard
from ..._loading.layer_cache import package_files, stamp

if TYPE_CHECKING:
    from ..toolbox import Toolbox

__all__ = ["DeferredLayer", "Saved", "Segment", "class_name", "fingerprint", "rule_lists", "rule_set_key",
           "tool_of"]

FORMAT = 2  # 2: the core's modules moved into folders
# A layer with fewer rules is compiled at load: cheaper than the key is to work out.
MIN_RULES = 200


class Segment:
    """The rules of one deferred layer for one behavior and tool, in file order."""

    __slots__ = ("layer", "behavior", "tool", "texts", "positions", "compiled", "key", "saved", "groups")

    def __init__(self, layer: Layer, behavior: str, tool: str, key: bytes | None = None) -> None:
        self.layer, self.behavior, self.tool = layer, behavior, tool
        self.texts: list[str] = []
        self.positions: list[int] = []
        # Once compiled: one entry per text (None: inactive, or an allow rule that failed).
        self.compiled: list[CompiledRule | None] | None = None
        # The layer's rule-set digest (rule_set_key): what its compiled rules are kept under.
        self.key = key
        # What a process before this one kept of these rules (``Saved``), once read; None: nothing.
        self.saved: Saved | None = None
        # The combined groups made of these rules in this process: (matcher class, positions) -> combined.
        self.groups: dict[tuple[type, tuple[int, ...]], Any] = {}

    def saved_rule(self, index: int) -> Any:
        """What was kept of the rule at ``index`` (None: nothing)."""
        rules = self.saved.rules if self.saved is not None else None
        return rules[index] if rules is not None and index < len(rules) else None

    def saved_group(self, kind: type, positions: tuple[int, ...]) -> Any:
        """What was kept of the group of these rules' matchers of class
        ``kind`` at ``positions`` (None: nothing)."""
        if self.saved is None:
            return None
        return self.saved.groups.get((class_name(kind), positions))


class Saved:
    """A segment's compiled rules as an earlier process kept them
    (``_layercache.read_compiled``): per rule, what its matcher's ``save()``
    returned (None for one without), and per combined group, keyed by its
    matchers' class and positions, what the combined object's ``save()``
    returned."""

    __slots__ = ("rules", "groups")

    def __init__(self, rules: list[Any], groups: dict[tuple[str, tuple[int, ...]], Any]) -> None:
        self.rules, self.groups = rules, groups


def class_name(kind: type) -> str:
    """A matcher class as the kept groups name it."""
    return f"{kind.__module__}:{kind.__qualname__}"


class DeferredLayer:
    """A config layer whose rules passed their checks before: grouped on first need."""

    __slots__ = ("layer", "lists", "segments", "judged", "key")

    def __init__(self, layer: Layer, lists: list[tuple[str, list[str]]], key: bytes | None = None) -> None:
        self.layer, self.lists = layer, lists
        self.segments: list[Segment] = []
        self.judged = False  # its rules' tool names checked (``PermissionEngine.unknown``)
        self.key = key  # its rule-set digest (rule_set_key)

    def group(self) -> list[Segment]:
        """The layer's rules as segments, one per behavior and tool."""
        if not self.segments:
            for behavior, texts in self.lists:
                found: dict[str, Segment] = {}
                for position, text in enumerate(texts):
                    tool = tool_of(text)
                    segment = found.get(tool)
                    if segment is None:
                        segment = found[tool] = Segment(self.layer, behavior, tool, self.key)
                    segment.texts.append(text)
                    segment.positions.append(position)
                self.segments += found.values()
        return self.segments

    def compiled_in_order(self) -> list[CompiledRule]:
        """The compiled rules in the order the file lists them (every segment compiled)."""
        rank = {behavior: i for i, (behavior, _) in enumerate(self.lists)}
        placed = [(rank[s.behavior], p, c) for s in self.segments
                  for p, c in zip(s.positions, s.compiled or ()) if c is not None]
        return [c for _, _, c in sorted(placed, key=lambda item: item[:2])]


def rule_lists(layer: Layer) -> list[tuple[str, list[str]]] | None:
    """The layer's rules by behavior, or None when any of them is not a plain string."""
    perms = layer.data.get("permissions", {})
    if not isinstance(perms, Mapping):
        return []
    out = []
    for behavior in RULE_KEYS:
        texts = perms.get(behavior) or []
        if type(texts) is not list:
            return None
        if texts:
            out.append((behavior, texts))
    return out


def tool_of(text: str) -> str:
    """The tool a rule names, as ``Rule.parse`` reads it (for a rule it accepts)."""
    text = text.strip()
    if "(" in text:
        return text.partition("(")[0]
    return strip_group_wildcard(text)


def rule_set_key(base: bytes, layer: Layer, lists: list[tuple[str, list[str]]]) -> bytes | None:
    """The digest of a layer's rules with ``base`` (``fingerprint``), or None
    when they cannot be keyed without ambiguity (a rule holding a NUL)."""
    digest = hashlib.sha256(base)
    digest.update(os.fsencode(f"{layer.name}\0{layer.label}\0"))
    for behavior, texts in lists:
        try:
            joined = "\0".join(texts)
        except TypeError:  # not a string: compiled at load, where it is reported
            return None
        if joined.count("\0") != len(texts) - 1:
            return None
        digest.update(f"{behavior}\0{len(texts)}\0".encode())
        digest.update(joined.encode("utf-8", "surrogatepass"))
    return digest.digest()


def fingerprint(toolbox: Toolbox) -> bytes:
    """What a rule's checks depend on besides its text and file (see the module's note)."""
    settings = toolbox.settings
    parts: list[Any] = [FORMAT, sys.version, sys.executable, str(settings.root), os.path.expanduser("~")]
    records = toolbox.plugins.records
    modules = ["pegboard"]
    for name in sorted(records):
        record = records[name]
        loaded = toolbox.plugins.pm.get_plugin(name) is not None
        parts.append((name, record.module, record.distribution, record.version, record.enabled, loaded))
        if loaded:
            modules.append(record.module)
    for impl in toolbox.hooks.implementations("pegboard_rule_matcher"):
        # a module, or an object (a host): the code that compiles rules, by name and file
        plugin = impl.plugin
        module_name = getattr(plugin, "__name__", None) if isinstance(plugin, types.ModuleType) \
            else type(plugin).__module__
        parts.append((impl.plugin_name, module_name, type(plugin).__qualname__))
        file = getattr(sys.modules.get(module_name or ""), "__file__", None)
        if file:
            parts.append((file, stamp(file)))
    for module_name in modules:
        parts += [(file, stamp(file)) for file in package_files(module_name)]
    for name in sorted(toolbox.statuses):
        tool = toolbox.statuses[name].tool
        declared = tool.metadata.get("rule_names", ()) if isinstance(tool.metadata, Mapping) else ()
        parts.append((name, tool.plugin, repr(declared)))
    parts.append(repr(sorted(toolbox.plugins.namespaces.items())))
    parts.append(repr(settings.merged.get("plugins")))
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).digest()
