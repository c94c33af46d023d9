"""What a tool is, what it returns, and what its handler is handed.

A ``Tool`` is cheap to create: its handler and input model may be given as
``"module:attribute"`` strings that are imported only when the tool is called
or its schema is needed, so that listing tools never imports tool modules.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from .decisions import CompiledRule, Vote
    from .plugin_context import PluginContext, PluginStore
    from .plugin_session import PluginSession

__all__ = [
    "Absent",
    "ACCESSES",
    "Access",
    "CORE_PLUGIN",
    "NATIVE_PROVIDERS",
    "Content",
    "ImageContent",
    "Level",
    "Loading",
    "ResourceContent",
    "TextContent",
    "Tool",
    "ToolContext",
    "ToolResult",
    "LEVELS",
]

from .levels import ACCESSES, LEVELS, Access, Level  # noqa: E402  (re-exported)
from .records import FACTORY, record  # noqa: E402
Loading = Literal["always", "deferred"]

# The model APIs whose own tool types a tool may declare (``Tool.native``):
# those a catalogue export can send one in (``Catalogue.to_anthropic(native=...)``).
NATIVE_PROVIDERS = ("anthropic",)

# The name the core's own tools are registered under (core/_builtin/tools.py):
# the core's name, not a plugin's.
CORE_PLUGIN = "core"

# The result models are built on their first validation, not at import
# (defer_build): a permissions check, a tool listing and loading a toolbox
# make no result.


class TextContent(BaseModel):
    """Text for the model."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    type: Literal["text"] = "text"
    """The part's kind, which tells the three apart in ``Content``."""
    text: str
    """The text itself."""
    annotations: dict[str, Any] | None = None
    """Who the content is for and how much it matters (MCP's ``audience``, ``priority``, ``lastModified``)."""


class ImageContent(BaseModel):
    """An image, base64-encoded."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    type: Literal["image"] = "image"
    """The part's kind, which tells the three apart in ``Content``."""
    data: str
    """The image's bytes, base64-encoded."""
    mime_type: str
    """The image's media type, such as ``image/png``."""
    annotations: dict[str, Any] | None = None
    """Who the content is for and how much it matters (MCP's ``audience``, ``priority``, ``lastModified``)."""


class ResourceContent(BaseModel):
    """An embedded resource: text or a base64 blob, named by URI."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    type: Literal["resource"] = "resource"
    """The part's kind, which tells the three apart in ``Content``."""
    uri: str
    """What the resource is (``file:///...``, an MCP server's URI)."""
    mime_type: str | None = None
    """Its media type, when known (``application/pdf`` is sent to the model APIs as a document)."""
    text: str | None = None
    """Its text, for a text resource (one of ``text`` and ``blob``)."""
    blob: str | None = None
    """Its bytes, base64-encoded, for a binary resource."""
    annotations: dict[str, Any] | None = None
    """Who the content is for and how much it matters (MCP's ``audience``, ``priority``, ``lastModified``)."""


Content = Annotated[Union[TextContent, ImageContent, ResourceContent], Field(discriminator="type")]


