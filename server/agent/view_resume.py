"""A session's incremental view state, fed from the store: resumed at a cold start, trimmed when it grows long.

B-INC-1: each session's incremental view state (``server.context.incremental``) is kept in a ``ViewState``, which
the session's handle holds (``server.sessions.Session.view``), and fed only the messages stored since it last
looked, so a view costs O(new messages + view), not O(transcript). Cold start (B-CACHE-3): a state is resumed from
the tail of the stored summarized compaction (or, for a history no turn compacted, from a view snapshot or a resume
point), and a long-lived state is trimmed to that tail, so what is held is bounded by what follows it.

Two kinds of stored state to resume from exist, both derived data: the view snapshots the store makes as messages
are appended (``transcript.view_state``) and the resume point a view on a whole history saves where it put its safe
tail (``keep_resume_point``). What a read learns of either is not written by the read: it waits in the state
(``ViewState.unsaved``) for a path that writes anyway (``save_unsaved``: the session's next turn, an import, the
server's close).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from server.context import Compaction, RequestView
from server.context.incremental import IncrementalView, PartialHistory
from server.context.view import CompactionHead
from server.transcript import Store
from server.transcript.view_state import SNAPSHOT_EVERY

log = logging.getLogger(__name__)
T = TypeVar("T")

FEED_PAGE = 1000
RESUME_EVERY = 1000  # messages a view's tail moves on before its resume point is saved again
TRIM_MIN = 1000  # conversation messages held before a compaction's tail past which a state is trimmed to it


@dataclass
class Unsaved:
    """Derived data a read learned and leaves for a path that writes anyway (``save_unsaved``)."""

    snapshot: tuple[int, dict[str, Any]] | None = None  # a view snapshot from a history read whole: (seq, head)
    resume: tuple[int, dict[str, Any]] | None = None  # a view's resume point: (tail seq, head)

    def __bool__(self) -> bool:
        return self.snapshot is not None or self.resume is not None


@dataclass
class ViewState:
    """One session's view state, held by its handle (``server.sessions.Session.view``). ``state``, ``resume_seq``
    and ``full_for`` are rebuilt from the store (``let_go``); ``unsaved`` exists only here until it is written."""

    session_id: str
    state: IncrementalView | None = None  # fed only the messages stored since it last looked
    resume_seq: int = 0  # the tail of the view's resume point this process knows is stored (0: none)
    full_for: int | None = None  # the compaction (tail seq) a resumed state fell short for: held whole since
    unsaved: Unsaved = field(default_factory=Unsaved)  # what reads learned, written on the next path that writes

    def let_go(self) -> None:
        """Drop what the store can rebuild."""
        self.state, self.resume_seq, self.full_for = None, 0, None


async def session_view_state(
    store: Store,
    view: ViewState,
    compaction: Compaction | None = None,
    *,
    resume: bool = True,
    window_tokens: int | None = None,
    appended: bool = False,
) -> IncrementalView:
    """The session's incremental view state, fed with every message stored since it last looked (B-INC-1).

    A first look with a summarized ``compaction`` that carries its head resumes from the compaction's tail: only
    the system messages before it and the messages since are read and held (cold start, B-CACHE-3). Without one
    it resumes from the resume point a view saved or a view snapshot the store kept, the newest with at least
    ``window_tokens`` after it (``_resumed_state``). A state that holds ``TRIM_MIN`` or more conversation
    messages before that tail is replaced by such a resumed one, so a long session's memory is bounded by what
    follows its compaction, not by its history (``resume=False``: neither).

    ``appended``: the caller has just appended to the session itself (the agent loop, after storing an answer, a
    tool result or a prompt): what this store appended since the state last looked is fed from the records it
    kept (``Store.appended_after``) instead of being read back; what it does not know is read."""
    state = view.state
    if state is None and resume:
        state = await _resumed_state(store, view.session_id, compaction, window_tokens)
        if state is not None and compaction is None:
            view.resume_seq = state.last_seq + 1  # the saved resume point's tail
    # Trimmed, but not again for a compaction whose trimmed state needed the older history (a fallback window
    # reaching back past its tail, say): that would read the whole history at every call.
    elif (
        state is not None
        and resume
        and compaction is not None
        and compaction.head is not None
        and compaction.tail_key != view.full_for
        and state.held_before(compaction) >= TRIM_MIN
    ):
        state = await _resume_at(store, view.session_id, compaction.tail_key, compaction.head, "trimmed to")
    whole = state is None  # nothing to resume from: every message is read
    state = view.state = state or IncrementalView()
    if appended and (known := store.appended_after(view.session_id, state.last_seq)) is not None:
        if known:
            state.feed([m.to_openai() for m in known], [m.tokens for m in known])
        return state
    while True:  # page by page: a long history's first load never holds all its rows at once
        page = await store.read_messages(view.session_id, after_seq=state.last_seq, limit=FEED_PAGE)
        new = [m for m in page.items if m.seq > state.last_seq]  # a concurrent reader may have fed some already
        if new:
            state.feed([m.to_openai() for m in new], [m.tokens for m in new])
        if page.next_seq is None:
            if whole and state.fed >= SNAPSHOT_EVERY:
                _note_snapshot(view, state)
            return state


def _note_snapshot(view: ViewState, state: IncrementalView) -> None:
    """A long history read whole (stored before view snapshots, or without them) gets one from the state that
    read it, so the store's later ones follow from it and no server reads it whole again."""
    made = state.snapshot()
    if made is not None:
        view.unsaved.snapshot = (made[0], made[1].to_json())


