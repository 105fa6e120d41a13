"""Request views fed from a real SQLite store (server.agent.views): what the loop's ViewBuilder holds and sends."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from server.agent.view_resume import TRIM_MIN, build_view
from server.agent.views import ViewBuilder
from server.context import ViewSettings, estimate_message_tokens
from server.context.incremental import IncrementalView
from server.sessions import Sessions
from server.transcript import NewMessage, Store
from tests.conftest import long_history

HISTORY = 1_500


def _messages(count: int) -> list[NewMessage]:
    return [
        NewMessage(m["role"], m.get("content"), tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id"))
        for m in long_history(count)
    ]


async def _reference(store: Store, sid: str, settings: ViewSettings, compaction) -> list[dict[str, Any]]:
    """The view a state fed the whole stored history builds (what a server holding everything sends)."""
    stored = await store.all_messages(sid)
    full = IncrementalView()
    full.feed([m.to_openai() for m in stored], [m.tokens for m in stored])
    return full.view(settings, compaction).messages


async def test_B_CACHE_3_a_long_sessions_state_is_trimmed_to_its_compaction_and_sends_the_same_requests(
    tmp_path: Path,
):
    """After a compaction the loop's state holds only what follows the compaction's tail (as a restarted server
    would), not the whole history: memory is bounded by the window, and every request is still the one a state
    holding everything builds (B-CACHE-1 sticky, then the next compaction)."""
    store = await Store.open(tmp_path / "threadline.db", estimate=estimate_message_tokens)
    try:
        sid = (await store.create_session(str(tmp_path), "long")).id
        more = _messages(HISTORY + 120)
        await store.append_messages(sid, more[:HISTORY])
        session = Sessions(lambda: store).get(sid)
        views = ViewBuilder(store, ViewSettings(16_000), state=session.view, sent=session.sent)
        compactions = 0
        for msg in more[HISTORY:]:
            before = views.compaction
            view = await views.next_view(sid)
            assert view.messages == await _reference(store, sid, views.effective_settings(), before)
            if view.new_compaction is not None:
                compactions += 1
            await store.append_messages(sid, [msg])
        held = session.view.state
        assert compactions >= 2
        assert held is not None and held.held < TRIM_MIN < HISTORY  # only what follows the compaction's tail
    finally:
        await store.close()


async def test_B_CACHE_3_a_trimmed_state_that_falls_short_is_read_whole_once_not_at_every_call(tmp_path: Path, caplog):
    """A view a trimmed state cannot build (here the whole transcript, on a window it fits) reads the whole
    history once; the state then stays whole for that compaction instead of being trimmed again and read again
    at the next such view (which, for a fallback window reaching back past the tail, would be every call)."""
    store = await Store.open(tmp_path / "threadline.db", estimate=estimate_message_tokens)
    try:
        sid = (await store.create_session(str(tmp_path), "long")).id
        await store.append_messages(sid, _messages(HISTORY))
        session = Sessions(lambda: store).get(sid)
        views = ViewBuilder(store, ViewSettings(16_000), state=session.view, sent=session.sent)
        assert (await views.next_view(sid)).new_compaction is not None
        await views.next_view(sid)  # repeats the compaction: the state is trimmed to its tail
        compaction = views.compaction
        trimmed = session.view.state
        assert compaction is not None and trimmed is not None and trimmed.held < TRIM_MIN
        caplog.set_level(logging.INFO, logger="server.agent.view_resume")
        whole = ViewSettings(100_000_000)
        for _ in range(2):
            view = await build_view(
                store, session.view, compaction, lambda state: state.view(whole)
            )  # the whole transcript
            assert view.mode == "full" and view.transcript_messages == HISTORY
            await views.next_view(sid)
        assert sum("reading all of it" in r.getMessage() for r in caplog.records) == 1
    finally:
        await store.close()


async def test_B_INC_1_the_loops_state_is_fed_from_its_own_appends_and_reads_what_another_writer_appended(
    tmp_path: Path,
):
    """The loop builds each view right after storing what came before it; what its store appended is fed from the
    records it kept, and what another store on the same file (another server) appended in between is read. Every
    request equals the one a state fed the whole stored history builds, even when a caller edited the last one."""
    path = tmp_path / "threadline.db"
    store = await Store.open(path, estimate=estimate_message_tokens)
    other = await Store.open(path, estimate=estimate_message_tokens)
    try:
        sid = (await store.create_session(str(tmp_path), "long")).id
        more = _messages(400)
        await store.append_messages(sid, more[:300])
        session = Sessions(lambda: store).get(sid)
        views = ViewBuilder(store, ViewSettings(16_000), state=session.view, sent=session.sent)
        for i, msg in enumerate(more[300:]):
            before = views.compaction
            view = await views.next_view(sid)
            assert view.messages == await _reference(store, sid, views.effective_settings(), before)
            for m in view.messages:  # a caller that edits what it was handed reaches neither the state nor the next
                m["content"] = "edited by a caller"
            if i % 7 == 3 and msg.role != "tool":  # never between a call and its result
                await other.append_messages(sid, [NewMessage("user", f"from the other server {i}")])
            await store.append_messages(sid, [msg])
        stored = await store.all_messages(sid)
        assert any(m.content and m.content.startswith("from the other server") for m in stored)
    finally:
        await other.close()
        await store.close()