class ToolResult(BaseModel):
    """What a tool call gives back to the model.

    A handler may return a plain string instead: it becomes
    ``ToolResult.text(string)``. Text longer than ``ctx.result_limit`` is
    saved to a file by the pipeline and the model shown its start.
    """

    model_config = ConfigDict(defer_build=True)

    content: list[Content] = Field(default_factory=list)
    """The parts the model reads, in order: text, images, embedded resources."""
    structured_content: dict[str, Any] | None = None
    """Machine-readable data beside the text (MCP's ``structuredContent``), for hosts that use it."""
    is_error: bool = False
    """The call failed: the text says why, for the model to act on."""

    # Both validate one dict: half the instructions of building the TextContent
    # first (pydantic then checks that instance again) and a third of
    # model_construct's Python loop over the fields. ToolResult's own go
    # to the validator model_validate calls (its checks of options not
    # passed here cost a fifth of the validation), found in the class's
    # own namespace: ``cls.__pydantic_validator__`` goes through the
    # metaclass's __getattr__ hook, a tenth of the validation again. A
    # subclass's model_validate may be its own.
    @classmethod
    def text(cls, text: str, *, is_error: bool = False) -> ToolResult:
        """A result of one text part."""
        validate = _RESULT_NAMESPACE["__pydantic_validator__"].validate_python if cls is ToolResult \
            else cls.model_validate
        return validate({"content": [{"type": "text", "text": text}], "is_error": is_error})

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """A failed call: ``message`` (what went wrong and what the model can do) as its one text part."""
        validate = _RESULT_NAMESPACE["__pydantic_validator__"].validate_python if cls is ToolResult \
            else cls.model_validate
        return validate({"content": [{"type": "text", "text": message}], "is_error": True})

    def text_content(self) -> str:
        """All text parts joined, for callers that want plain text."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))

    def with_text_appended(self, text: str) -> ToolResult:
        """A copy with ``text`` added as a last text part (results are not changed in place)."""
        return self.model_copy(update={"content": [*self.content, TextContent(text=text)]})

    # --- the model APIs' wire formats (see docs/embedding.md) ---

    def to_anthropic(self, tool_use_id: str) -> dict[str, Any]:
        """An Anthropic Messages API ``tool_result`` content block: text,
        images and PDFs as blocks, ``is_error`` set for an error."""
        from .wire import anthropic_result

        return anthropic_result(self, tool_use_id)

    def to_openai_chat(self, tool_call_id: str) -> list[dict[str, Any]]:
        """OpenAI Chat Completions messages: the ``tool`` message, then, when
        the result has images or PDFs (which a tool message cannot carry), a
        ``user`` message with them. For several results of one turn, use
        ``ToolResult.openai_chat_messages``: every tool message must come
        before the first user message."""
        from .wire import openai_chat_result

        return openai_chat_result(self, tool_call_id)

    @staticmethod
    def openai_chat_messages(results: Iterable[tuple[str, ToolResult]]) -> list[dict[str, Any]]:
        """The Chat Completions messages for ``(tool_call_id, result)`` pairs
        of one assistant turn: the tool messages in order, then the user
        messages carrying their images."""
        from .wire import openai_chat_messages

        return openai_chat_messages(results)

    def to_responses(self, call_id: str) -> dict[str, Any]:
        """An OpenAI Responses API ``function_call_output`` input item: the
        text as a string, or ``input_text``/``input_image``/``input_file``
        parts when there is more than text."""
        from .wire import responses_result

        return responses_result(self, call_id)


# ToolResult's namespace, read live: a rebuild of the model (its first
# validation, with defer_build) puts the new validator there.
_RESULT_NAMESPACE = ToolResult.__dict__

class Absent:
    """Why a tool is not offered to a session: what ``offered_when`` returns in
    place of False, so that the model that calls the tool, ``pegboard tools
    show`` and ``pegboard tools list`` say why. Falsy, as False is."""

    __slots__ = ("reason",)
    reason: str
    """What is missing, said so that someone can act on it ("the host keeps no
    conversation log"); the model reads it after "is not offered in this session: "."""

    def __init__(self, reason: str) -> None:
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("Absent needs a reason: what is missing and how to provide it")
        object.__setattr__(self, "reason", reason.strip().rstrip("."))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Absent is immutable")

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Absent) and other.reason == self.reason

    def __hash__(self) -> int:
        return hash(self.reason)

    def __repr__(self) -> str:
        return f"Absent({self.reason!r})"


HandlerResult = Union[ToolResult, str]
Handler = Callable[[Any, "ToolContext"], Union[Awaitable[HandlerResult], HandlerResult]]