async def save_unsaved(store: Store, view: ViewState) -> None:
    """Write what reads of the session learned and left in its view state (a view snapshot, a resume point); on paths that write."""
    unsaved, view.unsaved = view.unsaved, Unsaved()
    if unsaved.snapshot is not None:
        seq, head = unsaved.snapshot
        if seq > (await store.newest_view_snapshot_seq(view.session_id) or 0):
            await store.save_view_snapshot(view.session_id, seq, head)
    if unsaved.resume is not None:
        await store.save_view_resume(view.session_id, *unsaved.resume)


async def _resumed_state(
    store: Store, session_id: str, compaction: Compaction | None, window_tokens: int | None
) -> IncrementalView | None:
    """A state resumed from the stored summarized compaction's tail; when the session has no stored compaction
    with a head, from the newest of the resume point a view on its full history saved (``keep_resume_point``)
    and the view snapshots the store kept as it appended (``transcript.view_state``) with at least
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
        points = await store.view_snapshots(session_id)
        if saved is not None and head is not None:
            points.append((saved[0], await store.tokens_from(session_id, saved[0]), saved[1]))
        for seq, tokens, data in sorted(points, key=lambda p: -p[0]):
            if tokens < window_tokens or (compaction is not None and seq > compaction.tail_key):
                continue
            point = CompactionHead.from_json(data)
            if point is not None:
                how = "the saved resume point" if saved is not None and seq == saved[0] else "the view snapshot"
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
    view: ViewState,
    compaction: Compaction | None,
    build: Callable[[IncrementalView], T],
    window_tokens: int | None = None,
    appended: bool = False,
) -> T:
    """``build(state)`` on the session's state; when a state resumed from a compaction's tail turns out to need
    the older history, it is replaced by a full one, once. ``window_tokens``: the window the view is planned with
    (what a view snapshot to resume from must leave after it); ``appended`` as ``session_view_state``'s."""
    state = await session_view_state(store, view, compaction, window_tokens=window_tokens, appended=appended)
    try:
        return build(state)
    except PartialHistory as exc:
        log.info(
            "session %s: the view needs the history before the compaction (%s); reading all of it", view.session_id, exc
        )
        view.state, view.full_for = None, compaction.tail_key if compaction is not None else None
        return build(await session_view_state(store, view, resume=False))


def forget_view_state(view: ViewState) -> None:
    """Drop the state (a failed build): the next view reads afresh what it needs."""
    view.state = None


async def keep_resume_point(store: Store, view: ViewState, made_by: RequestView) -> None:
    """Note where ``made_by``'s new summarized compaction put its tail, and its head, for a session with no stored
    compaction (an imported history viewed with ``getContextView``): the next server resumes from there instead
    of reading every message (cold start, B-CACHE-3). Nothing is announced or repeated: a state resumed from it
    builds the views a full state builds, and reads everything when a view needs more (``PartialHistory``).
    Noted again only once the tail has moved ``RESUME_EVERY`` messages on; the state held is then trimmed to it.
    It is written by ``save_unsaved``."""
    made = made_by.new_compaction
    if made is None or made.head is None or made.tail_key - view.resume_seq < RESUME_EVERY:
        return
    view.unsaved.resume = (made.tail_key, made.head.to_json())
    view.resume_seq = made.tail_key
    if view.state is not None and view.state.held_before(made) >= TRIM_MIN:  # hold no more than a restart would
        view.state = await _resume_at(store, view.session_id, made.tail_key, made.head, "trimmed to")
        await session_view_state(store, view)
