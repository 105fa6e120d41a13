"""Request views for a session: the pure pipeline (``server.context``) fed from the store.

Holds what carries across model calls: the compaction the session's requests are built on (B-CACHE-1), loaded
from the store at the start of a turn and stored with the ``contextCompacted`` event that announces it, so user
turns and restarts repeat it (B-CACHE-3); the per-model calibration learned from the provider's reported prompt
tokens (B-TOK-3); and the last fallback announced, so it is announced once (R-OBS-1).

B-INC-1: each session's incremental view state (``server.context.incremental``) is kept in its
``server.sessions.SessionState`` and fed only the messages stored since it last looked, so a view costs
O(new messages + view), not O(transcript). Cold start (B-CACHE-3): a state is resumed from the tail of the
stored summarized compaction (or, for a history no turn compacted, from the resume point a view on it saved),
and a long-lived state is trimmed to that tail, so what is held is bounded by what follows it. The last request
sent is kept for ``stablePrefixTokens`` (in memory as sent; in the store as digests, at the end of each turn).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from server.context import (
    Calibration,
    Compaction,
    RequestView,
    ViewSettings,
    calibrate,
    calibrate_refused,
    estimate_message_tokens,
    fallback_request_view,
    fit_to_window,
)
from server.context.fed import next_checkpoints
from server.context.incremental import IncrementalView, PartialHistory
from server.context.view import CompactionHead
from server.sessions import Sessions
from server.transcript import Store
from server.transcript.view_state import CHECKPOINT_EVERY, DIGEST_SIZE

log = logging.getLogger(__name__)
T = TypeVar("T")

FEED_PAGE = 1000
RESUME_EVERY = 1000  # messages a view's tail moves on before its resume point is saved again
TRIM_MIN = 1000  # conversation messages held before a compaction's tail past which a state is trimmed to it
COMPACTION_EVENT = "contextCompacted"


async def open_store(path: Path) -> Store:
    """The transcript store as the server opens it: each appended message gets its token estimate, and the store
    keeps view checkpoints as it appends (``next_checkpoints``), so a long history written through it, by the
    server or any other writer, opens without being read whole (cold start, B-CACHE-3)."""
    return await Store.open(path, estimate=estimate_message_tokens, checkpoint=next_checkpoints)


async def session_view_state(
    store: Store,
    sessions: Sessions,
    session_id: str,
    compaction: Compaction | None = None,
    *,
    resume: bool = True,
    window_tokens: int | None = None,
) -> IncrementalView:
    """The session's incremental view state, fed with every message stored since it last looked (B-INC-1).

    A first look with a summarized ``compaction`` that carries its head resumes from the compaction's tail: only
    the system messages before it and the messages since are read and held (cold start, B-CACHE-3). Without one
    it resumes from a resume point a view saved or a view checkpoint the store kept, the newest with at least
    ``window_tokens`` after it (``_resumed_state``). A state that
    holds ``TRIM_MIN`` or more conversation messages before that tail is replaced by such a resumed one, so a long
    session's memory is bounded by what follows its compaction, not by its history (``resume=False``: neither)."""
    held = sessions.get(session_id)
    state = held.view
    if state is None and resume:
        state = await _resumed_state(store, session_id, compaction, window_tokens)
        if state is not None and compaction is None:
            held.resume_seq = state.last_seq + 1  # the saved resume point's tail
    elif state is not None and resume and compaction is not None and compaction.head is not None:
        # Not again for a compaction whose trimmed state needed the older history (a fallback window reaching
        # back past its tail, say): that would read the whole history at every call.
        if compaction.tail_key != held.full_for and state.held_before(compaction) >= TRIM_MIN:
            state = await _resume_at(store, session_id, compaction.tail_key, compaction.head, "trimmed to")
    whole = state is None  # nothing to resume from: every message is read
    state = held.view = state or IncrementalView()
    while True:  # page by page: a long history's first load never holds all its rows at once
        page = await store.read_messages(session_id, after_seq=state.last_seq, limit=FEED_PAGE)
        new = [m for m in page.items if m.seq > state.last_seq]  # a concurrent reader may have fed some already
        if new:
            state.feed([m.to_openai() for m in new], [m.tokens for m in new])
        if page.next_seq is None:
            if whole and state.fed >= CHECKPOINT_EVERY:
                await _keep_checkpoint(store, session_id, state)
            return state