def _import_attr(ref: str) -> Any:
    module_name, _, attr = ref.partition(":")
    if not attr:
        raise ValueError(f"expected 'module:attribute', got {ref!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            # The plugin's module and file, not this line, is where the mistake is.
            raise LazyReferenceError(f"{module_name} ({_module_file(module_name)}) has no attribute "
                                     f"{part!r}") from None
    return obj


_CORE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _caller_line() -> str | None:
    frame = sys._getframe(2)  # the caller of Tool.__init__
    file = frame.f_code.co_filename
    if file.startswith(_CORE_DIR) or file.endswith(("dataclasses.py", "copy.py")):
        return None
    return f"{_shown_path(file)}:{frame.f_lineno}"


def replace_tool(tool: Tool, **changes: Any) -> Tool:
    """``dataclasses.replace`` keeping where the tool was declared."""
    from dataclasses import replace

    new = replace(tool, **changes)
    object.__setattr__(new, "_declared_at", tool.declared_at)
    return new


class LazyReferenceError(AttributeError):
    """A ``"module:attr"`` string naming something its module does not have."""


def _module_file(module_name: str) -> str:
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if file is None:
        return "no file"
    return _shown_path(file)


def _shown_path(file: str) -> str:
    return os.path.abspath(file)


def check_reference(ref: str) -> Any:
    """Raise when ``"module:attr"`` cannot resolve, executing no module not
    imported yet when its source binds the name at its top level (the
    module is imported only when it seems not to). What this cannot see (a
    module that fails while importing) is found at the first call, which
    imports it. Returns what it names when it was resolved (its module was
    imported already, or had to be), else None."""
    module_name, _, attr = ref.partition(":")
    if not attr:
        raise ValueError(f"expected 'module:attribute', got {ref!r}")
    if module_name in sys.modules:
        return _import_attr(ref)
    import importlib.util

    spec = importlib.util.find_spec(module_name)  # imports the parent packages only
    if spec is None:
        raise ModuleNotFoundError(f"No module named {module_name!r}", name=module_name)
    origin = spec.origin
    if not origin or not origin.endswith(".py"):
        return None
    first = attr.split(".", 1)[0]
    st = os.stat(origin)
    if _binds_plainly(origin, st.st_mtime_ns, st.st_size, first):
        return None
    names = _top_level_names(origin, st.st_mtime_ns)
    if names is not None and first not in names:
        # The source does not bind it: import to be sure (a name bound some way the reading
        # does not follow must not break a working tool); only a real break pays for this.
        return _import_attr(ref)
    return None


@functools.lru_cache(maxsize=512)
def _binds_plainly(path: str, _mtime_ns: int, _size: int, name: str) -> bool:
    """Whether a module's source defines ``name`` the usual way, a ``def``,
    ``async def`` or ``class`` statement at its top level (at the start of a
    line): found by searching its text, where parsing the module (the
    fallback) costs a listing more than the rest of judging its tool."""
    try:
        with open(path, "rb") as handle:
            source = handle.read()
    except OSError:
        return False
    needle = name.encode()
    at = source.find(needle)
    while at >= 0:
        head = source[source.rfind(b"\n", 0, at) + 1:at]
        after = source[at + len(needle):at + len(needle) + 1]
        if head in (b"def ", b"class ", b"async def ") and not (after.isalnum() or after == b"_"):
            return True
        at = source.find(needle, at + 1)
    return False


@functools.lru_cache(maxsize=256)
def _top_level_names(path: str, _mtime_ns: int) -> frozenset[str] | None:
    """The names a module's source binds at its top level, or None when it
    cannot be told without running it (a star import, ``__getattr__``)."""
    import ast

    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None  # the import reports it, with its line
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> bool:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name == "*":
                        return False
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                parts = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
                parts += [h.body for h in getattr(node, "handlers", [])]
                if not all(visit(part) for part in parts):
                    return False
        return True

    if not visit(tree.body) or "__getattr__" in names:
        return None
    return frozenset(names)


@record(frozen=True, kw_only=True)
class Tool:
    """One tool, as a plugin registers it.

    ``handler`` is ``async def handler(args, ctx) -> ToolResult | str`` where
    ``args`` is an instance of ``input_model`` (or the raw dict for a tool
    with an external ``input_schema``). A plain function is run in a thread.
    The model-facing description is loaded from the plugin's
    ``descriptions/<name>.md`` through the description hook; ``description``
    is the fallback for tools whose text comes from elsewhere (MCP servers).
    """

    name: str
    """The name the model calls it by and rules name (``Greet``, ``Greet(Ada)``); unique in a toolbox."""
    handler: Handler | str
    """``handler(args, ctx)``, or ``"module:attribute"`` naming it, imported at the first call."""
    input_model: type[BaseModel] | str | None = None
    """The pydantic model of the arguments (or ``"module:attribute"``); its JSON Schema is what the
    model is shown. Give this or ``input_schema``, not both."""
    input_schema: Mapping[str, Any] | None = None
    """A JSON Schema from elsewhere (an MCP server's), in place of ``input_model``: the handler gets
    the arguments as a dict, checked against the schema only as advice."""
    read_only: bool = False
    """The tool changes nothing: read-only modes offer it, and a batch runs such calls concurrently."""
    loading: Loading = "always"
    """``"always"``: in every catalogue; ``"deferred"``: listed by name and loaded through ToolSearch."""
    permission: Level = "workspace"
    """The least level that offers it: ``none``, ``read``, ``workspace`` or ``unrestricted``."""
    subagents: bool | Access = True
    """What a sub-agent's session (``Session.child``) gets of the tool. True: what its policy offers,
    like its parent. False: never offered to one. ``"read"`` or ``"full"``: offered only when whoever
    makes the child grants it (``child(access={name: "read"})``), and at most this much; ``"read"``
    means only what the tool counts as reading, which the tool itself enforces through
    ``request.access`` / ``ctx.access``."""
    description: str | None = None
    """Fallback model-facing text, used when no description hook and no ``descriptions/<name>.md``
    file gives one (one-file plugins and MCP tools have no file)."""
    timeout_s: float | None = None
    """Seconds a call may run before the pipeline stops it with an error result for the model;
    None: the pipeline's default (600 s)."""
    lifts_caps_with_scratchpad: bool = False
    """When the model sets the ``scratchpad`` argument (which the core adds to every tool's schema,
    saving the output under that name instead of returning it), the tool's own output caps are
    lifted too; ``ctx.uncapped`` tells the handler."""
    plugin: str = ""
    """The plugin that registered it; set by the core at registration, whatever the plugin passed."""
    group: str | None = None
    """A group inside the plugin (the mcp plugin: the server), for listings
    that name sources: the deferred listing past its budget, ``tools cost``."""
    title: str | None = None
    """A short human-facing name (MCP tool titles), passed on where formats have one."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form facts for other plugins and the core: ``{"requires": "Bash"}`` makes the tool go
    when Bash is blocked; ``{"rule_names": [...]}`` names that rules for it may use."""
    offered_when: Callable[[PluginSession], bool | Absent] | str | None = None
    """``offered_when(session) -> bool | Absent`` (or ``"module:attribute"`` naming it): the tool is
    offered only to sessions it says True to (StructuredOutput: a session with an answer schema);
    return ``Absent("why")`` rather than False to say why (the model that calls the tool is told, and
    listings show it). None: every session its policy offers it to. Asked whenever the session's
    tools are looked at, so keep it cheap; one that raises hides the tool (and is reported)."""
    permission_examples: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """``(label, input)`` pairs that show what the tool may do: ``pegboard tools list`` shows the
    permission decision for each input in the listed mode (rules included), ``tools show`` in every
    mode. Bash: ``("read-only commands", {"command": "ls"})``, ``("other commands", {"command":
    "rm -rf build"})``, so that a tool offered at the ``read`` level is not taken for one that only
    reads. Empty: the listing shows the level alone."""
    absent: str | None = None
    """Why the tool cannot be offered in this toolbox at all (WebSearch: no search key): it is
    registered all the same, so that ``pegboard tools list`` and ``tools show`` give the reason
    and a call gets it as its error, but no session is offered it. None: not absent."""
    session_schema: Callable[[PluginSession], Mapping[str, Any]] | str | None = None
    """``session_schema(session) -> dict`` (or ``"module:attribute"``): the input schema a session's
    catalogue shows in place of the registered one (StructuredOutput's is the session's answer
    schema). The handler then checks its arguments itself: the pipeline validates against the
    registered ``input_schema`` only, as advice."""
    native: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The tool's definition as a model API's own tool type, by API (``"anthropic"``): what an export
    sends in place of the function definition when the host asks for it
    (``catalogue.to_anthropic(native={"memory"})``), such as
    ``{"anthropic": {"type": "memory_20250818", "name": "memory"}}``. Its ``name`` must be the tool's
    (the model calls it back by that name; left out, it is added). The handler takes the calls the
    provider's model makes of that type, so ``input_model`` must accept the provider's arguments."""
    vote: Callable[..., Vote | None] | str | None = None
    """This tool's own permission vote (or ``"module:attribute"`` naming it, imported at the tool's
    first decision): ``vote(request, config, context)`` taking those of the three arguments it names,
    as a hook does (``config`` and ``context`` are its plugin's). Called only for calls of this tool;
    it returns ``Vote.allow/ask/deny(reason)`` or None to abstain. The broadcast
    ``pegboard_permission`` hook is for policies that span tools."""

    def __init__(self, *, name: str, handler: Handler | str, input_model: type[BaseModel] | str | None = None,
                 input_schema: Mapping[str, Any] | None = None, read_only: bool = False, loading: Loading = "always",
                 permission: Level = "workspace", subagents: bool | Access = True, description: str | None = None,
                 timeout_s: float | None = None, lifts_caps_with_scratchpad: bool = False, plugin: str = "",
                 group: str | None = None, title: str | None = None, metadata: Mapping[str, Any] = FACTORY,
                 offered_when: Callable[[PluginSession], bool | Absent] | str | None = None,
                 permission_examples: tuple[tuple[str, Mapping[str, Any]], ...] = (),
                 absent: str | None = None,
                 session_schema: Callable[[PluginSession], Mapping[str, Any]] | str | None = None,
                 native: Mapping[str, Mapping[str, Any]] = FACTORY,
                 vote: Callable[..., Vote | None] | str | None = None) -> None:
        _set = object.__setattr__
        _set(self, "name", name)
        _set(self, "handler", handler)
        _set(self, "input_model", input_model)
        _set(self, "input_schema", input_schema)
        _set(self, "read_only", read_only)
        _set(self, "loading", loading)
        _set(self, "permission", permission)
        _set(self, "subagents", subagents)
        _set(self, "description", description)
        _set(self, "timeout_s", timeout_s)
        _set(self, "lifts_caps_with_scratchpad", lifts_caps_with_scratchpad)
        _set(self, "plugin", plugin)
        _set(self, "group", group)
        _set(self, "title", title)
        _set(self, "metadata", {} if metadata is FACTORY else metadata)
        _set(self, "offered_when", offered_when)
        _set(self, "permission_examples", tuple((str(label), dict(example)) for label, example in permission_examples))
        _set(self, "absent", absent)
        _set(self, "session_schema", session_schema)
        _set(self, "native", {} if native is FACTORY else native)
        _set(self, "vote", vote)
        _set(self, "_declared_at", _caller_line())
        self.__post_init__()

    @property
    def declared_at(self) -> str | None:
        """``file:line`` of the ``Tool(...)`` in the plugin's source (None when pegboard made it),
        so an error in a lazy ``"module:attr"`` points at the plugin, not at pegboard."""
        return self.__dict__.get("_declared_at")

    def __post_init__(self) -> None:
        if (self.input_model is None) == (self.input_schema is None):
            raise ValueError(f"tool {self.name!r}: give exactly one of input_model or input_schema")
        if self.permission not in LEVELS:
            raise ValueError(f"tool {self.name!r}: permission must be one of {LEVELS}")
        if self.loading not in ("always", "deferred"):
            raise ValueError(f"tool {self.name!r}: loading must be 'always' or 'deferred'")
        if self.absent is not None and (not isinstance(self.absent, str) or not self.absent.strip()):
            raise ValueError(f"tool {self.name!r}: absent must be the reason (a sentence), or None")
        if not isinstance(self.subagents, bool) and self.subagents not in ACCESSES:
            raise ValueError(f"tool {self.name!r}: subagents must be True, False or one of {ACCESSES}")
        for provider, definition in self.native.items():
            if provider not in NATIVE_PROVIDERS:
                raise ValueError(f"tool {self.name!r}: native: no export sends a native tool of {provider!r} "
                                 f"(known: {', '.join(NATIVE_PROVIDERS)})")
            if not isinstance(definition, Mapping) or not isinstance(definition.get("type"), str):
                raise ValueError(f"tool {self.name!r}: native[{provider!r}] must be a mapping with the tool's "
                                 "\"type\"")
            if definition.get("name", self.name) != self.name:
                raise ValueError(f"tool {self.name!r}: native[{provider!r}] names it {definition['name']!r}; the "
                                 "model calls a native tool back by its name, so it must be the tool's own")

    @cached_property
    def model(self) -> type[BaseModel] | None:
        """The pydantic input model, imported on first use."""
        if self.input_model is None:
            return None
        if isinstance(self.input_model, str):
            model = _import_attr(self.input_model)
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise TypeError(f"tool {self.name!r}: {self.input_model} is not a pydantic model")
            return model
        return self.input_model

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The input JSON Schema the model is shown."""
        if self.input_schema is not None:
            return dict(self.input_schema)
        assert self.model is not None
        from .schemas import model_schema

        return model_schema(self.model)

    def offered_to(self, session: PluginSession) -> bool:
        """Whether ``offered_when`` lets ``session`` have this tool (True without one); what it
        raises comes through (the toolbox reports it and hides the tool)."""
        return self.absence_in(session) is None

    def absence_in(self, session: PluginSession) -> str | None:
        """Why this tool keeps itself from ``session`` (``absent``, or the reason of the ``Absent``
        its ``offered_when`` returned; a general sentence for a plain False), or None when it does
        not. What ``offered_when`` raises comes through."""
        if self.absent is not None:
            return self.absent
        check = self.offered_when
        if check is None:
            return None
        fn = _import_attr(check) if isinstance(check, str) else check
        answer = fn(session)
        if isinstance(answer, Absent):
            return answer.reason
        if answer:
            return None
        owner = f"the {self.plugin} plugin offers it" if self.plugin else "it is offered"
        return f"{owner} only to sessions where it applies"

    def schema_in(self, session: PluginSession | None) -> dict[str, Any]:
        """The input JSON Schema ``session`` shows the model: ``session_schema``'s, else ``schema``."""
        custom = self.session_schema
        if custom is None or session is None:
            return self.schema
        fn = _import_attr(custom) if isinstance(custom, str) else custom
        return dict(fn(session))

    @cached_property
    def function(self) -> Handler:
        """The handler, imported on first use when it was given as ``"module:attribute"``."""
        if isinstance(self.handler, str):
            fn = _import_attr(self.handler)
            if not callable(fn):
                raise TypeError(f"tool {self.name!r}: {self.handler} is not callable")
            return fn
        return self.handler

    @cached_property
    def voter(self) -> Callable[..., Vote | None] | None:
        """``vote``, imported on first use when it was given as ``"module:attribute"``."""
        given = self.vote
        if isinstance(given, str):
            fn = _import_attr(given)
            if not callable(fn):
                raise TypeError(f"tool {self.name!r}: {given} is not callable")
            return fn
        return given

    @cached_property
    def _awaited(self) -> bool:
        # asked once per tool, not per call (inspect's test costs a tenth of a small Read's handler)
        return inspect.iscoroutinefunction(self.function)

    async def invoke(self, args: Any, ctx: ToolContext) -> HandlerResult:
        """Run the handler: awaited when it is a coroutine function, else in a worker thread.
        The pipeline calls this after validation and the permission decision; a plugin calls
        ``session.call`` instead, which does all of that."""
        fn = self.function
        if self._awaited:
            return await fn(args, ctx)  # type: ignore[misc]
        import asyncio  # here, not at the top: start-up never needs it (about 40 ms with ssl)

        result = await asyncio.to_thread(fn, args, ctx)
        if inspect.isawaitable(result):
            return await result
        return result


@record()
class ToolContext:
    """What a handler gets besides its arguments: ``handler(args, ctx)``.

    One is made per call. Everything a handler needs about where it runs is
    here, so that a plugin never reaches into the engine: its configuration,
    its state in this session, its folders (``plugin_context``), the paths the
    permission decision resolved, and the way to tell the host something
    (``emit``).
    """

    session: PluginSession
    """The session the call runs in: its policy, working directories and
    ``plugin_state``; ``await ctx.session.call(...)`` runs another tool through
    the whole pipeline (permissions included)."""
    tool: Tool
    """The tool being called (``ctx.tool.name``, ``ctx.tool.plugin``)."""
    plugin_context: PluginContext
    """This plugin's ``PluginContext``: its folders, the settings, the hook relay, its store."""
    config: Any
    """This plugin's validated ``[plugins.<name>]`` table (None without a config model)."""
    call_id: str
    """This call's id: the model's tool-use id when the host gave one, else one pegboard made.
    Events the handler emits carry it."""
    uncapped: bool = False
    """True when the caller set ``scratchpad`` on a tool that lifts its caps."""
    _resolved: Mapping[str, tuple[str, int]] = field(default_factory=dict, repr=False)

    def __init__(self, session: PluginSession, tool: Tool, plugin_context: PluginContext, config: Any,
                 call_id: str, uncapped: bool = False, _resolved: Mapping[str, tuple[str, int]] = FACTORY) -> None:
        self.session = session
        self.tool = tool
        self.plugin_context = plugin_context
        self.config = config
        self.call_id = call_id
        self.uncapped = uncapped
        self._resolved = {} if _resolved is FACTORY else _resolved

    @property
    def root(self) -> Path:
        """The session's project root (resolved), against which relative paths in arguments are read."""
        return self.session.root

    @property
    def working_dirs(self) -> tuple[Path, ...]:
        """The folders the session may work in (the root first); the permission decision has already
        judged the call's paths against them."""
        return self.session.working_dirs

    @property
    def store(self) -> PluginStore:
        """This plugin's ``PluginStore`` (as ``context.store``): its tables,
        transactions, ``await ctx.store.run(fn)``."""
        return self.plugin_context.store

    @property
    def plugin(self) -> str:
        """The name this tool's plugin was installed under (its entry point's name)."""
        return self.tool.plugin

    @property
    def result_limit(self) -> int:
        """Characters of text a result may have before the pipeline saves
        the whole text to a file and shows the model the start
        (``[results] max_chars``); a tool that caps its own output should
        stay under it."""
        return self.plugin_context.settings.core.results.max_chars

    def resolved(self, path: str | os.PathLike[str]) -> Path | None:
        """The real path the permission decision resolved ``path`` (as given
        in the input) to, or None when the decision did not resolve it.
        A handler that opens what was decided on compares against this
        rather than resolving again and trusting the answer."""
        found = self._resolved.get(os.fspath(path))
        return Path(found[0]) if found is not None else None

    def resolved_str(self, path: str | os.PathLike[str]) -> str | None:
        """``resolved`` as a string, without building a ``Path`` (for a
        handler that opens the path at once)."""
        found = self._resolved.get(path if type(path) is str else os.fspath(path))
        return found[0] if found is not None else None

    @property
    def access(self) -> Access:
        """What this session may do with this tool: ``"full"`` for a top
        session; for a sub-agent's, what its maker granted within the tool's
        ``subagents`` (``"read"``: only what the tool counts as reading,
        which the tool enforces)."""
        return self.session.access_to(self.tool)

    def rule_for(self, behavior: Literal["allow", "ask", "deny"], tool: str,
                 input: Mapping[str, Any]) -> CompiledRule | None:
        """``PermissionRequest.rule_for``, for a handler: the first
        ``behavior`` rule that would decide a call of ``tool`` with ``input``."""
        return self.session.rule_for(behavior, tool, input)

    def rules_for(self, behavior: Literal["allow", "ask", "deny"], tool: str) -> tuple[CompiledRule, ...]:
        """``PermissionRequest.rules_for``, for a handler."""
        return self.session.rules_for(behavior, tool)

    @property
    def project_trusted(self) -> bool:
        """Whether the project root is trusted: read the project's own files
        (its skills, its agents) only when it is."""
        return self.plugin_context.project_trusted

    @property
    def state(self) -> dict[str, Any]:
        """This plugin's state in this session (never shared across sessions)."""
        return self.session.plugin_state(self.tool.plugin)

    def emit(self, kind: str, data: Mapping[str, Any]) -> None:
        """Send an event to the host (notifications, progress, one-time notes)."""
        self.session.emit(kind, {"tool": self.tool.name, "call_id": self.call_id, **data})

    def output(self, text: str, kind: str = "output", **data: Any) -> None:
        """Stream a piece of this call's output as it comes (a line a command
        printed, a progress message): the host hears the event ``kind`` with
        ``text`` (and ``data``), ``Session.stream`` yields it, and the
        adapters and ``pegboard call`` at a terminal show it. The result
        still carries the whole output."""
        self.session.emit(kind, {"tool": self.tool.name, "call_id": self.call_id, **data, "text": text})

    def note_once(self, key: str) -> bool:
        """True the first time ``key`` is seen in this session."""
        return self.session.note_once(f"{self.tool.plugin}:{key}")
