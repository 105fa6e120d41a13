"""Request views for a turn: the pure pipeline (``server.context``) fed from the store, through the session's state.

``ViewBuilder`` holds what carries across a turn's model calls: the compaction the session's requests are built on
(B-CACHE-1), loaded from the store at the start of a turn and stored with the ``contextCompacted`` event that
announces it, so user turns and restarts repeat it (B-CACHE-3); the per-model calibration learned from the
provider's reported prompt tokens (B-TOK-3); and the last fallback announced, so it is announced once (R-OBS-1).
The state it builds on, and how it is resumed and trimmed, is ``server.agent.view_resume``; the last request sent
is ``server.agent.digests``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.agent.digests import SentRequest, keep_sent, record_sent
from server.agent.view_resume import ViewState, build_view, forget_view_state, save_unsaved
from server.context import (
    Calibration,
    Compaction,
    RequestView,
    ViewSettings,
    apply_calibration,
    calibrate,
    calibrate_refused,
    estimate_message_tokens,
    estimate_text_tokens,
    fallback_request_view,
    fit_to_window,
)
from server.context.budget_view import budgeted
from server.context.fed import next_snapshots
from server.context.incremental import IncrementalView
from server.tools import tool_specs
from server.transcript import Store

log = logging.getLogger(__name__)

COMPACTION_EVENT = "contextCompacted"


async def open_store(path: Path) -> Store:
    """The transcript store as the server opens it: each appended message gets its token estimate, and the store
    keeps view snapshots as it appends (``next_snapshots``), so a long history written through it, by the
    server or any other writer, opens without being read whole (cold start, B-CACHE-3)."""
    return await Store.open(path, estimate=estimate_message_tokens, view_snapshotter=next_snapshots)


async def stored_compaction(store: Store, session_id: str) -> Compaction | None:
    """The compaction the session's requests are built on: the newest one stored (B-CACHE-3)."""
    event = await store.latest_event(session_id, COMPACTION_EVENT, "compaction")
    return Compaction.from_json(event.payload.get("compaction")) if event else None


CLEARED_EVENT = "contextCleared"


async def stored_cleared(store: Store, session_id: str) -> dict[str, str]:
    """Every tool output the budget cleared in the session's requests (key -> why): once cleared, an output stays
    cleared across turns and restarts (B-BUDGET-1, B-CACHE-3)."""
    cleared: dict[str, str] = {}
    for event in await store.list_events(session_id, CLEARED_EVENT):
        got = event.payload.get("cleared")
        if isinstance(got, dict):
            cleared.update({str(k): str(v) for k, v in got.items()})
    return cleared


def planned_view(
    held: IncrementalView,
    settings: ViewSettings,
    compaction: Compaction | None,
    cleared: dict[str, str],
    **options: Any,
) -> RequestView:
    """The one planner of a session's next request (the loop, ``getContextView``): the pipeline's view against the
    window (``IncrementalView.view``; ``options`` its notes and ``on_compacting``), then against the budget
    (B-BUDGET-1) with the outputs cleared before."""
    return budgeted(held.view(settings, compaction, **options), settings, cleared)


SERVER_WINDOW_EVENT = "serverContextWindow"


async def recall_server_window(store: Store, session_id: str, server_windows: dict[str, int]) -> None:
    """The window a model's server stated to this session before (``observe_server_window``), for a server that
    has not learned it since it started."""
    event = await store.latest_event(session_id, SERVER_WINDOW_EVENT, "contextWindowTokens")
    if event is not None and isinstance(event.payload.get("contextWindowTokens"), int):
        server_windows.setdefault(str(event.payload.get("model", "")), event.payload["contextWindowTokens"])


