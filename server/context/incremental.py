"""The request-view pipeline (B-INC-1, B-CACHE-1..4): O(new messages + view) per build.

The one production path. A full rebuild would re-read and re-scan the whole transcript on every call (the tests
keep one, ``tests/context/reference.py``, as the oracle this must equal). Here the per-session state is fed only
the messages appended since the last call (``server.context.fed``: the repaired messages, their token prefix
sums, what a resumed state starts from) and keeps what a rebuild recomputes besides: the summary's extraction
state (goals, paths, failures, last assistant state) folded up to a few positions, so a new summary feeds only
the messages between the nearest earlier fold and the new tail.

A view is built in one of three ways. Under the threshold: the whole transcript (R-PIPE-1). Given the compaction
the previous request was built on, and repeating it stays under the threshold: that request plus what was
appended since, byte for byte (B-CACHE-1). Otherwise a new compaction over the whole transcript (B-CACHE-2):
all old successful outputs before the safe tail become placeholders if that fits and frees enough; else one
summary of everything before a tail shrunk until the view is at or under the compaction target (a last exchange
too large for any summary view to fit the threshold is cut to what the target leaves, ``clip``); else the
fallback window, which is never sticky (B-CACHE-4). This module decides which; how each kind of view is laid out
over the state is ``server.context.compacted``. The property test ``tests/context/test_incremental.py``
checks byte-for-byte equality with the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .compacted import CompactedTranscript, _Lazy
from .fed import Message, PartialHistory
from .summary import render_summary, summarize, with_focus, with_hook_notes
from .tail import safe_tail_start
from .view import MICRO_MIN_FREED_RATIO, MIN_FREED_RATIO, Compaction, RequestView, ViewSettings

__all__ = ["IncrementalView", "PartialHistory"]


Summarizer = Callable[[list[Message]], str]


class IncrementalView(CompactedTranscript):
    """The view-building state of one transcript. ``feed`` new messages, then ``view`` as often as needed."""

    def view(
        self,
        settings: ViewSettings,
        compaction: Compaction | None = None,
        summarizer: Summarizer = summarize,
        notes: str | None = None,
        on_compacting: Callable[[int], None] | None = None,
    ) -> RequestView:
        """The request view over every message fed (see the module doc). ``compaction`` is the one the previous
        request was built on; the view says in ``compaction``/``sticky`` whether it repeats it or makes a new one.
        ``notes`` (what ``PreCompact`` hooks asked to keep) go into a new summary's ``Hook notes:`` section.
        ``on_compacting(before_tokens)`` is told when a new compaction starts, before its microcompaction or
        summary is made (R-OBS-1: the ``contextCompacting`` update); the pipeline itself does no I/O."""
        base = self._base(settings)
        before = base["before_tokens"]
        replaced = before  # the request a new compaction replaces: the repeated one, when there is one
        if compaction is not None:
            start = self._locate(compaction)
            if start is not None:
                view = self._compacted(compaction, start, base, sticky=True)
                if view.estimated_tokens <= settings.threshold_tokens:  # B-CACHE-1
                    return view
                replaced = view.estimated_tokens
        # B-CACHE-2 hysteresis: checked after the stored compaction, so one once made is not undone where the whole
        # transcript would fit again (a small request lowering the learned calibration raises the threshold)
        if before <= settings.threshold_tokens and not (compaction and compaction.requested):  # R-PIPE-1
            self._needs_older("the whole transcript is the view")
            return RequestView(
                messages=self._in_order(None),
                mode="full",
                estimated_tokens=before,
                summary=None,
                compacted_tool_outputs=0,
                **base,
            )
        if on_compacting is not None:
            on_compacting(before)  # the estimate the compaction's contextCompacted reports as beforeTokens
        return self._compact(settings, summarizer, base, replaced, notes)

    def _compact(
        self,
        settings: ViewSettings,
        summarizer: Summarizer,
        base: dict[str, Any],
        replaced: int,
        notes: str | None = None,
    ) -> RequestView:
        """A new compaction over the whole transcript (R-MICRO-3, R-SUM-1, B-CACHE-2, B-LOOP-1, R-FALL-1).

        Microcompaction is the view when it fits and is at least MICRO_MIN_FREED_RATIO smaller than ``replaced``,
        the request it replaces (the repeated compaction, else the whole transcript); else the summary path."""
        before = base["before_tokens"]
        tail = self._tail_start(settings.tail_budget_tokens)
        micro_tokens = before - self._savings[tail]
        if (
            self._replaceable[tail]
            and micro_tokens <= settings.threshold_tokens
            and replaced - micro_tokens >= MICRO_MIN_FREED_RATIO * replaced
        ):
            self._needs_older("a microcompacted view holds the whole transcript")
            micro = Compaction("microcompacted", self._real_key(self._conv[tail]), self.last_key)
            return self._compacted(micro, tail, base, sticky=False)
        made = self._summary_compaction(settings, summarizer, notes=notes)
        if made is None:
            return self._fallback(base)
        summary, start = made
        view = self._compacted(summary, start, base, sticky=False)
        if (
            view.estimated_tokens > settings.threshold_tokens
            or before - view.estimated_tokens < MIN_FREED_RATIO * before
        ):
            return self._fallback(base)  # B-LOOP-1: never hand back a view that will compact again at once.
        return view

    def _summary_compaction(
        self,
        settings: ViewSettings,
        summarizer: Summarizer,
        focus: str | None = None,
        budget: int | None = None,
        notes: str | None = None,
    ) -> tuple[Compaction, int] | None:
        """One summary of everything before a tail shrunk until system + summary + tail is at or under the target
        (B-CACHE-2), never below R-TAIL-2/3, with its tail start; None when there is nothing before the tail or the
        summarizer failed."""
        budget = settings.tail_budget_tokens if budget is None else budget
        target = settings.target_tokens
        while True:
            tail = self._tail_start(budget)
            text = None
            if tail > 0 or self._head is not None:  # a resumed state's head holds what precedes its first message
                try:
                    text = with_hook_notes(
                        with_focus(self._summary_text(tail, settings, summarizer), focus),
                        notes,
                        settings.section_budget_tokens,
                    )
                except Exception:  # noqa: BLE001 - any compressor failure takes the fallback window (R-FALL-1)
                    return None
            tail_tokens = self._conv_tokens[-1] - self._conv_tokens[tail]
            tokens = self._system_tokens + tail_tokens + (self._summary_message_tokens(text) if text else 0)
            if tokens <= target or budget <= 0:
                break
            # Shrink the tail by at least what the view is over the target.
            budget = max(0, min(budget, tail_tokens) - (tokens - target) - 1)
        if not text:
            return None
        clip = None
        if tokens > settings.threshold_tokens and tokens - tail_tokens < target:
            # The last exchange alone keeps every summary view over the threshold: cut it to what the target
            # leaves (clip.clip_to_budget), the same way at every repeat, rather than take the fallback window.
            clip = target - (tokens - tail_tokens)
        fold = self._folds.get(tail) if summarizer is summarize else None
        head = self._head_at(tail, fold) if fold is not None and self.all_seq else None
        made = Compaction(
            "summarized", self._real_key(self._conv[tail]), self.last_key, text, clip_tokens=clip, head=head
        )
        return made, tail

    def compact_now(
        self,
        settings: ViewSettings,
        focus: str | None = None,
        summarizer: Summarizer = summarize,
        notes: str | None = None,
    ) -> RequestView | None:
        """A summary compaction made on request (``compactSession``), whatever the request's size: the next
        request starts from it. ``focus`` is kept verbatim in the summary's ``Focus:`` section. When the whole
        conversation fits the recent tail, only the last exchange is kept verbatim. None when there is nothing
        before the last exchange to summarize (or the summarizer failed)."""
        made = self._summary_compaction(settings, summarizer, focus, notes=notes)
        if made is None and self._tail_start(settings.tail_budget_tokens) == 0:
            # All of it fits the recent tail: on request, keep only the last exchange (R-TAIL-2/3) verbatim.
            made = self._summary_compaction(settings, summarizer, focus, budget=0, notes=notes)
        if made is None:
            return None
        compaction, tail = made
        return self._compacted(replace(compaction, requested=True), tail, self._base(settings), sticky=False)

    def _tail_start(self, budget: int) -> int:
        start = safe_tail_start(_Lazy(self._conv, 0), budget, _Lazy(self._conv, 0, tokens=True))
        if start == 0 and self._head is not None and not self._tail_stops_at_first(budget):
            self._needs_older("the recent tail reaches back past what this state holds")
        return start

    def _tail_stops_at_first(self, budget: int) -> bool:
        """Whether a safe tail that starts at the first message held would start there in the full transcript too.

        It would when the walk back stopped inside what is held (the start was then moved back to a call's holder),
        or when it took every message held and the one before them (``last_tokens`` of the head) does not fit."""
        held = self._conv_tokens[-1] - self._conv_tokens[0]
        if held > budget and len(self._conv) > 1:
            return True  # the walk stopped at a message held
        last = self._head.last_tokens if self._head is not None else None
        return last is not None and held + last > budget

    def _summary_text(self, end: int, settings: ViewSettings, summarizer: Summarizer) -> str:
        """The summary of _conv[:end]; the default summarizer's fold resumes from the nearest earlier fold."""
        if summarizer is not summarize:
            self._needs_older("a custom summarizer reads every older message")
            return summarizer([it.msg for it in self._conv[:end]])
        # B-SUM-9: the latest plan, even one set in the verbatim tail (folding to the end costs only the tail)
        # B-SUM-11: likewise the processes still running as the whole transcript tells it
        whole = self._fold_to(len(self._conv))
        return render_summary(self._fold_to(end), settings.section_budget_tokens, whole.plan, whole.processes)


def build_request_view(
    messages: Sequence[Mapping[str, Any]],
    settings: ViewSettings,
    *,
    token_counts: Sequence[int] | None = None,
    compaction: Compaction | None = None,
    summarizer: Summarizer = summarize,
) -> RequestView:
    """The view to send for one model call over ``messages`` (the whole transcript so far).

    ``compaction`` is the one the previous request was built on (B-CACHE-1): while repeating it stays under the
    threshold, the view is that request plus what was appended. Feeds a fresh incremental state: callers that
    build views repeatedly keep an ``IncrementalView`` instead (B-INC-1).
    """
    state = IncrementalView()
    state.feed(messages, token_counts)
    return state.view(settings, compaction, summarizer)