async def _keep_checkpoint(store: Store, session_id: str, state: IncrementalView) -> None:
    """A long history read whole (stored before view checkpoints, or without them) gets one from the state that
    read it, so the store's later ones follow from it and no server reads it whole again."""
    made = state.checkpoint()
    if made is not None and made[0] > (await store.newest_view_checkpoint_seq(session_id) or 0):
        await store.save_view_checkpoint(session_id, made[0], made[1].to_json())


async def _resumed_state(
    store: Store, session_id: str, compaction: Compaction | None, window_tokens: int | None
) -> IncrementalView | None:
    """A state resumed from the stored summarized compaction's tail; when the session has no stored compaction
    with a head, from the newest of the resume point a view on its full history saved (``keep_resume_point``)
    and the view checkpoints the store kept as it appended (``transcript.view_state``) with at least
    ``window_tokens`` (the window planned with) stored after it, and before the compaction's tail when there is
    one: every view but a whole-history one (full, microcompacted, or a window that holds the session) is then
    built from what follows it. Failing that, from the saved resume point whatever follows it (the tail of a
    view on it: a view with the same settings is built from there). None when there is neither (then the whole
    history is read); a resumed state that cannot build the view reads everything (``PartialHistory``)."""
    if compaction is not None and compaction.head is not None:
        return await _resume_at(
            store, session_id, compaction.tail_key, compaction.head, "resumed from the compaction at"
        )
    saved = None if compaction is not None else await store.view_resume(session_id)
    head = CompactionHead.from_json(saved[1]) if saved else None
    if window_tokens is not None:
        points = await store.view_checkpoints(session_id)
        if saved is not None and head is not None:
            points.append((saved[0], await store.tokens_from(session_id, saved[0]), saved[1]))
        for seq, tokens, data in sorted(points, key=lambda p: -p[0]):
            if tokens < window_tokens or (compaction is not None and seq > compaction.tail_key):
                continue
            point = CompactionHead.from_json(data)
            if point is not None:
                how = "the saved resume point" if saved is not None and seq == saved[0] else "the view checkpoint"
                return await _resume_at(store, session_id, seq, point, f"resumed from {how} at")
    if saved is None or head is None:
        return None
    return await _resume_at(store, session_id, saved[0], head, "resumed from the saved resume point at")


async def _resume_at(store: Store, session_id: str, tail_key: int, head: CompactionHead, how: str) -> IncrementalView:
    """A state holding the system messages before ``tail_key`` and nothing else older (feed it from the tail)."""
    older, systems = await store.messages_before(session_id, tail_key)
    state = IncrementalView.resume(head, older - len(systems))
    state.feed([m.to_openai() for m in systems], [m.tokens for m in systems])
    state.skip_to(tail_key - 1)
    log.info("session %s: %s seq %d; %d older messages not held", session_id, how, tail_key, older - len(systems))
    return state


async def build_view(
    store: Store,
    sessions: Sessions,
    session_id: str,
    compaction: Compaction | None,
    build: Callable[[IncrementalView], T],
    window_tokens: int | None = None,
) -> T:
    """``build(state)`` on the session's state; when a state resumed from a compaction's tail turns out to need
    the older history, it is replaced by a full one, once. ``window_tokens``: the window the view is planned with
    (what a view checkpoint to resume from must leave after it)."""
    state = await session_view_state(store, sessions, session_id, compaction, window_tokens=window_tokens)
    try:
        return build(state)
    except PartialHistory as exc:
        log.info(
            "session %s: the view needs the history before the compaction (%s); reading all of it", session_id, exc
        )
        held = sessions.get(session_id)
        held.view, held.full_for = None, compaction.tail_key if compaction is not None else None
        return build(await session_view_state(store, sessions, session_id, resume=False))


