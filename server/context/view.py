"""The request view's types and the one production entry point (R-PIPE-1..3, R-SUM-1, R-FALL-1, B-LOOP-1,
B-CACHE-1..4).

repair -> estimate -> under threshold: send unchanged -> a stored compaction still under the threshold: send it
plus what was appended since (sticky, B-CACHE-1) -> safe tail -> microcompaction -> fits: send -> structured
summary of everything before a tail shrunk to the compaction target (B-CACHE-2; a last exchange no summary view
fits is cut to what the target leaves) -> summarizer raised, still over, or freed under 10%: fallback window
(never sticky).

The pipeline itself is ``incremental.IncrementalView`` (B-INC-1): the one production path. ``build_request_view``
feeds a whole transcript to a fresh state and asks it once; the full-rebuild oracle lives in the tests
(``tests/context/reference.py``). The transcript is read, never changed (R-SRC-2): every message in a view is a
fresh dict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard

from protocol.wire_text import MICROCOMPACTION_PREFIX

from .budget import Budget, BudgetReport, ClearedOutput
from .fallback import FALLBACK_SUMMARY, fallback_window
from .repair import repair_with_origins
from .summary_state import SummaryState
from .tokens import estimate_message_tokens

__all__ = [
    "MICRO_MIN_FREED_RATIO",
    "MIN_FREED_RATIO",
    "Compaction",
    "CompactionHead",
    "RequestView",
    "ViewSettings",
    "fallback_request_view",
]

Mode = Literal["full", "microcompacted", "summarized", "fallback"]
Message = dict[str, Any]
MIN_FREED_RATIO = 0.10  # B-LOOP-1: a compaction that frees less than this share of the request is not kept.
# B-CACHE-2: a microcompaction must leave room for many calls before the next one. One that is not at least this
# much smaller than the request it replaces (the repeated compaction, just over the threshold) would be redone a
# call or two later, its placeholders advancing almost per call; the summary path, which comes out at the
# compaction target, is taken instead.
MICRO_MIN_FREED_RATIO = 0.20
# One ratio for a first and a repeated microcompaction. A stricter one for repeats (0.5) summarised views
# that microcompaction had brought under the threshold while freeing 20-49 % of the repeated request, so a long
# tool-heavy turn ended on summaries: against R-MICRO-3 ("no summary is made") and B-CACHE-2 (microcompaction "stays
# as R-MICRO-3 has it"); tests/e2e/test_agent_meter.py's R-PIPE-2 and R-SRC-2 tests caught it. A cheaper rule for
# repeats needs the SPEC amended first.


@dataclass(frozen=True)
class ViewSettings:
    """Window, threshold ratio, tail budget and compaction target for one model (R-PIPE-3, R-TAIL-1, B-CACHE-2)."""

    context_window_tokens: int
    threshold_ratio: float = 0.8
    keep_recent_tokens: int = 8_000
    compact_target_ratio: float = 0.5
    budget: Budget | None = None  # B-BUDGET-1: None, no clearing on a budget (the pipeline's own tests)

    @property
    def planned_window_tokens(self) -> int:
        """The window the threshold and the compaction target are shares of: the window, but never more than the
        budget's planning window (B-BUDGET-1: a 1M window summarizes where a 128k one would; the window itself
        stays the hard limit)."""
        cap = self.budget.planning_window_tokens if self.budget is not None else None
        return min(self.context_window_tokens, cap) if cap else self.context_window_tokens

    @property
    def threshold_tokens(self) -> int:
        """floor(window * ratio) (R-PIPE-3), of the planned window (B-BUDGET-1)."""
        return math.floor(self.planned_window_tokens * self.threshold_ratio)

    @property
    def target_tokens(self) -> int:
        """What a summary-path view aims at (B-CACHE-2): floor(window * target ratio), never above the threshold."""
        return min(math.floor(self.planned_window_tokens * self.compact_target_ratio), self.threshold_tokens)

    @property
    def tail_budget_tokens(self) -> int:
        """``keep_recent_tokens``, capped at a quarter of the compaction target (R-TAIL-1, B-CACHE-2).

        Every request after a summarized compaction re-reads the view it made (from the provider's prompt cache,
        at about a tenth of the price) and appends to it, verbatim, until the threshold: the smaller that view,
        the cheaper each of those requests and the further off the next compaction (measured in bench/RESULTS.md
        section 6). What the model sees verbatim grows back from the tail with every call. A quarter of the
        target still leaves the last exchanges (never less than R-TAIL-2/3 keep), and with a small window the
        default 8,000-token tail alone would otherwise fill the target. At the default ratio the cap binds below
        a window of 64k tokens (a little more once the tool definitions are reserved); above, the tail is the
        configured 8,000.
        """
        return min(self.keep_recent_tokens, self.target_tokens // 4)

    @property
    def section_budget_tokens(self) -> int:
        """How many tokens the summary's Goals section may take, and its Failures section alike (B-SUM-7):
        max(600, 5% of the window)."""
        return max(600, self.context_window_tokens // 20)


@dataclass(frozen=True)
class CompactionHead:
    """What a summarized compaction knows about the conversation before its tail, so a restarted server can
    resume the session from the tail without reading (or holding) everything older (B-CACHE-3, cold start).

    ``tokens``/``savings``/``replaceable`` are the repaired conversation's token, microcompaction-saving and
    replaceable-output totals before the tail; ``max_key`` the largest key there; ``fold`` the summary fold over it;
    ``last_tokens`` the tokens of the last conversation message before the tail (None in heads stored before it was
    kept), so a resumed state can tell a safe tail that starts at its first message from one reaching further back.
    """

    tokens: int
    savings: int
    replaceable: int
    max_key: int
    fold: SummaryState
    last_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "tokens": self.tokens,
            "savings": self.savings,
            "replaceable": self.replaceable,
            "maxKey": self.max_key,
            "fold": self.fold.to_json(),
        }
        if self.last_tokens is not None:
            out["lastTokens"] = self.last_tokens
        return out

    @classmethod
    def from_json(cls, data: Any) -> CompactionHead | None:
        if not isinstance(data, Mapping):
            return None
        numbers = [v for k in ("tokens", "savings", "replaceable", "maxKey") if _is_int(v := data.get(k))]
        if len(numbers) != 4:
            return None
        fold = SummaryState.from_json(data.get("fold")) if isinstance(data.get("fold"), Mapping) else None
        tokens, savings, replaceable, max_key = numbers
        if fold is None:
            return None
        last = data.get("lastTokens")
        return cls(tokens, savings, replaceable, max_key, fold, last if _is_int(last) else None)


@dataclass(frozen=True)
class Compaction:
    """Where a compaction cut the transcript, so later requests can repeat it byte for byte (B-CACHE-1, B-CACHE-3).

    Keys are the ``seq`` of transcript messages (their input index when a message has no seq). ``tail_key`` is
    the first conversation message kept as it is: before it, old successful tool outputs are placeholders
    (``microcompacted``) or everything is replaced by ``summary`` (``summarized``). ``through_key`` is the last
    message the compaction saw: system messages up to it lead the summarized view, later ones stay in place.
    ``clip_tokens``, when set, is the budget the summarized view's verbatim messages up to ``through_key`` are cut
    to (``clip.clip_to_budget``): a last exchange too large for any summary view to fit the threshold is shortened
    in the view, the same way at every repeat, instead of taking the fallback window.
    """

    mode: Literal["microcompacted", "summarized"]
    tail_key: int
    through_key: int
    summary: str | None = None
    requested: bool = (
        False  # made on request (compactSession): repeated even while the transcript is under the threshold
    )
    clip_tokens: int | None = None
    # What a cold start needs to resume from the tail (not part of the cut: two equal cuts compare equal)
    head: CompactionHead | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode,
            "tailSeq": self.tail_key,
            "throughSeq": self.through_key,
            "summary": self.summary,
        }
        if self.requested:
            out["requested"] = True
        if self.clip_tokens is not None:
            out["clipTokens"] = self.clip_tokens
        if self.head is not None:
            out["head"] = self.head.to_json()
        return out

    @classmethod
    def from_json(cls, data: Any) -> Compaction | None:
        """The compaction a stored event describes, or None when it does not hold a valid one."""
        if not isinstance(data, Mapping) or data.get("mode") not in ("microcompacted", "summarized"):
            return None
        tail, through, summary = data.get("tailSeq"), data.get("throughSeq"), data.get("summary")
        if not (_is_int(tail) and _is_int(through)):
            return None
        if data["mode"] == "summarized" and not isinstance(summary, str):
            return None
        clip = data.get("clipTokens")
        if clip is not None and not (_is_int(clip) and clip > 0 and data["mode"] == "summarized"):
            return None
        return cls(
            data["mode"],
            tail,
            through,
            summary if data["mode"] == "summarized" else None,
            data.get("requested") is True,
            clip,
            CompactionHead.from_json(data.get("head")),
        )


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
    compaction: Compaction | None = None  # the cut this view repeats or makes (None: full or fallback)
    sticky: bool = False  # True when the view repeats a compaction it was given (nothing new to announce)
    clipped_messages: int = 0  # oversized messages shortened to fit the window (``clip.fit_to_window``)
    # B-BUDGET-1: the outputs this view shows cleared, those this request clears (key -> why), the budget's report
    cleared: tuple[ClearedOutput, ...] = ()
    newly_cleared: Mapping[str, str] = field(default_factory=dict)
    budget: BudgetReport | None = None

    @property
    def after_tokens(self) -> int:
        """``afterTokens`` of the ``context.compacted`` event (R-OBS-1): the estimate of this view."""
        return self.estimated_tokens

    @property
    def new_compaction(self) -> Compaction | None:
        """The compaction this view makes, to be stored and announced; None when it repeats one or has none."""
        return None if self.sticky else self.compaction

    @property
    def event_summary(self) -> str | None:
        """Summary text of the ``context.compacted`` event (R-MICRO-3, R-OBS-1); None when nothing changed."""
        if self.mode == "full":
            return None
        if self.mode == "microcompacted":
            n = self.compacted_tool_outputs
            if n == 1:
                return f"{MICROCOMPACTION_PREFIX} 1 old tool output replaced with a placeholder"
            return f"{MICROCOMPACTION_PREFIX} {n} old tool outputs replaced with placeholders"
        return self.summary


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def fallback_request_view(
    messages: Sequence[Mapping[str, Any]],
    settings: ViewSettings,
    token_counts: Sequence[int] | None = None,
) -> RequestView:
    """The fallback window as a view, straight from the messages (R-FALL-1): the loop's last resort when
    building a view failed, so it shares no state with the incremental path."""
    view = fallback_window(messages)
    before = sum(
        token_counts[origin] if origin is not None and token_counts is not None else estimate_message_tokens(msg)
        for msg, origin in repair_with_origins(messages)
    )
    return RequestView(
        messages=view,
        mode="fallback",
        estimated_tokens=sum(estimate_message_tokens(m) for m in view),
        before_tokens=before,
        threshold_tokens=settings.threshold_tokens,
        context_window_tokens=settings.context_window_tokens,
        keep_recent_tokens=settings.keep_recent_tokens,
        summary=FALLBACK_SUMMARY,
        compacted_tool_outputs=0,
        transcript_messages=len(messages),
    )
