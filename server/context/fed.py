"""The repaired transcript an incremental view state is fed (B-INC-1), and where a resumed one starts (B-CACHE-3).

``FedTranscript`` keeps, for every message fed so far:

- the repaired messages. Repair is local: a non-tool message and the tool run after it form a segment that
  nothing later changes once the next non-tool message arrives, so only the last (open) segment is repaired
  again on a feed;
- each message's token estimate (the store's, written with the message), and running prefix sums of tokens,
  of microcompaction savings and of replaceable outputs, so the "fits after microcompaction?" test is O(1);
- the transcript order of system and conversation messages, and the running max key, to locate a compaction;
- the summary fold at a few positions, so a new summary or snapshot folds only what follows the nearest one.

A view snapshot (``snapshot``, and ``next_snapshots`` for the ones the store keeps) is where a later state can start
without the older messages: a segment start and the compaction head of everything before it.

A state ``resume``d from a summarized compaction's head holds only what follows the compaction's tail; what the
head summarizes seeds the prefix sums, and anything that needs the older messages raises ``PartialHistory``.
The view decisions over this state live in ``server.context.incremental``.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from .failures import clears_editor_failures
from .micro import _replaceable, content_text
from .repair import SYSTEM_ROLES, repair_with_origins
from .summary_state import SummaryState, summary_feed, summary_skip
from .tokens import estimate_message_tokens
from .view import CompactionHead

__all__ = ["FedTranscript", "PartialHistory", "next_snapshots"]


class PartialHistory(Exception):
    """A state resumed from a compaction's tail (``IncrementalView.resume``) was asked for a view that needs the
    older conversation it does not hold; build a full state instead."""


Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Item:
    msg: Message
    tokens: int
    origin: int | None  # index of the input message it came from; None for a synthetic result
    seq: int | None
    placeholder: str | None = None  # the microcompaction text, when this is a replaceable tool output
    saving: int = 0  # tokens the placeholder saves
    status: str | None = None  # a tool result's stored status (repair keeps only the sent keys)
    clears: bool = False  # a replaceable write result that clears its file's editor failures (B-SUM-10)


def _has_seq(msg: Mapping[str, Any]) -> bool:
    return isinstance(msg.get("seq"), int) and not isinstance(msg.get("seq"), bool)


class FedTranscript:
    """The repaired transcript fed so far (see the module doc); ``IncrementalView`` builds views over it."""

    def __init__(self) -> None:
        self.fed = 0  # input messages fed so far
        self.all_seq = True  # every message fed carries a seq (then compaction keys are seqs, else indices)
        self.last_seq = 0
        self.monotone = True  # seqs strictly increase (as the store's do): the last key of a range is its max
        self._systems: list[_Item] = []
        self._system_tokens = 0
        self._conv: list[_Item] = []  # conversation items, the open segment's at the end
        # Per-message numbers in machine-int arrays: a 100k-message history costs 8 bytes a number, not 36.
        self._conv_tokens = array("q", [0])  # prefix sums over _conv
        self._savings = array("q", [0])  # prefix sums of microcompaction savings over _conv
        self._replaceable = array("q", [0])  # prefix counts of replaceable outputs over _conv
        self._max_seq = array("q", [-1])  # running max key (seq) over _conv; index i+1 covers _conv[:i+1]
        self._max_idx = array("q", [-1])  # the same for input indices
        self._order = array("q")  # transcript order: i >= 0 is _conv[i], -1 - i is _systems[i]
        self._conv_pos = array("q")  # where _conv[i] sits in _order
        self._open: list[tuple[Mapping[str, Any], int]] = []  # raw open segment: (message, input index)
        self._open_from = 0  # where the open segment's items start in _conv
        self._open_order = 0  # where they start in _order
        self._open_changed = False  # the open segment gained messages since it was last repaired
        self._folds: dict[int, SummaryState] = {}  # n -> the summary fold over _conv[:n] (dropped past a rebuild)
        self._summary_tokens: dict[str, int] = {}  # estimate of a summary message, by text (last few)
        self._clip_cache: tuple[Any, list[_Item], list[Message | None], int] | None = None  # compacted._clipped
        self._handed: dict[int, tuple[Message, Message]] = {}  # the last view's copies (compacted._copies)
        self._head: CompactionHead | None = None  # set when resumed from a compaction's tail: older items absent
        self._base_fold = SummaryState()  # the fold over what precedes _conv[0]

    @classmethod
    def resume(cls, head: CompactionHead, older_messages: int) -> Self:
        """A state that holds only what follows a summarized compaction's tail: feed it the transcript's system
        messages before the tail, then ``skip_to`` the tail's seq and feed from there. ``older_messages`` is how
        many stored messages precede the tail besides those system messages. Views it can build are the ones a
        full state builds (the property the cold-start test checks); for anything that needs the older
        conversation it raises ``PartialHistory``."""
        state = cls()
        state._head, state._base_fold = head, head.fold
        state.fed = older_messages
        for prefix, value in (
            (state._conv_tokens, head.tokens),
            (state._savings, head.savings),
            (state._replaceable, head.replaceable),
            (state._max_seq, head.max_key),
        ):
            prefix[0] = value
        return state

    def skip_to(self, seq: int) -> None:
        """Continue after ``seq`` (a resumed state's older non-system messages are summarized by its head)."""
        self.last_seq = max(self.last_seq, seq)

    def _needs_older(self, why: str) -> None:
        if self._head is not None:
            raise PartialHistory(why)

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
                self._needs_older("a message without a seq")
            tokens = token_counts[k] if token_counts is not None else None
            raw = (dict(msg, _tokens=tokens) if tokens is not None else msg, index)
            if msg.get("role") == "tool":
                if self._open:
                    self._open.append(raw)  # a result joins the open segment (an orphan is dropped by repair)
                    self._open_changed = True
                continue
            if self._open_changed:  # the segment this message closes gained results in this batch
                self._rebuild_open()
            self._close_open()
            self._open = [raw]
            self._open_changed = True
        if self._open_changed:  # repaired once as it stands; unchanged, it is not repaired again
            self._rebuild_open()

    def _close_open(self) -> None:
        self._open_from = len(self._conv)
        self._open_order = len(self._order)
        self._open = []

    def _rebuild_open(self) -> None:
        """Drop the open segment's items and repair it again (the only part a later message can change)."""
        self._open_changed = False
        del self._conv[self._open_from :]
        for prefix in (self._conv_tokens, self._savings, self._replaceable, self._max_seq, self._max_idx):
            del prefix[self._open_from + 1 :]
        for entry in self._order[self._open_order :]:
            if entry < 0:
                item = self._systems.pop()
                self._system_tokens -= item.tokens
        del self._order[self._open_order :]
        del self._conv_pos[self._open_from :]
        self._folds = {n: state for n, state in self._folds.items() if n <= self._open_from}
        if not self._open:
            return
        msgs = [m for m, _ in self._open]
        names: dict[str, str] = {}  # call id -> tool name, for the results that follow (B-SUM-10)
        for cleaned, origin in repair_with_origins(msgs):
            if cleaned.get("tool_calls"):
                names = {c["id"]: str(c.get("function", {}).get("name", "")) for c in cleaned["tool_calls"]}
            tool = names.get(str(cleaned.get("tool_call_id"))) if cleaned.get("role") == "tool" else None
            if origin is None:
                self._append(cleaned, estimate_message_tokens(cleaned), None, None, tool)
                continue
            raw, index = self._open[origin]
            tokens = raw.get("_tokens")
            if tokens is None:
                tokens = estimate_message_tokens(cleaned)
            status = raw.get("tool_status") if cleaned.get("role") == "tool" else None
            self._append(cleaned, tokens, index, raw["seq"] if _has_seq(raw) else None, tool, status)

    def _append(
        self,
        msg: Message,
        tokens: int,
        origin: int | None,
        seq: int | None,
        tool: str | None = None,
        status: str | None = None,
    ) -> None:
        if msg.get("role") in SYSTEM_ROLES:
            self._order.append(-1 - len(self._systems))
            self._systems.append(_Item(msg, tokens, origin, seq))
            self._system_tokens += tokens
            return
        placeholder = _replaceable(msg, tool, status)
        saving = None
        if placeholder is not None:
            saving = tokens - estimate_message_tokens(dict(msg, content=placeholder))
        self._order.append(len(self._conv))
        self._conv_pos.append(len(self._order) - 1)
        # Not a failure, yet the fold must see it: it ends the file's editor-diagnostics failures
        clears = placeholder is not None and clears_editor_failures(content_text(msg.get("content")))
        self._conv.append(_Item(msg, tokens, origin, seq, placeholder, saving or 0, status, clears))
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

    @property
    def held(self) -> int:
        """How many conversation messages this state holds (a resumed state: only those from its tail on)."""
        return len(self._conv)

    @property
    def tokens(self) -> int:
        """The estimate of every message fed, as repaired (a view's ``before_tokens``)."""
        return self._system_tokens + self._conv_tokens[-1]

    def _real_key(self, item: _Item) -> int:
        """The key of an item that came from the input: a system message or a tail's first message, which repair
        never synthesises."""
        key = self._key(item)
        assert key is not None, "a synthetic item where only input messages can be"
        return key

    @property
    def last_key(self) -> int:
        """The key of the newest message fed (what a compaction made now has seen)."""
        return self.last_seq if self.all_seq else self.fed - 1

    # --- heads and snapshots ---------------------------------------------------------------------------

    def _fold_to(self, end: int) -> SummaryState:
        """The summary fold over _conv[:end], resumed from the nearest earlier fold kept."""
        start = max((n for n in self._folds if n <= end), default=0)
        state = self._folds.get(start, self._base_fold)
        for item in self._conv[start:end]:
            fold = item.placeholder is None or item.clears
            state = summary_feed(state, item.msg, item.status) if fold else summary_skip(state, item.msg)
        self._folds[end] = state
        if len(self._folds) > 8:
            self._folds.pop(next(iter(self._folds)))
        return state

    def _head_at(self, n: int, fold: SummaryState) -> CompactionHead:
        """What a state resumed at ``_conv[n]`` needs of everything before it (``fold``: the fold over it)."""
        return CompactionHead(
            self._conv_tokens[n],
            self._savings[n],
            self._replaceable[n],
            self._max_seq[n],
            fold,
            self._conv[n - 1].tokens if n > 0 else self._head.last_tokens if self._head else None,
        )

    def snapshot(self) -> tuple[int, CompactionHead] | None:
        """A point a later state can resume from without reading anything older (B-CACHE-3, cold start): the seq
        of the last non-tool message fed, which opens the segment repair may still change, and the head of the
        closed conversation before it. None when there is no such point (nothing closed before it, the open
        segment starts with a system message, or keys are not increasing seqs)."""
        n = self._open_from
        if not (self.all_seq and self.monotone) or n >= len(self._conv) or (n == 0 and self._head is None):
            return None
        item = self._conv[n]
        if item.origin is None or item.seq is None or item.msg.get("role") == "tool":
            return None
        return item.seq, self._head_at(n, self._fold_to(n))


def next_snapshots(
    head: Any, messages: Sequence[Mapping[str, Any]], token_counts: Sequence[int | None] | None, every: int
) -> list[tuple[int, dict[str, Any]]]:
    """The next view snapshots of a stored transcript (B-CACHE-3, cold start), for the store to keep as it appends.

    ``head`` is the previous point's head as stored (JSON; None: there is none, and ``messages`` is the whole
    transcript); ``messages`` every stored message from that point's seq on, with their estimates. Returns
    ``(seq, head JSON)`` points in order (``FedTranscript.snapshot``), one after each ``every`` messages fed
    and one at the end, each at least ``every / 2`` after the last: a long append gets points spread over it, not
    only one at its end (which no view could resume from). Empty when there is none or ``head`` is not a valid one."""
    if head is None:
        state = FedTranscript()
    else:
        parsed = CompactionHead.from_json(head)
        if parsed is None or not messages or not isinstance(messages[0].get("seq"), int):
            return []
        state = FedTranscript.resume(parsed, 0)
        state.skip_to(messages[0]["seq"] - 1)
    points: list[tuple[int, dict[str, Any]]] = []
    last = messages[0]["seq"] if head is not None else 0
    for start in range(0, len(messages), max(1, every)):
        chunk = slice(start, start + max(1, every))
        try:
            state.feed(messages[chunk], token_counts[chunk] if token_counts is not None else None)
        except PartialHistory:  # a message without a seq: not a stored transcript
            return points
        made = state.snapshot()
        if made is not None and made[0] - last >= max(1, every // 2):
            points.append((made[0], made[1].to_json()))
            last = made[0]
    return points
