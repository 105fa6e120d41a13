"""Request views for a session: the pure pipeline (``server.context``) fed from the store.

Holds what carries across model calls: the summary anchors of the running turn (R-SUM-4), the per-model
calibration learned from the provider's reported prompt tokens (B-TOK-3), and the last compaction announced, so
each new compaction is announced once (R-OBS-1).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from server.context import (
    Calibration,
    RequestView,
    ViewSettings,
    build_request_view,
    calibrate,
    fallback_request_view,
)
from server.transcript import Store

log = logging.getLogger(__name__)


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
        """The window left for messages: minus the tool definitions, and scaled by the calibration
        (estimate*f > T  <=>  estimate > T/f), so the pipeline itself stays a pure function of estimates."""
        factor = max(self.calibration.factor if self.calibration else 1.0, 1.0)
        window = self.settings.context_window_tokens - self.overhead_tokens
        if factor == 1.0 and self.overhead_tokens == 0:
            return self.settings
        return ViewSettings(max(int(window / factor), 1), self.settings.threshold_ratio,
                            self.settings.keep_recent_tokens)

    async def _load(self, session_id: str) -> tuple[list[dict], list[int | None]]:
        stored = await self.store.all_messages(session_id)
        return [m.to_openai() for m in stored], [m.tokens for m in stored]

    async def next_view(self, session_id: str) -> RequestView:
        messages, tokens = await self._load(session_id)
        settings = self.effective_settings()
        try:
            view = build_request_view(messages, settings, token_counts=_counts(tokens), anchors=self.anchors)
        except Exception:  # R-FALL-1: a failing compressor never stops the turn
            log.exception("building the request view failed; using the fallback window")
            view = fallback_request_view(messages, settings)
        self.anchors = tuple(view.anchors)
        return view

    async def fallback_view(self, session_id: str) -> RequestView:
        messages, tokens = await self._load(session_id)
        return fallback_request_view(messages, self.effective_settings(), token_counts=_counts(tokens))

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


def _counts(tokens: list[int | None]) -> list[int] | None:
    return None if any(t is None for t in tokens) else tokens  # old rows (pre-v2) are estimated on the fly
