"""The request view: the whole pipeline in one pure call (R-PIPE-1..3, R-SUM-1, R-SUM-4, R-FALL-1, B-LOOP-1).

repair -> estimate -> under threshold: send unchanged -> safe tail -> microcompaction -> fits: send ->
structured summary -> summarizer raised, still over, or freed under 10%: fallback window.
The transcript is read, never changed (R-SRC-2): every message in a view is a fresh dict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .fallback import FALLBACK_SUMMARY, fallback_view
from .micro import microcompact
from .repair import SYSTEM_ROLES, repair_with_origins
from .summary import summarize
from .tail import holder_index, safe_tail_start
from .tokens import estimate_message_tokens

__all__ = [
    "MIN_FREED_RATIO",
    "RequestView",
    "SummaryAnchor",
    "ViewSettings",
    "build_request_view",
    "fallback_request_view",
]

Mode = Literal["full", "microcompacted", "summarized", "fallback"]
Message = dict[str, Any]
MIN_FREED_RATIO = 0.10  # B-LOOP-1: a summary that frees less than this share of the request is not kept.
# R-SUM-4 adds a summary per model call of a long turn while keeping the earlier ones fixed; past this many they
# are merged into one (recomputed from the transcript), so a view never carries dozens of small summaries.
MAX_TURN_SUMMARIES = 8


@dataclass(frozen=True)
class ViewSettings:
    """Window, threshold ratio and tail budget for one model (R-PIPE-3, R-TAIL-1)."""

    context_window_tokens: int
    threshold_ratio: float = 0.8
    keep_recent_tokens: int = 8_000

    @property
    def threshold_tokens(self) -> int:
        """floor(window * ratio) (R-PIPE-3)."""
        return math.floor(self.context_window_tokens * self.threshold_ratio)

    @property
    def tail_budget_tokens(self) -> int:
        """``keep_recent_tokens``, capped at half the threshold (R-TAIL-1).

        With a small window (8k) the default 8,000-token tail alone would exceed the threshold, so every
        summary would be over and every turn would fall back; half leaves room for system and summary.
        """
        return min(self.keep_recent_tokens, self.threshold_tokens // 2)


@dataclass(frozen=True)
class SummaryAnchor:
    """A summary already in a view within this turn (R-SUM-4): kept with the same text at the same place.

    ``covers_through_seq_or_index`` is the ``seq`` of the last input message it covers when every input
    message carries a ``seq``, else that message's index in the input list.
    """

    text: str
    covers_through_seq_or_index: int


@dataclass(frozen=True)
class RequestView:
    """What is sent to the provider for one call, with the numbers the compaction event reports (R-OBS-1)."""

    messages: list[Message]
    mode: Mode
    estimated_tokens: int
    before_tokens: int
    threshold_tokens: int
    context_window_tokens: int
    keep_recent_tokens: int
    summary: str | None
    compacted_tool_outputs: int
    transcript_messages: int
    anchors: tuple[SummaryAnchor, ...] = ()
    clipped_messages: int = 0  # oversized messages shortened to fit the window (``clip.fit_to_window``)

    @property
    def after_tokens(self) -> int:
        """``afterTokens`` of the ``context.compacted`` event (R-OBS-1): the estimate of this view."""
        return self.estimated_tokens

    @property
    def event_summary(self) -> str | None:
        """Summary text of the ``context.compacted`` event (R-MICRO-3, R-OBS-1); None when nothing changed."""
        if self.mode == "full":
            return None
        if self.mode == "microcompacted":
            n = self.compacted_tool_outputs
            if n == 1:
                return "[microcompaction] 1 old tool output replaced with a placeholder"
            return f"[microcompaction] {n} old tool outputs replaced with placeholders"
        return self.summary


@dataclass(frozen=True)
class _Item:
    """A repaired message with its token estimate and its anchor key (input seq or index; None if synthetic)."""

    msg: Message
    tokens: int
    key: int | None


def _has_seq(msg: Mapping[str, Any]) -> bool:
    return isinstance(msg.get("seq"), int) and not isinstance(msg.get("seq"), bool)


def _items(messages: Sequence[Mapping[str, Any]], token_counts: Sequence[int] | None) -> list[_Item]:
    # Anchor keys are seq numbers only when every message has one: mixing seq and index would compare apples
    # with pears.
    use_seq = bool(messages) and all(_has_seq(m) for m in messages)
    items = []
    for msg, origin in repair_with_origins(messages):
        if origin is None:
            items.append(_Item(msg, estimate_message_tokens(msg), None))
            continue
        key = messages[origin]["seq"] if use_seq else origin
        tokens = token_counts[origin] if token_counts is not None else estimate_message_tokens(msg)
        items.append(_Item(msg, tokens, key))
    return items


def _is_system(item: _Item) -> bool:
    return item.msg.get("role") in SYSTEM_ROLES


def _uncovered(conversation: list[_Item], anchors: Sequence[SummaryAnchor]) -> list[_Item]:
    """Conversation after the newest anchor; starts at a holder, never at a tool result (R-SUM-4, R-REP-2)."""
    if not anchors:
        return conversation
    through = max(a.covers_through_seq_or_index for a in anchors)
    start = len(conversation)
    for i, item in enumerate(conversation):
        if item.key is not None and item.key > through:
            start = i
            break
    if start < len(conversation) and conversation[start].msg.get("role") == "tool":
        holder = holder_index([it.msg for it in conversation], start)
        start = holder if holder is not None else start
    return conversation[start:]


def _base(items: list[_Item], settings: ViewSettings, transcript_messages: int) -> dict[str, Any]:
    """The view fields that do not depend on the path taken."""
    return {
        "before_tokens": sum(it.tokens for it in items),
        "threshold_tokens": settings.threshold_tokens,
        "context_window_tokens": settings.context_window_tokens,
        "keep_recent_tokens": settings.keep_recent_tokens,
        "transcript_messages": transcript_messages,
    }


def _view(
    mode: Mode,
    messages: list[Message],
    tokens: int,
    base: dict[str, Any],
    *,
    summary: str | None = None,
    compacted: int = 0,
    anchors: tuple[SummaryAnchor, ...] = (),
) -> RequestView:
    return RequestView(
        messages=messages,
        mode=mode,
        estimated_tokens=tokens,
        summary=summary,
        compacted_tool_outputs=compacted,
        anchors=anchors,
        **base,
    )


def _fallback(messages: Sequence[Mapping[str, Any]], base: dict[str, Any]) -> RequestView:
    view = fallback_view(messages)
    tokens = sum(estimate_message_tokens(m) for m in view)
    return _view("fallback", view, tokens, base, summary=FALLBACK_SUMMARY)


def _summarized(
    messages: Sequence[Mapping[str, Any]],
    systems: list[_Item],
    anchors: Sequence[SummaryAnchor],
    older: list[_Item],
    tail: list[_Item],
    summarizer: Callable[[list[Message]], str],
    base: dict[str, Any],
) -> RequestView:
    """System + fixed anchors + a new summary of ``older`` + tail verbatim (R-SUM-1, R-SUM-4, R-SUM-5)."""
    new_anchors = tuple(anchors)
    if older:
        try:
            text = summarizer([it.msg for it in older])
        except Exception:  # noqa: BLE001 - any compressor failure takes the fallback window (R-FALL-1)
            return _fallback(messages, base)
        through = max((it.key for it in older if it.key is not None), default=-1)
        new_anchors += (SummaryAnchor(text, through),)
    summary_msgs = [{"role": "system", "content": a.text} for a in new_anchors]
    view = [*(it.msg for it in systems), *summary_msgs, *(dict(it.msg) for it in tail)]
    tokens = sum(it.tokens for it in systems) + sum(it.tokens for it in tail)
    tokens += sum(estimate_message_tokens(m) for m in summary_msgs)
    freed = base["before_tokens"] - tokens
    if not new_anchors or tokens > base["threshold_tokens"] or freed < MIN_FREED_RATIO * base["before_tokens"]:
        return _fallback(messages, base)  # B-LOOP-1: never hand back a view that will compact again at once.
    return _view("summarized", view, tokens, base, summary=new_anchors[-1].text, anchors=new_anchors)


def build_request_view(
    messages: Sequence[Mapping[str, Any]],
    settings: ViewSettings,
    *,
    token_counts: Sequence[int] | None = None,
    anchors: Sequence[SummaryAnchor] = (),
    summarizer: Callable[[list[Message]], str] = summarize,
) -> RequestView:
    """The view to send for one model call (R-PIPE-1..3, R-MICRO-3, R-SUM-1, R-SUM-4, R-FALL-1, B-LOOP-1).

    ``token_counts`` (one per input message, precomputed by the store) avoid re-estimation. ``anchors`` are
    the previous view's anchors within the same turn; pass none at the start of a user turn.
    """
    items = _items(messages, token_counts)
    base = _base(items, settings, len(messages))
    before = base["before_tokens"]
    if before <= settings.threshold_tokens:  # R-PIPE-1: nothing changes.
        return _view("full", [it.msg for it in items], before, base)
    systems = [it for it in items if _is_system(it)]
    conversation = [it for it in items if not _is_system(it)]
    if len(anchors) >= MAX_TURN_SUMMARIES:
        anchors = ()  # a long turn's summaries are merged into one, recomputed from the transcript
    rest = _uncovered(conversation, anchors)
    if anchors and not rest:
        anchors, rest = (), conversation  # A stale anchor covering everything: recompute from the transcript.
    tail_start = safe_tail_start([it.msg for it in rest], settings.tail_budget_tokens, [it.tokens for it in rest])
    compacted, count = microcompact([it.msg for it in rest], tail_start)
    if not anchors:
        # Micro keeps every message in place, mid-conversation system messages included (R-MICRO-3).
        micro_view, micro_tokens = _in_place(items, compacted, rest)
        if count and micro_tokens <= settings.threshold_tokens:
            return _view("microcompacted", micro_view, micro_tokens, base, compacted=count)
    view = _summarized(messages, systems, anchors, rest[:tail_start], rest[tail_start:], summarizer, base)
    if anchors and view.mode == "fallback":
        # R-SUM-4 keeps a turn's summaries fixed while they fit; once the fixed summaries themselves no longer
        # fit (a long turn adds one per model call), merge: recompute one summary from the transcript rather
        # than drop to the fallback window and lose all older context.
        return build_request_view(messages, settings, token_counts=token_counts, summarizer=summarizer)
    return view


def _in_place(items: list[_Item], compacted: list[Message], rest: list[_Item]) -> tuple[list[Message], int]:
    """Full transcript order with the compacted conversation messages swapped in, and its token estimate."""
    replaced = {id(it): msg for it, msg in zip(rest, compacted)}
    view, tokens = [], 0
    for it in items:
        msg = replaced.get(id(it), it.msg)
        view.append(msg)
        tokens += it.tokens if msg.get("content") is it.msg.get("content") else estimate_message_tokens(msg)
    return view, tokens


def fallback_request_view(
    messages: Sequence[Mapping[str, Any]],
    settings: ViewSettings,
    token_counts: Sequence[int] | None = None,
) -> RequestView:
    """The fallback window as a view, for the single retry after a context-too-long answer (R-PTL-1)."""
    items = _items(messages, token_counts)
    return _fallback(messages, _base(items, settings, len(messages)))