@dataclass
class ViewBuilder:
    store: Store
    settings: ViewSettings
    model: str = ""
    calibrations: dict[str, Calibration] = field(default_factory=dict)  # per model, owned by the runtime
    overhead_tokens: int = 0  # sent with every request but not part of the view: the tool definitions
    server_windows: dict[str, int] = field(default_factory=dict)  # per model, owned by the runtime
    compaction: Compaction | None = None  # what the session's requests are built on (B-CACHE-1)
    cleared: dict[str, str] = field(default_factory=dict)  # the outputs the budget cleared, sticky (B-BUDGET-1)
    # The session's view state and last request sent (its handle's ``view`` and ``sent``); None: the builder's own
    state: ViewState | None = None
    sent: SentRequest | None = None
    _loaded: bool = False
    _last_announced: tuple[Any, ...] | None = None
    _unsaved_samples: set[str] = field(default_factory=set)  # models whose sample count moved since the last write
    _unsaved_factors: set[str] = field(default_factory=set)  # models whose factor moved: stored with the answer

    @property
    def calibration(self) -> Calibration | None:
        return self.calibrations.get(self.model)

    @property
    def session_view(self) -> SessionView:
        return SessionView(self.settings, self.overhead_tokens, self.calibration, self.server_windows.get(self.model))

    def effective_settings(self) -> ViewSettings:
        return self.session_view.effective

    @property
    def window_tokens(self) -> int:
        """The window requests are planned for: the configured one, or the server's where it said it is smaller."""
        return min(self.settings.context_window_tokens, self.server_windows.get(self.model) or 1 << 62)

    async def observe_server_window(
        self, session_id: str, stated: int, refused: int | None, said: str = "as its answer says"
    ) -> str | None:
        """R-PTL-1: a context-too-long answer said the server's real window. When it is smaller than the
        configured one, plan this retry and every later request (every session on this model) for it, and keep it
        with the session (a ``serverContextWindow`` event) so a restarted server plans for it too; the notice to
        show, the first time only (``said``: where the size was read). A window no larger than the prompt it
        refused is not believed."""
        known = self.server_windows.get(self.model)
        if stated >= self.window_tokens or (refused is not None and refused <= stated):
            return None
        self.server_windows[self.model] = stated
        payload = {"model": self.model, "contextWindowTokens": stated}
        await self.store.add_event(session_id, SERVER_WINDOW_EVENT, payload)
        if known is not None:
            return None
        return (
            f"the configured context window ({self.settings.context_window_tokens:,} tokens) is larger than the "
            f"server's ({stated:,} tokens, {said}): requests are planned for {stated:,} from now on; "
            f"set context_window_tokens = {stated} for this model to make it so from the start"
        )

    async def _load(self, session_id: str) -> tuple[list[dict[str, Any]], list[int | None]]:
        stored = await self.store.all_messages(session_id)
        return [m.to_openai() for m in stored], [m.tokens for m in stored]

    def _state(self, session_id: str) -> ViewState:
        if self.state is None:
            self.state = ViewState(session_id)
        assert self.state.session_id == session_id
        return self.state

    def _sent(self, session_id: str) -> SentRequest:
        if self.sent is None:
            self.sent = SentRequest(session_id)
        assert self.sent.session_id == session_id
        return self.sent

    async def next_view(
        self,
        session_id: str,
        before_compaction: Callable[[], Awaitable[str | None]] | None = None,
        compacting: Callable[[int], None] | None = None,
    ) -> RequestView:
        """The next request's view. ``before_compaction`` runs when the view makes a new compaction, before it is
        used (the ``PreCompact`` hooks); the notes it returns go into a new summary (``Hook notes:``).
        ``compacting(before_tokens)`` is called once when a new compaction starts, before any of that work."""
        state = self._state(session_id)
        settings = self.effective_settings()
        if not self._loaded:  # once per turn: user turns and restarts repeat the stored compaction (B-CACHE-3)
            self.compaction = await stored_compaction(self.store, session_id)
            self.cleared = await stored_cleared(self.store, session_id)
            self._loaded = True
        told: list[int] = []  # a rebuild (the hook notes, a resumed state reading all) does not announce again

        def starting(before_tokens: int) -> None:
            if compacting is not None and not told:
                told.append(before_tokens)
                compacting(before_tokens)

        async def build(notes: str | None) -> RequestView:
            return await build_view(
                self.store,
                state,
                self.compaction,
                lambda held: planned_view(
                    held, settings, self.compaction, self.cleared, notes=notes, on_compacting=starting
                ),
                settings.context_window_tokens,
                appended=True,  # the loop builds each view right after storing what came before it
            )

        try:
            view = await build(None)
            if view.new_compaction is not None and before_compaction is not None:
                notes = await before_compaction()
                if notes and view.mode == "summarized":  # the same cut, its summary with the notes
                    view = await build(notes)
        except Exception:  # R-FALL-1: a failing compressor never stops the turn
            log.exception("building the request view failed; using the fallback window")
            forget_view_state(state)
            self._sent(session_id).let_go()
            messages, tokens = await self._load(session_id)
            view = fallback_request_view(messages, settings, token_counts=_counts(tokens))
        await save_unsaved(self.store, state)  # a turn writes anyway: what reads learned is kept now
        if view.new_compaction is not None:
            self.compaction = view.new_compaction  # stored by the event that announces it (``compaction_event``)
        if view.newly_cleared:  # kept now: the request that clears them is the first of many built on it
            await self.store.add_event(session_id, CLEARED_EVENT, {"cleared": dict(view.newly_cleared)})
            self.cleared.update(view.newly_cleared)
        return fit_to_window(view)

    async def fallback_view(self, session_id: str) -> RequestView:
        settings = self.effective_settings()
        return fit_to_window(
            await build_view(
                self.store,
                self._state(session_id),
                self.compaction,
                lambda state: state.fallback_view(settings),
                settings.context_window_tokens,
                appended=True,
            )
        )

    def record_sent(self, session_id: str, messages: Sequence[dict[str, Any]]) -> None:
        record_sent(self._sent(session_id), messages)

    async def keep_sent(self, session_id: str) -> None:
        """At a turn's end: its last request (as digests) and the calibration's sample count, if samples came in
        since the last write (``getContextView`` shows ``samples``: a restarted server shows the same figure)."""
        await keep_sent(self.store, self._sent(session_id))
        for model in sorted(self._unsaved_samples | self._unsaved_factors):
            if (learned := self.calibrations.get(model)) is not None:
                await self.store.save_calibration(model, learned.factor, learned.samples)
        self._unsaved_samples.clear()
        self._unsaved_factors.clear()

    def compaction_event(self, view: RequestView, force: bool = False) -> dict[str, Any] | None:
        """The ``contextCompacted`` payload for a view that compacts anew (R-OBS-1), else None. A new compaction
        carries its cut (``compaction``), which is how it is persisted (B-CACHE-3); a repeated one is not news."""
        if view.mode == "full" or (view.sticky and not force):
            return None
        key = (view.mode, view.event_summary, view.compacted_tool_outputs)
        if view.new_compaction is None and key == self._last_announced and not force:
            return None  # the same fallback again within the turn
        self._last_announced = key
        return self.session_view.compaction_event(view)

    async def observe_usage(self, estimated: int, reported: int) -> None:
        """B-TOK-3: learn this model's ratio of reported to estimated prompt tokens, and keep it (schema v8), so a
        restarted server plans with the same window (B-CACHE-3): a moved factor is stored with the call's answer
        (``unsaved_factors``), before the next request is planned, else at the turn's end (``keep_sent``)."""
        await self._learn(calibrate(self.calibration, estimated + self.overhead_tokens, reported), at_once=False)

    def unsaved_factors(self) -> list[tuple[str, float, int]]:
        """The ``(model, factor, samples)`` learned since the last write, for the store to keep in the answer's
        transaction (one round trip per model call); ``factors_saved`` once it has committed."""
        return [(m, c.factor, c.samples) for m in sorted(self._unsaved_factors) if (c := self.calibrations.get(m))]

    def factors_saved(self, saved: list[tuple[str, float, int]]) -> None:
        """What ``unsaved_factors`` gave is stored; a model that learned more since stays unsaved."""
        for model, factor, samples in saved:
            learned = self.calibrations.get(model)
            if learned is not None and (learned.factor, learned.samples) == (factor, samples):
                self._unsaved_factors.discard(model)
                self._unsaved_samples.discard(model)

    async def observe_refusal(self, estimated: int, reported: int) -> None:
        """R-PTL-1 with B-TOK-3: a context-too-long answer that says how many tokens the provider counted teaches
        the calibration too, at least that request's ratio, so the retry and later requests are planned with the
        provider's count (a provider that reports no usage would otherwise be refused at every call)."""
        learned = calibrate_refused(self.calibration, estimated + self.overhead_tokens, reported)
        log.info(
            "model %s counted %d tokens where we estimated %d: factor %.2f",
            self.model,
            reported,
            estimated + self.overhead_tokens,
            learned.factor,
        )
        await self._learn(learned)

    async def _learn(self, learned: Calibration, at_once: bool = True) -> None:
        before = self.calibration
        self.calibrations[self.model] = learned
        # Written only when the factor moves or on the first sample (at once, or with the answer): the common case
        # (our estimate over-counts, the factor stays at its floor of 1) costs no write; the count waits for turn end.
        if before is None or before.samples == 0 or learned.factor != before.factor:
            if not at_once:
                self._unsaved_factors.add(self.model)
                return
            await self.store.save_calibration(self.model, learned.factor, learned.samples)
            self._unsaved_factors.discard(self.model)
        else:
            self._unsaved_samples.add(self.model)