def forget_view_state(sessions: Sessions, session_id: str) -> None:
    held = sessions.peek(session_id)
    if held is not None:
        held.view = held.sent = held.sent_digests = None


async def stored_compaction(store: Store, session_id: str) -> Compaction | None:
    """The compaction the session's requests are built on: the newest one stored (B-CACHE-3)."""
    event = await store.latest_event(session_id, COMPACTION_EVENT, "compaction")
    return Compaction.from_json(event.payload.get("compaction")) if event else None


async def keep_resume_point(store: Store, sessions: Sessions, session_id: str, view: RequestView) -> None:
    """Save where ``view``'s new summarized compaction put its tail, and its head, for a session with no stored
    compaction (an imported history viewed with ``getContextView``): the next server resumes from there instead
    of reading every message (cold start, B-CACHE-3). Nothing is announced or repeated: a state resumed from it
    builds the views a full state builds, and reads everything when a view needs more (``PartialHistory``).
    Saved again only once the tail has moved ``RESUME_EVERY`` messages on; the state held is then trimmed to it."""
    made = view.new_compaction
    held = sessions.get(session_id)
    if made is None or made.head is None or made.tail_key - held.resume_seq < RESUME_EVERY:
        return
    await store.save_view_resume(session_id, made.tail_key, made.head.to_json())
    held.resume_seq = made.tail_key
    if held.view is not None and held.view.held_before(made) >= TRIM_MIN:  # hold no more than a restart would
        held.view = await _resume_at(store, session_id, made.tail_key, made.head, "trimmed to")
        await session_view_state(store, sessions, session_id)


def request_digests(messages: Sequence[dict[str, Any]]) -> list[bytes]:
    """One digest per message, equal for equal messages whatever their keys' order."""
    return [
        hashlib.blake2b(msgspec.json.encode(msg, order="sorted"), digest_size=DIGEST_SIZE).digest() for msg in messages
    ]


def record_sent(sessions: Sessions, session_id: str, messages: Sequence[dict[str, Any]]) -> None:
    """Remember what was just sent to the provider (for ``stable_prefix_tokens``). Costs nothing per call: the
    request's list is kept as it is (the loop never changes a view after sending it); ``keep_sent`` stores it."""
    held = sessions.get(session_id)
    held.sent, held.sent_digests = messages, None


async def keep_sent(store: Store, sessions: Sessions, session_id: str) -> None:
    """Store the last request sent, as digests, so a restarted server (or one that dropped the session from
    memory) still compares with it. Once per turn, at its end: hashing a large request at every call would add
    to each iteration what the provider's answer is waited for anyway."""
    held = sessions.peek(session_id)
    if held is not None and held.sent is not None:
        await store.save_sent_request(session_id, b"".join(request_digests(held.sent)))


async def stable_prefix_tokens(
    store: Store, sessions: Sessions, session_id: str, messages: Sequence[dict[str, Any]]
) -> int:
    """Tokens of the longest run of leading ``messages`` equal to the last request sent: what a provider's prompt
    cache could serve (B-CACHE-1). 0 when nothing was ever sent for the session."""
    held = sessions.get(session_id)
    if held.sent is not None:  # sent by this process: compared as it was sent
        same = (a == b for a, b in zip(held.sent, messages))
    else:  # sent before a restart: compared by digest
        if held.sent_digests is None:
            held.sent_digests = await store.sent_request(session_id) or []
        previous = held.sent_digests
        same = (a == b for a, b in zip(previous, request_digests(messages[: len(previous)])))
    total = 0
    for equal, msg in zip(same, messages):
        if not equal:
            break
        total += estimate_message_tokens(msg)
    return total


