"""The four tools' handlers: search and read the log, check and compact the live window."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from pegboard import ToolContext, ToolResult

from ._log import HeldLog, Log, has_log, log_of, normalized
from ._models import (ContextCheckInput, ContextCompactInput, ContextUsage, ConversationReadInput,
                      ConversationSearchInput)

__all__ = ["LARGE_CHARS", "context_check", "context_compact", "conversation_read", "conversation_search"]

LARGE_CHARS = 4_000
"""A part longer than this (a large tool output, a long paste) is shown as a
reference to a scratchpad entry holding it, with its first lines."""
PREVIEW_CHARS = 300
COPY_BUDGET = 2_000_000
"""The most characters one call copies into the scratchpad for its references."""
EXCERPT_CHARS = 240


class _NoLog(Exception):
    """No log can be read for this session; the message says why, for the model."""


async def _host_answer(ctx: ToolContext, hook_name: str, **kwargs: Any) -> Any:
    """The host's answer to one of this plugin's hooks (None: no answer). The
    host's exception comes through, for the caller to put in words."""
    hook = getattr(ctx.plugin_context.hook, hook_name, None)
    if hook is None or not hook.get_hookimpls():
        return None
    result = hook(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _log(ctx: ToolContext) -> Log:
    """The log to read: the host's own list (``pegboard_conversation_messages``),
    else what was recorded for this session."""
    try:
        given = await _host_answer(ctx, "pegboard_conversation_messages", session=ctx.session)
    except Exception as exc:  # the host's bug is this call's failure, not the session's
        raise _NoLog(f"The host could not give the conversation ({type(exc).__name__}: {exc}).") from None
    if given is not None:
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
            raise _NoLog(f"The host gave the conversation as {type(given).__name__}, not a list of messages.")
        try:
            return HeldLog(await asyncio.to_thread(normalized, given))
        except ValueError as exc:
            raise _NoLog(f"The host's conversation cannot be read: {exc}.") from None
    context = ctx.plugin_context
    if not await asyncio.to_thread(has_log, context, ctx.session):
        raise _NoLog("No conversation is recorded for this session, so there is nothing to search or read.")
    return log_of(context, ctx.session)


class _Shown:
    """Parts as the model sees them: whole, or past ``LARGE_CHARS`` as a
    reference to a scratchpad entry that holds the part (copied there when
    shown, within ``COPY_BUDGET`` a call)."""

    def __init__(self, uncapped: bool) -> None:
        self.uncapped = uncapped
        self.copies: dict[str, str] = {}
        self._budget = COPY_BUDGET

    def reference(self, index: int, number: int, text: str) -> str:
        name = f"conversation#{index}.{number}"
        if name in self.copies:
            return f'scratchpad entry "{name}" holds all {len(text):,} characters (ScratchpadRead reads it)'
        if len(text) > self._budget:
            return (f"{len(text):,} characters, not copied to the scratchpad (this call copied enough already): "
                    f"ConversationRead start={index} shows them")
        self._budget -= len(text)
        self.copies[name] = text
        return f'scratchpad entry "{name}" holds all {len(text):,} characters (ScratchpadRead reads it)'

    def part(self, index: int, number: int, text: str) -> str:
        if self.uncapped or len(text) <= LARGE_CHARS:
            return text
        return f"[large: {self.reference(index, number, text)}; it begins]\n{text[:PREVIEW_CHARS]}…"

    def save(self, ctx: ToolContext) -> None:
        pad = ctx.session.scratchpad
        for name, text in self.copies.items():
            if pad.get(name) != text:
                pad[name] = text


# --- ConversationSearch ---------------------------------------------------------------


def _matcher(args: ConversationSearchInput) -> Callable[[str], int]:
    """A function of a line: where the match starts, or -1."""
    if args.regex:
        pattern = re.compile(args.query)

        def find(line: str) -> int:
            found = pattern.search(line)
            return found.start() if found is not None else -1
        return find
    needle = args.query.casefold()

    def contains(line: str) -> int:
        if needle not in line.casefold():
            return -1
        return max(line.lower().find(args.query.lower()), 0)
    return contains


def _excerpt(line: str, at: int) -> str:
    line = line.strip()
    if len(line) <= EXCERPT_CHARS:
        return line
    begin = max(0, min(at - EXCERPT_CHARS // 3, len(line) - EXCERPT_CHARS))
    text = line[begin: begin + EXCERPT_CHARS]
    return ("…" if begin else "") + text + ("…" if begin + EXCERPT_CHARS < len(line) else "")


def _search(log: Log, args: ConversationSearchInput, shown: _Shown) -> str:
    find = _matcher(args)
    hits: list[str] = []
    searched = 0
    full = False
    for index, role, parts in log.scan():
        searched += 1
        for number, part in enumerate(parts, 1):
            for line in part.splitlines():
                at = find(line)
                if at < 0:
                    continue
                hit = f"#{index} {role}: {_excerpt(line, at)}"
                if len(part) > LARGE_CHARS and not shown.uncapped:
                    hit += f" [in a large part: {shown.reference(index, number, part)}]"
                hits.append(hit)
                if len(hits) >= args.limit:
                    full = True
                    break
            if full:
                break
        if full:
            break
    if not hits:
        return (f"No line of the {searched:,} message{'s' if searched != 1 else ''} searched matches "
                f"{args.query!r}{' (a regular expression)' if args.regex else ''}.")
    if full:
        tail = (f"(Stopped at {len(hits)} matches, at message #{index}: narrow the query, or raise limit "
                f"(at most 100).)")
    else:
        tail = f"({len(hits)} match{'es' if len(hits) != 1 else ''} in {searched:,} messages.)"
    return "\n".join([*hits, "", tail, "ConversationRead with start=N reads message #N whole."])


async def conversation_search(args: ConversationSearchInput, ctx: ToolContext) -> ToolResult:
    if args.regex:
        try:
            re.compile(args.query)
        except re.error as exc:
            return ToolResult.error(f"query is not a valid regular expression: {exc}.")
    try:
        log = await _log(ctx)
    except _NoLog as why:
        return ToolResult.error(str(why))
    shown = _Shown(ctx.uncapped)
    text = await asyncio.to_thread(_search, log, args, shown)
    shown.save(ctx)
    return ToolResult.text(text)


# --- ConversationRead -----------------------------------------------------------------


def _read(log: Log, args: ConversationReadInput, shown: _Shown) -> ToolResult:
    messages = log.read(args.start, args.count)
    if not messages:
        total = log.count()
        if not total:
            return ToolResult.error("The conversation log is empty so far.")
        return ToolResult.error(f"There is no message #{args.start}: the conversation has {total:,} "
                                f"(#1 to #{total}).")
    blocks = []
    for index, role, parts in messages:
        body = "\n".join(shown.part(index, number, part) for number, part in enumerate(parts, 1))
        blocks.append(f"#{index} {role}:\n{body or '(no content)'}")
    last = messages[-1][0]
    total = log.count()
    more = f" ConversationRead start={last + 1} reads on." if last < total else ""
    span = f"#{messages[0][0]}" + (f" to #{last}" if last != messages[0][0] else "")
    return ToolResult.text("\n\n".join(blocks) + f"\n\n(Message{'s' if len(messages) > 1 else ''} {span} of "
                           f"{total:,}.{more})")


async def conversation_read(args: ConversationReadInput, ctx: ToolContext) -> ToolResult:
    try:
        log = await _log(ctx)
    except _NoLog as why:
        return ToolResult.error(str(why))
    shown = _Shown(ctx.uncapped)
    result = await asyncio.to_thread(_read, log, args, shown)
    shown.save(ctx)
    return result


# --- ContextCheck and ContextCompact ----------------------------------------------------


def _tokens(n: int) -> str:
    return f"{n:,} tokens"


def _usage_text(usage: ContextUsage, log_kept: bool) -> str:
    used, window = usage.used_tokens, usage.window_tokens
    lines = [f"Using {used:,} of {_tokens(window)} ({used * 100 // window}%)."]
    if usage.compact_at_tokens is not None:
        at = usage.compact_at_tokens
        lines.append(f"Headroom: {_tokens(max(at - used, 0))} before compaction at {at:,} "
                     f"({at * 100 // window}% of the window).")
    else:
        lines.append(f"Headroom: {_tokens(max(window - used, 0))} before the window is full.")
    if usage.kept_recent_tokens is not None:
        lines.append(f"Kept word for word on compaction: about {_tokens(usage.kept_recent_tokens)} of the most "
                     "recent turns; everything older is replaced by a summary.")
    if usage.overhead_tokens is not None:
        lines.append(f"Fixed overhead: about {_tokens(usage.overhead_tokens)} of system prompt and tool "
                     "definitions, which compaction does not reclaim.")
        lines.append(f"Conversation: about {_tokens(max(used - usage.overhead_tokens, 0))}, the part compaction "
                     "acts on.")
    if usage.compactions is not None:
        if usage.compactions == 0:
            lines.append("Compactions so far: none, so nothing has been summarised away yet.")
        else:
            kept = (" What they summarised away is still found by ConversationSearch and read by ConversationRead."
                    if log_kept else "")
            lines.append(f"Compactions so far: {usage.compactions}.{kept}")
    return "\n".join(lines)


async def context_check(args: ContextCheckInput, ctx: ToolContext) -> ToolResult:
    try:
        answer = await _host_answer(ctx, "pegboard_context_usage", session=ctx.session)
    except Exception as exc:
        return ToolResult.error(f"The host could not report the context window ({type(exc).__name__}: {exc}).")
    if answer is None:
        return ToolResult.error("The host has no figures for this session's context window.")
    try:
        usage = answer if isinstance(answer, ContextUsage) else ContextUsage.model_validate(answer)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the answer'}: {e['msg']}" for e in exc.errors())
        return ToolResult.error(f"The host's figures for the context window cannot be read ({problems}).")
    from . import log_available

    kept = await asyncio.to_thread(log_available, ctx.plugin_context, ctx.session)
    return ToolResult(content=ToolResult.text(_usage_text(usage, kept)).content,
                      structured_content=usage.model_dump(exclude_none=True))


async def context_compact(args: ContextCompactInput, ctx: ToolContext) -> ToolResult:
    try:
        answer = await _host_answer(ctx, "pegboard_context_compact", session=ctx.session,
                                    instructions=args.instructions, keep_recent=args.keep_recent)
    except Exception as exc:
        return ToolResult.error(f"The host could not compact the conversation ({type(exc).__name__}: {exc}).")
    if isinstance(answer, str) and answer.strip():
        return ToolResult.text(answer.strip())
    if answer is True:
        kept = "the most recent turns kept word for word" if args.keep_recent else "nothing kept word for word"
        return ToolResult.text("Compaction requested: it runs once this batch of tool calls is answered, and you "
                               f"continue from a summary, {kept}.")
    if answer is False:
        return ToolResult.error("The host will not compact the conversation now.")
    return ToolResult.error("No host took the request to compact the conversation.")