def reserve_tokens(sent_specs: Sequence[dict[str, Any]]) -> int:
    """What tool definitions add to every request (they are not part of the message view): the one formula the
    loop (over the definitions it sends), ``getContextView`` and ``compactSession`` reserve with."""
    return estimate_text_tokens(json.dumps(list(sent_specs)))


def tool_reserve_tokens(session_specs: Sequence[dict[str, Any]] = ()) -> int:
    """``reserve_tokens`` of the built-in tools' definitions, then a session's own (``task``, editor and MCP
    tools): what a session's turn sends when no named agent's allow-list narrows it."""
    return reserve_tokens(tool_specs() + list(session_specs))


@dataclass(frozen=True)
class SessionView:
    """What a session's next request is planned under: the configured settings, the tool definitions' reserve,
    the model's learned calibration (B-TOK-3) and the window its server stated. The agent loop,
    ``getContextView`` and ``compactSession`` all plan with ``effective`` and show figures through ``shown``, so
    the inspector's view is the next request's (R-PIPE-3) and its numbers are the provider's (B-TOK-4)."""

    settings: ViewSettings
    reserved_tokens: int = 0
    calibration: Calibration | None = None
    server_window: int | None = None

    @property
    def factor(self) -> float:
        return max(self.calibration.factor if self.calibration else 1.0, 1.0)

    @property
    def effective(self) -> ViewSettings:
        return effective_settings(self.settings, self.reserved_tokens, self.calibration, self.server_window)

    def shown(self, tokens: int) -> int:
        """An estimate in the provider's tokens (B-TOK-4): scaled as the decisions are, never below it."""
        return apply_calibration(tokens, self.calibration) if self.factor > 1.0 else tokens

    def compaction_event(self, view: RequestView, **extra: Any) -> dict[str, Any]:
        """The stored ``contextCompacted`` payload of a view that compacts (R-OBS-1, B-CACHE-3): its figures and,
        for a new compaction, its cut; ``extra`` adds a manual compaction's fields (``requested``, ``focus``)."""
        event: dict[str, Any] = {
            "mode": view.mode,
            "beforeTokens": view.before_tokens,
            "afterTokens": view.estimated_tokens,
            "summary": view.event_summary or "",
        }
        if view.new_compaction is not None:
            event["compaction"] = view.new_compaction.to_json()
        return event | extra


def effective_settings(
    settings: ViewSettings,
    overhead_tokens: int,
    calibration: Calibration | None,
    server_window: int | None = None,
) -> ViewSettings:
    """The window left for messages: the configured window (or the server's, where it said it is smaller), minus
    what every request carries besides them (the tool definitions), and scaled by the model's calibration
    (estimate*f > T  <=>  estimate > T/f), so the pipeline itself stays a pure function of estimates. Use it
    through ``SessionView``."""
    factor = max(calibration.factor if calibration else 1.0, 1.0)
    window = min(settings.context_window_tokens, server_window or settings.context_window_tokens)
    if factor == 1.0 and overhead_tokens == 0 and window == settings.context_window_tokens:
        return settings
    window -= overhead_tokens
    return dataclasses.replace(settings, context_window_tokens=max(int(window / factor), 1))


def _counts(tokens: list[int | None]) -> list[int] | None:
    counts = [t for t in tokens if t is not None]
    return counts if len(counts) == len(tokens) else None  # old rows (pre-v2) are estimated on the fly