@dataclass
class ViewBuilder:
    store: Store
    settings: ViewSettings
    model: str = ""
    calibrations: dict[str, Calibration] = field(default_factory=dict)  # per model, owned by the runtime
    overhead_tokens: int = 0  # sent with every request but not part of the view: the tool definitions
    compaction: Compaction | None = None  # what the session's requests are built on (B-CACHE-1)
    sessions: Sessions = field(default_factory=Sessions)  # where the view state lives (the runtime's registry)
    _loaded: bool = False
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
        if not self._loaded:  # once per turn: user turns and restarts repeat the stored compaction (B-CACHE-3)
            self.compaction = await stored_compaction(self.store, session_id)
            self._loaded = True
        try:
            view = await build_view(
                self.store,
                self.sessions,
                session_id,
                self.compaction,
                lambda state: state.view(settings, self.compaction),
                settings.context_window_tokens,
            )
        except Exception:  # R-FALL-1: a failing compressor never stops the turn
            log.exception("building the request view failed; using the fallback window")
            forget_view_state(self.sessions, session_id)
            messages, tokens = await self._load(session_id)
            view = fallback_request_view(messages, settings, token_counts=_counts(tokens))
        if view.new_compaction is not None:
            self.compaction = view.new_compaction  # stored by the event that announces it (``compaction_event``)
        return fit_to_window(view)

    async def fallback_view(self, session_id: str) -> RequestView:
        settings = self.effective_settings()
        return fit_to_window(
            await build_view(
                self.store,
                self.sessions,
                session_id,
                self.compaction,
                lambda state: state.fallback_view(settings),
                settings.context_window_tokens,
            )
        )

    def record_sent(self, session_id: str, messages: Sequence[dict[str, Any]]) -> None:
        record_sent(self.sessions, session_id, messages)

    async def keep_sent(self, session_id: str) -> None:
        await keep_sent(self.store, self.sessions, session_id)

    def compaction_event(self, view: RequestView, force: bool = False) -> dict | None:
        """The ``contextCompacted`` payload for a view that compacts anew (R-OBS-1), else None. A new compaction
        carries its cut (``compaction``), which is how it is persisted (B-CACHE-3); a repeated one is not news."""
        if view.mode == "full" or (view.sticky and not force):
            return None
        key = (view.mode, view.event_summary, view.compacted_tool_outputs)
        if view.new_compaction is None and key == self._last_announced and not force:
            return None  # the same fallback again within the turn
        self._last_announced = key
        event: dict[str, Any] = {
            "mode": view.mode,
            "beforeTokens": view.before_tokens,
            "afterTokens": view.estimated_tokens,
            "summary": view.event_summary or "",
        }
        if view.new_compaction is not None:
            event["compaction"] = view.new_compaction.to_json()
        return event

    async def observe_usage(self, estimated: int, reported: int) -> None:
        """B-TOK-3: learn this model's ratio of reported to estimated prompt tokens, and keep it (schema v8), so a
        restarted server plans with the same window (B-CACHE-3)."""
        await self._learn(calibrate(self.calibration, estimated + self.overhead_tokens, reported))

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

    async def _learn(self, learned: Calibration) -> None:
        before = self.calibration
        self.calibrations[self.model] = learned
        # Written only when the factor moves or on the first sample: the common case (our estimate over-counts, the
        # factor stays at its floor of 1) costs no write per call; ``samples`` matters only as zero or not.
        if before is None or before.samples == 0 or learned.factor != before.factor:
            await self.store.save_calibration(self.model, learned.factor, learned.samples)


def effective_settings(settings: ViewSettings, overhead_tokens: int, calibration: Calibration | None) -> ViewSettings:
    """The window left for messages: minus what every request carries besides them (the tool definitions),
    and scaled by the model's calibration (estimate*f > T  <=>  estimate > T/f), so the pipeline itself stays a
    pure function of estimates. The agent loop and ``getContextView`` both build views with this."""
    factor = max(calibration.factor if calibration else 1.0, 1.0)
    if factor == 1.0 and overhead_tokens == 0:
        return settings
    window = settings.context_window_tokens - overhead_tokens
    return ViewSettings(
        max(int(window / factor), 1),
        settings.threshold_ratio,
        settings.keep_recent_tokens,
        settings.compact_target_ratio,
    )


def _counts(tokens: list[int | None]) -> list[int] | None:
    counts = [t for t in tokens if t is not None]
    return counts if len(counts) == len(tokens) else None  # old rows (pre-v2) are estimated on the fly
