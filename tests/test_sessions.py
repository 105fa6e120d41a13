"""``server.sessions``: one bounded home for a session's live state, rebuilt from the store, cleared on delete."""

from __future__ import annotations

from server.config import load_settings
from server.runtime import Runtime
from server.sessions import Sessions


def test_the_least_recently_used_idle_session_is_dropped_past_capacity():
    sessions = Sessions(capacity=2)
    sessions.get("a").sent = [{"role": "user", "content": "a"}]
    sessions.get("b")
    sessions.get("a")  # a is now the most recently used
    sessions.get("c")
    assert "b" not in sessions and "a" in sessions and "c" in sessions and len(sessions) == 2
    assert sessions.get("a").sent == [{"role": "user", "content": "a"}]


def test_a_session_with_a_running_turn_is_never_dropped():
    running = {"a"}
    sessions = Sessions(capacity=1, busy=lambda sid: sid in running)
    held = sessions.get("a")
    sessions.get("b")
    sessions.get("c")
    assert sessions.peek("a") is held and "c" in sessions and "b" not in sessions
    running.clear()
    sessions.get("d")
    assert list(s for s in "abcd" if s in sessions) == ["d"]


def test_forget_and_peek():
    sessions = Sessions()
    assert sessions.peek("a") is None and "a" not in sessions  # peek never creates
    sessions.get("a")
    sessions.forget("a")
    sessions.forget("never seen")
    assert "a" not in sessions


async def test_the_runtime_rebuilds_dropped_state_from_the_store_and_delete_clears_it(tmp_path):
    rt = Runtime(load_settings({"THREADLINE_HOME": str(tmp_path / "home")}))
    await rt.open()
    try:
        rt.sessions.capacity = 1
        session = await rt.store.create_session(str(tmp_path))
        other = await rt.store.create_session(str(tmp_path))
        for tokens in (100, 20):
            await rt.store.add_event(
                session.id,
                "usage",
                {"inputTokens": tokens, "outputTokens": 5, "cachedInputTokens": 10, "costUsd": 0.25},
                None,
            )
        totals = await rt.session_totals(session.id)
        assert (totals.input_tokens, totals.output_tokens, totals.cached_input_tokens, totals.cost_usd) == (
            120,
            10,
            20,
            0.5,
        )
        assert await rt.session_totals(session.id) is totals  # held while in memory
        approvals = await rt.remembered_approvals(session.id)
        await rt.remembered_approvals(other.id)  # capacity 1: the first session is dropped ...
        assert session.id not in rt.sessions
        again = await rt.session_totals(session.id)  # ... and comes back from its events
        assert again is not totals and again == totals
        assert await rt.remembered_approvals(session.id) is not approvals
        await rt.delete_session(session.id)
        assert session.id not in rt.sessions
    finally:
        await rt.close()
