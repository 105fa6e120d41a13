"""Incremental request views (B-INC-1): O(new messages + view) per build, identical to ``build_request_view``.

``build_request_view`` (the reference) re-reads and re-scans the whole transcript on every call. Here the
per-session state is fed only the messages appended since the last call and keeps what the reference recomputes:

- the repaired messages so far. Repair is local: a non-tool message and the tool run after it form a segment
  that nothing later changes once the next non-tool message arrives, so only the last (open) segment is
  repaired again on a feed;
- each message's token estimate (the store's, written with the message), and running prefix sums of tokens,
  of microcompaction savings and of replaceable outputs, so the "fits after microcompaction?" test is O(1);
- the summary's extraction state (goals, paths, failures, last assistant state) folded up to a checkpoint, so
  a new summary feeds only the messages between the old checkpoint and the new tail.

The tail is found by walking back from the end (``safe_tail_start`` over a lazy view of the list). The property
test ``tests/context/test_incremental.py`` checks byte-for-byte equality with the reference.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .fallback import FALLBACK_KEEP_SYSTEM, FALLBACK_SUMMARY, _fallback_start
from .micro import _replaceable
from .repair import SYSTEM_ROLES, repair_with_origins
from .summary import SummaryState, render_summary, summarize, summary_feed
from .tail import holder_index, safe_tail_start
from .tokens import estimate_message_tokens
from .view import MAX_TURN_SUMMARIES, MIN_FREED_RATIO, RequestView, SummaryAnchor, ViewSettings

__all__ = ["IncrementalView"]

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Item:
    msg: Message
    tokens: int
    origin: int | None  # index of the input message it came from; None for a synthetic result
    seq: int | None
    placeholder: str | None = None  # the microcompaction text, when this is a replaceable tool output
    saving: int = 0  # tokens the placeholder saves


class _Lazy(Sequence):
    """``items[offset:]`` seen as messages or token counts, without copying (for the reference's walkers)."""

    def __init__(self, items: list[_Item], offset: int, tokens: bool = False):
        self._items, self._offset, self._tokens = items, offset, tokens

    def __len__(self) -> int:
        return len(self._items) - self._offset

    def __getitem__(self, i: int):  # type: ignore[override]
        if i < 0:
            raise IndexError(i)
        item = self._items[self._offset + i]
        return item.tokens if self._tokens else item.msg


def _has_seq(msg: Mapping[str, Any]) -> bool:
    return isinstance(msg.get("seq"), int) and not isinstance(msg.get("seq"), bool)


def _copy(msg: Message) -> Message:
    """A fresh dict in the same key order: a caller editing a view cannot reach the state."""
    out = dict(msg)
    if isinstance(out.get("content"), list):
        out["content"] = [dict(p) if isinstance(p, Mapping) else p for p in out["content"]]
    if out.get("tool_calls"):
        out["tool_calls"] = [dict(c, function=dict(c["function"])) if isinstance(c.get("function"), Mapping)
                             else dict(c) for c in out["tool_calls"]]
    return out


class IncrementalView:
    """The view-building state of one transcript. ``feed`` new messages, then ``view`` as often as needed."""

    def __init__(self) -> None:
        self.fed = 0  # input messages fed so far
        self.all_seq = True  # every message fed carries a seq (then anchor keys are seqs, else indices)
        self.last_seq = 0
        self.monotone = True  # seqs strictly increase (as the store's do): the last key of a range is its max
        self._systems: list[_Item] = []
        self._system_tokens = 0
        self._conv: list[_Item] = []  # conversation items, the open segment's at the end
        # Per-message numbers in machine-int arrays: a 100k-message history costs 8 bytes a number, not 36.
        self._conv_tokens = array("q", [0])  # prefix sums over _conv
        self._savings = array("q", [0])  # prefix sums of microcompaction savings over _conv
        self._replaceable = array("q", [0])  # prefix counts of replaceable outputs over _conv
        self._max_seq = array("q", [-1])  # running max anchor key (seq) over _conv; index i+1 covers _conv[:i+1]
        self._max_idx = array("q", [-1])  # the same for input indices
        self._order = array("q")  # transcript order: i >= 0 is _conv[i], -1 - i is _systems[i]
        self._open: list[tuple[Message, int]] = []  # raw open segment: (message, input index)
        self._open_from = 0  # where the open segment's items start in _conv
        self._open_order = 0  # where they start in _order
        self._checkpoints: dict[tuple[int, int], tuple[int, SummaryState]] = {}

    # --- feeding ---------------------------------------------------------------------------------------

    def feed(self, messages: Sequence[Mapping[str, Any]], token_counts: Sequence[int | None] | None = None) -> None:
        """Append transcript messages (with the store's token estimates when known)."""
        for k, msg in enumerate(messages):
            index = self.fed
            self.fed += 1
            if _has_seq(msg):
                self.monotone = self.monotone and msg["seq"] > self.last_seq
                self.last_seq = max(self.last_seq, msg["seq"])
            else:
                self.all_seq = False
            tokens = token_counts[k] if token_counts is not None else None
            raw = (dict(msg, _tokens=tokens) if tokens is not None else msg, index)
            if msg.get("role") == "tool":
                if self._open:
                    self._open.append(raw)  # a result joins the open segment (an orphan is dropped by repair)
                continue
            self._rebuild_open()  # the segment this message closes may have gained results in this batch
            self._close_open()
            self._open = [raw]
        self._rebuild_open()

    def _close_open(self) -> None:
        self._open_from = len(self._conv)
        self._open_order = len(self._order)
        self._open = []

    def _rebuild_open(self) -> None:
        """Drop the open segment's items and repair it again (the only part a later message can change)."""
        del self._conv[self._open_from:]
        for prefix in (self._conv_tokens, self._savings, self._replaceable, self._max_seq, self._max_idx):
            del prefix[self._open_from + 1:]
        for entry in self._order[self._open_order:]:
            if entry < 0:
                item = self._systems.pop()
                self._system_tokens -= item.tokens
        del self._order[self._open_order:]
        self._checkpoints = {k: v for k, v in self._checkpoints.items() if v[0] <= self._open_from}
        if not self._open:
            return
        msgs = [m for m, _ in self._open]
        for cleaned, origin in repair_with_origins(msgs):
            if origin is None:
                self._append(cleaned, estimate_message_tokens(cleaned), None, None)
                continue
            raw, index = self._open[origin]
            tokens = raw.get("_tokens")
            if tokens is None:
                tokens = estimate_message_tokens(cleaned)
            self._append(cleaned, tokens, index, raw["seq"] if _has_seq(raw) else None)

    def _append(self, msg: Message, tokens: int, origin: int | None, seq: int | None) -> None:
        if msg.get("role") in SYSTEM_ROLES:
            self._order.append(-1 - len(self._systems))
            self._systems.append(_Item(msg, tokens, origin, seq))
            self._system_tokens += tokens
            return
        placeholder = _replaceable(msg)
        saving = None
        if placeholder is not None:
            saving = tokens - estimate_message_tokens(dict(msg, content=placeholder))
        self._order.append(len(self._conv))
        self._conv.append(_Item(msg, tokens, origin, seq, placeholder, saving or 0))
        self._conv_tokens.append(self._conv_tokens[-1] + tokens)
        self._savings.append(self._savings[-1] + (saving or 0))
        self._replaceable.append(self._replaceable[-1] + (placeholder is not None))
        self._max_seq.append(max(self._max_seq[-1], seq if seq is not None and origin is not None else -1))
        self._max_idx.append(max(self._max_idx[-1], origin if origin is not None else -1))

    # --- building --------------------------------------------------------------------------------------

    def _key(self, item: _Item) -> int | None:
        if item.origin is None:
            return None
        return item.seq if self.all_seq else item.origin

    def _max_key(self, start: int, end: int) -> int:
        """The largest anchor key among _conv[start:end], else -1.

        Repair puts results in call order, so keys within one segment (a message and its results) may be out
        of order; across segments they increase (input order). So walking back to the last segment's leading
        message is enough, unless seqs themselves do not increase.
        """
        if self.all_seq and not self.monotone:
            return max((k for it in self._conv[start:end] if (k := self._key(it)) is not None), default=-1)
        best = -1
        for i in range(end - 1, start - 1, -1):
            item = self._conv[i]
            key = self._key(item)
            if key is not None:
                best = max(best, key)
            if item.msg.get("role") != "tool" and best >= 0:
                break
        return best

    def _uncovered_start(self, anchors: Sequence[SummaryAnchor]) -> int:
        """Index in ``_conv`` where the conversation after the newest anchor starts (the reference's
        ``_uncovered``), found by bisection over the running maximum of the keys."""
        if not anchors:
            return 0
        through = max(a.covers_through_seq_or_index for a in anchors)
        keys = self._max_seq if self.all_seq else self._max_idx
        start = bisect_right(keys, through, 1) - 1  # first i whose items [0..i] reach a key above `through`
        if start < len(self._conv) and self._conv[start].msg.get("role") == "tool":
            holder = holder_index(_Lazy(self._conv, 0), start)
            start = holder if holder is not None else start
        return start

    def view(self, settings: ViewSettings, anchors: Sequence[SummaryAnchor] = (),
             summarizer: Callable[[list[Message]], str] = summarize) -> RequestView:
        """The same ``RequestView`` as ``build_request_view(all messages fed, settings, anchors=...)``."""
        before = self._system_tokens + self._conv_tokens[-1]
        base = {"before_tokens": before, "threshold_tokens": settings.threshold_tokens,
                "context_window_tokens": settings.context_window_tokens,
                "keep_recent_tokens": settings.keep_recent_tokens, "transcript_messages": self.fed}
        if before <= settings.threshold_tokens:  # R-PIPE-1
            return RequestView(messages=self._in_order(None), mode="full", estimated_tokens=before, summary=None,
                               compacted_tool_outputs=0, **base)
        if len(anchors) >= MAX_TURN_SUMMARIES:
            anchors = ()  # merge a long turn's summaries, as the reference does
        rest = self._uncovered_start(anchors)
        if anchors and rest >= len(self._conv):
            anchors, rest = (), 0  # a stale anchor covering everything: recompute, as the reference does
        tail = rest + safe_tail_start(_Lazy(self._conv, rest), settings.tail_budget_tokens,
                                      _Lazy(self._conv, rest, tokens=True))
        if not anchors:
            count = self._replaceable[tail] - self._replaceable[rest]
            micro_tokens = before - (self._savings[tail] - self._savings[rest])
            if count and micro_tokens <= settings.threshold_tokens:
                return RequestView(messages=self._in_order(tail), mode="microcompacted",
                                   estimated_tokens=micro_tokens, summary=None, compacted_tool_outputs=count,
                                   **base)
        view = self._summarized(anchors, rest, tail, settings, summarizer, base)
        if anchors and view.mode == "fallback":
            return self.view(settings, (), summarizer)  # merge the turn's summaries, as the reference does
        return view

    def _in_order(self, micro_until: int | None) -> list[Message]:
        """Every repaired message in transcript order; outputs before ``micro_until`` as placeholders."""
        out = []
        for entry in self._order:
            is_system, i = entry < 0, (-1 - entry if entry < 0 else entry)
            item = self._systems[i] if is_system else self._conv[i]
            if not is_system and micro_until is not None and i < micro_until and item.placeholder is not None:
                out.append(dict(item.msg, content=item.placeholder))  # the reference's microcompacted copy
            else:
                out.append(_copy(item.msg))
        return out

    def _summary_text(self, rest: int, tail: int, budget: int) -> str:
        """render_summary of the fold over _conv[rest:tail], resumed from a checkpoint when one fits."""
        upto, state = self._checkpoints.get((rest, budget), (rest, SummaryState()))
        if upto > tail:
            upto, state = rest, SummaryState()
        for item in self._conv[upto:tail]:
            state = summary_feed(state, item.msg)
        self._checkpoints[(rest, budget)] = (tail, state)
        if len(self._checkpoints) > 8:
            self._checkpoints.pop(next(iter(self._checkpoints)))
        return render_summary(state)

    def _summarized(self, anchors, rest: int, tail: int, settings: ViewSettings, summarizer, base) -> RequestView:
        new_anchors = tuple(anchors)
        if tail > rest:
            try:
                if summarizer is summarize:
                    text = self._summary_text(rest, tail, settings.tail_budget_tokens)
                else:
                    text = summarizer([it.msg for it in self._conv[rest:tail]])
            except Exception:  # noqa: BLE001 - R-FALL-1, as in the reference
                return self._fallback(base)
            through = self._max_key(rest, tail)
            new_anchors += (SummaryAnchor(text, through),)
        summary_msgs = [{"role": "system", "content": a.text} for a in new_anchors]
        view = [*(_copy(it.msg) for it in self._systems), *summary_msgs,
                *(_copy(it.msg) for it in self._conv[tail:])]
        tokens = self._system_tokens + self._conv_tokens[-1] - self._conv_tokens[tail]
        tokens += sum(estimate_message_tokens(m) for m in summary_msgs)
        before = base["before_tokens"]
        if not new_anchors or tokens > base["threshold_tokens"] or before - tokens < MIN_FREED_RATIO * before:
            return self._fallback(base)  # B-LOOP-1
        return RequestView(messages=view, mode="summarized", estimated_tokens=tokens, summary=new_anchors[-1].text,
                           compacted_tool_outputs=0, anchors=new_anchors, **base)

    def _fallback(self, base) -> RequestView:
        """R-FALL-1 from the repaired state: first system messages + fixed summary + the last messages."""
        start = _fallback_start(_Lazy(self._conv, 0)) if self._conv else 0
        view = [*(_copy(it.msg) for it in self._systems[:FALLBACK_KEEP_SYSTEM]),
                {"role": "system", "content": FALLBACK_SUMMARY}, *(_copy(it.msg) for it in self._conv[start:])]
        tokens = sum(estimate_message_tokens(m) for m in view)
        return RequestView(messages=view, mode="fallback", estimated_tokens=tokens, summary=FALLBACK_SUMMARY,
                           compacted_tool_outputs=0, **base)

    def fallback_view(self, settings: ViewSettings) -> RequestView:
        """The same view as ``fallback_request_view`` (the single retry after a context-too-long answer)."""
        before = self._system_tokens + self._conv_tokens[-1]
        return self._fallback({"before_tokens": before, "threshold_tokens": settings.threshold_tokens,
                               "context_window_tokens": settings.context_window_tokens,
                               "keep_recent_tokens": settings.keep_recent_tokens, "transcript_messages": self.fed})
