"""Request views for a session: the pure pipeline (``server.context``) fed from the store.

Holds what carries across model calls: the summary anchors of the running turn (R-SUM-4), the per-model
calibration learned from the provider's reported prompt tokens (B-TOK-3), and the last compaction announced, so
each new compaction is announced once (R-OBS-1).

B-INC-1: each session's incremental view state (``server.context.incremental``) is kept per store and fed only
the messages stored since it last looked, so a view costs O(new messages + view), not O(transcript).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from server.context import (
    Calibration,
    RequestView,
    ViewSettings,
    calibrate,
    fallback_request_view,
    fit_to_window,
)
from server.context.incremental import IncrementalView
from server.transcript import Store

log = logging.getLogger(__name__)

FEED_PAGE = 1000
KEPT_SESSIONS = 16  # incremental states kept per store (least recently used first out)
_STATES: WeakKeyDictionary[Store, OrderedDict[str, IncrementalView]] = WeakKeyDictionary()


async def session_view_state(store: Store, session_id: str) -> IncrementalView:
    """The session's incremental view state, fed with every message stored since it last looked (B-INC-1)."""
    states = _STATES.setdefault(store, OrderedDict())
    state = states.get(session_id)
    if state is None:
        state = states[session_id] = IncrementalView()
    states.move_to_end(session_id)
    while len(states) > KEPT_SESSIONS:
        states.popitem(last=False)
    while True:  # page by page: a long history's first load never holds all its rows at once
        page = await store.read_messages(session_id, after_seq=state.last_seq, limit=FEED_PAGE)
        new = [m for m in page.items if m.seq > state.last_seq]  # a concurrent reader may have fed some already
        if new:
            state.feed([m.to_openai() for m in new], [m.tokens for m in new])
        if page.next_seq is None:
            return state


def forget_view_state(store: Store, session_id: str) -> None:
    _STATES.get(store, {}).pop(session_id, None)


@dataclass
class ViewBuilder:
    store: Store
    settings: ViewSettings
    model: str = ""
    calibrations: dict[str, Calibration] = field(default_factory=dict)  # per model, owned by the runtime
    overhead_tokens: int = 0  # sent with every request but not part of the view: the tool definitions
    anchors: tuple = ()
    _last_announced: tuple | None = None

    @property
    def calibration(self) -> Calibration | None:
        return self.calibrations.get(self.model)

    def effective_settings(self) -> ViewSettings:
        return effective_settings(self.settings, self.overhead_tokens, self.calibration)

    async def _load(self, session_id: str) -> tuple[list[dict], list[int | None]]:
        stored = await self.store.all_messages(session_id)
        return [m.to_openai() for m in stored], [m.tokens for m in stored]

    async def next_view(self, session_id: str) -> RequestView:
        settings = self.effective_settings()
        try:
            state = await session_view_state(self.store, session_id)
            view = state.view(settings, self.anchors)
        except Exception:  # R-FALL-1: a failing compressor never stops the turn
            log.exception("building the request view failed; using the fallback window")
            forget_view_state(self.store, session_id)
            messages, tokens = await self._load(session_id)
            view = fallback_request_view(messages, settings, token_counts=_counts(tokens))
        self.anchors = tuple(view.anchors)
        return fit_to_window(view)

    async def fallback_view(self, session_id: str) -> RequestView:
        state = await session_view_state(self.store, session_id)
        return fit_to_window(state.fallback_view(self.effective_settings()))

    def compaction_event(self, view: RequestView, force: bool = False) -> dict | None:
        if view.mode == "full":
            return None
        key = (view.mode, view.event_summary, view.compacted_tool_outputs)
        if key == self._last_announced and not force:
            return None
        self._last_announced = key
        return {"mode": view.mode, "beforeTokens": view.before_tokens, "afterTokens": view.estimated_tokens,
                "summary": view.event_summary or ""}

    def observe_usage(self, estimated: int, reported: int) -> None:
        """B-TOK-3: learn this model's ratio of reported to estimated prompt tokens."""
        self.calibrations[self.model] = calibrate(self.calibration, estimated + self.overhead_tokens, reported)


def effective_settings(settings: ViewSettings, overhead_tokens: int,
                       calibration: Calibration | None) -> ViewSettings:
    """The window left for messages: minus what every request carries besides them (the tool definitions),
    and scaled by the model's calibration (estimate*f > T  <=>  estimate > T/f), so the pipeline itself stays a
    pure function of estimates. The agent loop and ``getContextView`` both build views with this."""
    factor = max(calibration.factor if calibration else 1.0, 1.0)
    if factor == 1.0 and overhead_tokens == 0:
        return settings
    window = settings.context_window_tokens - overhead_tokens
    return ViewSettings(max(int(window / factor), 1), settings.threshold_ratio, settings.keep_recent_tokens)


def _counts(tokens: list[int | None]) -> list[int] | None:
    return None if any(t is None for t in tokens) else tokens  # old rows (pre-v2) are estimated on the fly
