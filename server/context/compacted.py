"""The view a compaction gives over the fed transcript (B-CACHE-1, R-PIPE-1, R-FALL-1).

``CompactedTranscript`` lays out each kind of view over the state ``server.context.fed`` keeps: the whole
transcript, a microcompacted or summarized compaction from its first verbatim message on (found by its keys, so a
compaction made on an earlier request is repeated over today's transcript), and the fallback window. It is the
same code when a compaction is made and each time it is repeated, so a repeated view is the previous request plus
what was appended, byte for byte. Which compaction to make, and when, is decided in ``server.context.incremental``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .clip import clip_to_budget
from .fallback import FALLBACK_KEEP_MESSAGES, FALLBACK_KEEP_SYSTEM, FALLBACK_SUMMARY, _fallback_start
from .fed import FedTranscript, Message, PartialHistory, _Item
from .tokens import estimate_message_tokens
from .view import Compaction, RequestView, ViewSettings

__all__ = ["CompactedTranscript"]


class _Lazy(Sequence[Any]):
    """``items[offset:]`` seen as messages or token counts, without copying (for the reference's walkers)."""

    def __init__(self, items: list[_Item], offset: int, tokens: bool = False):
        self._items, self._offset, self._tokens = items, offset, tokens

    def __len__(self) -> int:
        return len(self._items) - self._offset

    def __getitem__(self, i: int) -> Any:  # type: ignore[override]
        if i < 0:
            raise IndexError(i)
        item = self._items[self._offset + i]
        return item.tokens if self._tokens else item.msg


def _copy(msg: Message) -> Message:
    """A fresh dict in the same key order: a caller editing a view cannot reach the state (``_handed``)."""
    out = dict(msg)
    if isinstance(out.get("content"), list):
        out["content"] = [dict(p) if isinstance(p, Mapping) else p for p in out["content"]]
    if out.get("tool_calls"):
        out["tool_calls"] = [
            dict(c, function=dict(c["function"])) if isinstance(c.get("function"), Mapping) else dict(c)
            for c in out["tool_calls"]
        ]
    return out


class CompactedTranscript(FedTranscript):
    """The fed transcript and the view each kind of compaction gives over it; ``IncrementalView`` decides."""

    def _copies(self) -> Callable[[Message], Message]:
        """What a view hands out for a state's message: the copy the previous view handed out for it while it is
        still equal to it (a caller may have edited that one), else a fresh one. Consecutive views share most of
        their messages (B-CACHE-1), so a call copies only what is new to its view; comparing is a few times
        cheaper than copying. Only the copies of the newest view are held."""
        last = self._handed
        kept: dict[int, tuple[Message, Message]] = {}
        self._handed = kept

        def copy(msg: Message) -> Message:
            key = id(msg)
            held = last.get(key)
            if held is None or held[0] is not msg or held[1] != msg:
                held = (msg, _copy(msg))
            kept[key] = held
            return held[1]

        return copy

    def _base(self, settings: ViewSettings) -> dict[str, Any]:
        return {
            "before_tokens": self.tokens,
            "threshold_tokens": settings.threshold_tokens,
            "context_window_tokens": settings.context_window_tokens,
            "keep_recent_tokens": settings.keep_recent_tokens,
            "transcript_messages": self.fed,
        }

    def held_before(self, compaction: Compaction) -> int:
        """How many conversation messages this state holds before ``compaction``'s tail (0 when it does not
        hold the tail): what a state resumed from that tail would not hold."""
        try:
            return self._locate(compaction) or 0
        except PartialHistory:
            return 0

    def _locate(self, compaction: Compaction) -> int | None:
        """Index in _conv of the compaction's first verbatim message; None when this transcript does not hold it
        (then the compaction is stale and a new one is made)."""
        if compaction.through_key > self.last_key or not self._conv:
            return None
        if self._head is not None and compaction.tail_key <= self._head.max_key:
            self._needs_older("the compaction's tail comes before what this state holds")
        if self.all_seq and not self.monotone:
            return next(
                (
                    i
                    for i, it in enumerate(self._conv)
                    if it.msg.get("role") != "tool" and self._key(it) == compaction.tail_key
                ),
                None,
            )
        keys = self._max_seq if self.all_seq else self._max_idx
        i = bisect_left(keys, compaction.tail_key, 1) - 1  # the first i whose _conv[:i+1] reaches the key
        if (
            i < len(self._conv)
            and self._conv[i].msg.get("role") != "tool"
            and self._key(self._conv[i]) == compaction.tail_key
        ):
            return i
        return None

    def _compacted(self, compaction: Compaction, start: int, base: dict[str, Any], *, sticky: bool) -> RequestView:
        """The view a compaction gives over today's transcript; ``start`` is its first verbatim message.

        Microcompacted: every message in order, outputs before ``start`` as placeholders. Summarized: the system
        messages the compaction saw, the summary, then from ``start`` on every message in order (later system
        messages in place). Built the same way when the compaction is made and each time it is repeated, so
        a repeated view is the previous request plus what was appended (B-CACHE-1).
        """
        if compaction.mode == "microcompacted":
            tokens = base["before_tokens"] - self._savings[start]
            return RequestView(
                messages=self._in_order(start),
                mode="microcompacted",
                estimated_tokens=tokens,
                summary=None,
                compacted_tool_outputs=self._replaceable[start],
                compaction=compaction,
                sticky=sticky,
                **base,
            )
        through = compaction.through_key
        text = compaction.summary or ""
        clipped, saved = self._clipped(compaction, start)
        copy = self._copies()
        view = [copy(it.msg) for it in self._systems if self._real_key(it) <= through]
        view.append({"role": "system", "content": text})
        for entry in self._order[self._conv_pos[start] :]:
            if entry >= 0:
                view.append(copy(clipped.get(entry) or self._conv[entry].msg))
            else:
                item = self._systems[-1 - entry]
                if self._real_key(item) > through:
                    view.append(copy(item.msg))
        tokens = self._system_tokens + self._summary_message_tokens(text)
        tokens += self._conv_tokens[-1] - self._conv_tokens[start] - saved
        return RequestView(
            messages=view,
            mode="summarized",
            estimated_tokens=tokens,
            summary=text,
            compacted_tool_outputs=0,
            compaction=compaction,
            sticky=sticky,
            clipped_messages=len(clipped),
            **base,
        )

    def _clipped(self, compaction: Compaction, start: int) -> tuple[dict[int, Message], int]:
        """A clipping compaction's shortened messages by index in _conv, and the tokens that saves.

        The messages cut are its verbatim ones it saw (from ``start`` up to the first conversation message newer
        than ``through_key``), cut to ``clip_tokens`` together: the same every time it is repeated (B-CACHE-1)."""
        if compaction.clip_tokens is None:
            return {}, 0
        keys = self._max_seq if self.all_seq else self._max_idx
        items = self._conv[start : max(start, bisect_right(keys, compaction.through_key) - 1)]
        cached = self._clip_cache
        if not (
            cached is not None
            and cached[0] == compaction
            and len(cached[1]) == len(items)
            and all(a is b for a, b in zip(cached[1], items, strict=True))
        ):
            cut, _ = clip_to_budget([it.msg for it in items], compaction.clip_tokens)
            shortened = [m if m != it.msg else None for it, m in zip(items, cut, strict=True)]
            saved = sum(it.tokens - estimate_message_tokens(m) for it, m in zip(items, shortened) if m is not None)
            cached = (compaction, items, shortened, saved)
            self._clip_cache = cached
        return {start + i: m for i, m in enumerate(cached[2]) if m is not None}, cached[3]

    def _summary_message_tokens(self, text: str) -> int:
        tokens = self._summary_tokens.get(text)
        if tokens is None:
            tokens = estimate_message_tokens({"role": "system", "content": text})
            self._summary_tokens[text] = tokens
            if len(self._summary_tokens) > 8:
                self._summary_tokens.pop(next(iter(self._summary_tokens)))
        return tokens

    def _in_order(self, micro_until: int | None) -> list[Message]:
        """Every repaired message in transcript order; outputs before ``micro_until`` as placeholders."""
        self._needs_older("the view holds every message")
        copy = self._copies()
        out = []
        for entry in self._order:
            is_system, i = entry < 0, (-1 - entry if entry < 0 else entry)
            item = self._systems[i] if is_system else self._conv[i]
            if not is_system and micro_until is not None and i < micro_until and item.placeholder is not None:
                out.append(dict(item.msg, content=item.placeholder))  # the reference's microcompacted copy
            else:
                out.append(copy(item.msg))
        return out

    def _fallback(self, base: dict[str, Any]) -> RequestView:
        """R-FALL-1 from the repaired state: first system messages + fixed summary + the last messages."""
        if len(self._conv) < FALLBACK_KEEP_MESSAGES:
            self._needs_older("the fallback window reaches back past what this state holds")
        start = _fallback_start(_Lazy(self._conv, 0)) if self._conv else 0
        copy = self._copies()
        view = [
            *(copy(it.msg) for it in self._systems[:FALLBACK_KEEP_SYSTEM]),
            {"role": "system", "content": FALLBACK_SUMMARY},
            *(copy(it.msg) for it in self._conv[start:]),
        ]
        tokens = sum(estimate_message_tokens(m) for m in view)
        return RequestView(
            messages=view,
            mode="fallback",
            estimated_tokens=tokens,
            summary=FALLBACK_SUMMARY,
            compacted_tool_outputs=0,
            **base,
        )

    def fallback_view(self, settings: ViewSettings) -> RequestView:
        """The fallback window (the single retry after a context-too-long answer, R-PTL-1)."""
        return self._fallback(self._base(settings))
