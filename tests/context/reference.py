"""The full-rebuild reference of the request-view pipeline: the oracle the production path must equal.

Production builds views incrementally (``server.context.incremental``, B-INC-1). This module re-reads and
re-scans the whole transcript on every call, written for clarity, not speed, straight from the SPEC:

repair -> estimate -> under threshold: unchanged (R-PIPE-1) -> the given compaction, repeated, still under the
threshold: that (B-CACHE-1) -> a new compaction over the whole transcript: placeholders for every old successful
output before the safe tail if that fits and is MICRO_MIN_FREED_RATIO smaller than the request it replaces
(R-MICRO-3, B-CACHE-2) -> else
system + one summary + a tail shrunk until the view is at or under the target (R-SUM-1, B-CACHE-2) -> summarizer
raised, still over the threshold, or freed under 10%: the fallback window (R-FALL-1, B-LOOP-1), never sticky.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.context import Compaction, RequestView, ViewSettings, estimate_message_tokens, fallback_window, summarize
from server.context.clip import clip_to_budget
from server.context.fallback import FALLBACK_SUMMARY
from server.context.micro import microcompact
from server.context.repair import SYSTEM_ROLES, repair_with_origins
from server.context.summary import latest_plan
from server.context.tail import safe_tail_start
from server.context.view import MICRO_MIN_FREED_RATIO, MIN_FREED_RATIO

Message = dict[str, Any]


@dataclass(frozen=True)
class _Item:
    msg: Message
    tokens: int
    key: int | None  # the input message's seq (or index); None for a result repair made up


def _has_seq(msg: Mapping[str, Any]) -> bool:
    return isinstance(msg.get("seq"), int) and not isinstance(msg.get("seq"), bool)


def _items(messages: Sequence[Mapping[str, Any]], token_counts: Sequence[int] | None) -> tuple[list[_Item], int]:
    use_seq = all(_has_seq(m) for m in messages)
    items = []
    for msg, origin in repair_with_origins(messages):
        if origin is None:
            items.append(_Item(msg, estimate_message_tokens(msg), None))
            continue
        tokens = token_counts[origin] if token_counts is not None else estimate_message_tokens(msg)
        items.append(_Item(msg, tokens, messages[origin]["seq"] if use_seq else origin))
    last_key = max((m["seq"] for m in messages), default=0) if use_seq else len(messages) - 1
    return items, last_key


def _key(item: _Item) -> int:
    """An input message's key (repair makes up tool results only: never a tail's start nor a system message)."""
    assert item.key is not None, item
    return item.key


def _system(item: _Item) -> bool:
    return item.msg.get("role") in SYSTEM_ROLES


def reference_view(
    messages: Sequence[Mapping[str, Any]],
    settings: ViewSettings,
    *,
    token_counts: Sequence[int] | None = None,
    compaction: Compaction | None = None,
    summarizer: Callable[[list[Message]], str] = summarize,
) -> RequestView:
    items, last_key = _items(messages, token_counts)
    base: dict[str, Any] = {
        "before_tokens": sum(it.tokens for it in items),
        "threshold_tokens": settings.threshold_tokens,
        "context_window_tokens": settings.context_window_tokens,
        "keep_recent_tokens": settings.keep_recent_tokens,
        "transcript_messages": len(messages),
    }
    before = base["before_tokens"]
    conversation = [it for it in items if not _system(it)]
    replaced = before  # the request a new compaction replaces
    if compaction is not None and compaction.through_key <= last_key:
        start = next(
            (i for i, it in enumerate(conversation) if it.msg.get("role") != "tool" and it.key == compaction.tail_key),
            None,
        )
        if start is not None:
            view = _compacted(items, conversation, compaction, start, base, sticky=True)
            if view.estimated_tokens <= settings.threshold_tokens:
                return view
            replaced = view.estimated_tokens
    # B-CACHE-2 hysteresis: a compaction once made is repeated while it fits, even where the whole transcript
    # would fit again (a moved estimate, a larger window asked for); only without one is the whole sent
    if before <= settings.threshold_tokens and not (compaction and compaction.requested):
        return RequestView(
            messages=[it.msg for it in items],
            mode="full",
            estimated_tokens=before,
            summary=None,
            compacted_tool_outputs=0,
            **base,
        )
    conv_msgs = [it.msg for it in conversation]
    conv_tokens = [it.tokens for it in conversation]
    tail = safe_tail_start(conv_msgs, settings.tail_budget_tokens, conv_tokens)
    micro = Compaction("microcompacted", _key(conversation[tail]), last_key) if tail < len(conversation) else None
    if micro is not None:
        view = _compacted(items, conversation, micro, tail, base, sticky=False)
        if (
            view.compacted_tool_outputs
            and view.estimated_tokens <= settings.threshold_tokens
            and replaced - view.estimated_tokens >= MICRO_MIN_FREED_RATIO * replaced
        ):
            return view
    budget, target = settings.tail_budget_tokens, settings.target_tokens
    while True:
        tail = safe_tail_start(conv_msgs, budget, conv_tokens)
        text = None
        if tail > 0:
            try:
                older = conv_msgs[:tail]
                text = (
                    summarize(older, settings.section_budget_tokens, latest_plan(conv_msgs))
                    if summarizer is summarize
                    else summarizer(older)
                )
            except Exception:  # noqa: BLE001 - R-FALL-1
                return _fallback(messages, base)
        tail_tokens = sum(conv_tokens[tail:])
        tokens = sum(it.tokens for it in items if _system(it)) + tail_tokens
        if text is not None:
            tokens += estimate_message_tokens({"role": "system", "content": text})
        if tokens <= target or budget <= 0:
            break
        budget = max(0, min(budget, tail_tokens) - (tokens - target) - 1)
    if text is None:
        return _fallback(messages, base)
    clip = None
    if tokens > settings.threshold_tokens and tokens - tail_tokens < target:
        clip = target - (tokens - tail_tokens)  # the last exchange alone is too large: cut it to what is left
    made = Compaction("summarized", _key(conversation[tail]), last_key, text, clip_tokens=clip)
    view = _compacted(items, conversation, made, tail, base, sticky=False)
    if view.estimated_tokens > settings.threshold_tokens or before - view.estimated_tokens < MIN_FREED_RATIO * before:
        return _fallback(messages, base)
    return view


def _compacted(
    items: list[_Item], conversation: list[_Item], compaction: Compaction, start: int, base, *, sticky: bool
) -> RequestView:
    if compaction.mode == "microcompacted":
        compacted, count = microcompact([it.msg for it in conversation], start)
        swapped = {id(it): msg for it, msg in zip(conversation, compacted)}
        view, tokens = [], 0
        for it in items:
            msg = swapped.get(id(it), it.msg)
            view.append(msg)
            tokens += it.tokens if msg.get("content") is it.msg.get("content") else estimate_message_tokens(msg)
        return RequestView(
            messages=view,
            mode="microcompacted",
            estimated_tokens=tokens,
            summary=None,
            compacted_tool_outputs=count,
            compaction=compaction,
            sticky=sticky,
            **base,
        )
    through, text = compaction.through_key, compaction.summary or ""
    summary_msg = {"role": "system", "content": text}
    first = next(i for i, it in enumerate(items) if it is conversation[start])
    leading = [it for it in items if _system(it) and _key(it) <= through]
    later = [it for it in items[first:] if not _system(it) or _key(it) > through]
    cut = _clipped(conversation, compaction, start)
    view = [*(it.msg for it in leading), summary_msg, *(cut.get(id(it), it.msg) for it in later)]
    tokens = sum(it.tokens for it in leading) + estimate_message_tokens(summary_msg)
    tokens += sum(estimate_message_tokens(cut[id(it)]) if id(it) in cut else it.tokens for it in later)
    return RequestView(
        messages=view,
        mode="summarized",
        estimated_tokens=tokens,
        summary=text,
        compacted_tool_outputs=0,
        compaction=compaction,
        sticky=sticky,
        clipped_messages=len(cut),
        **base,
    )


def _clipped(conversation: list[_Item], compaction: Compaction, start: int) -> dict[int, Message]:
    """The shortened messages of a clipping compaction, by id of their item: the conversation messages from its
    tail up to the first one (counting from the very first) whose key is newer than what it saw, cut together."""
    if compaction.clip_tokens is None:
        return {}
    seen, end = -1, 0
    for i, it in enumerate(conversation):
        seen = max(seen, it.key if it.key is not None else -1)
        if seen > compaction.through_key:
            break
        end = i + 1
    kept = conversation[start : max(start, end)]
    cut, _ = clip_to_budget([it.msg for it in kept], compaction.clip_tokens)
    return {id(it): msg for it, msg in zip(kept, cut, strict=True) if msg != it.msg}


def _fallback(messages: Sequence[Mapping[str, Any]], base) -> RequestView:
    view = fallback_window(messages)
    return RequestView(
        messages=view,
        mode="fallback",
        estimated_tokens=sum(estimate_message_tokens(m) for m in view),
        summary=FALLBACK_SUMMARY,
        compacted_tool_outputs=0,
        **base,
    )
