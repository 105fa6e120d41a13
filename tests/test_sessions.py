"""``server.sessions``: one handle per live session, its rebuildable state bounded and rebuilt from the store, its
memory-only state kept, and all of it gone in one call on delete."""

from __future__ import annotations

import asyncio

import pytest

from protocol.messages import SubmitTurnResult, TurnUsage
from server.agent.view_resume import Unsaved
from server.config import load_settings
from server.context.incremental import IncrementalView
from server.errors import SessionNotFound
from server.runtime import Runtime
from server.services.sessions import delete_session
from server.sessions import Session, Sessions


def _no_store():
    raise AssertionError("not used")


def test_the_least_recently_used_idle_session_lets_go_past_capacity():
    sessions = Sessions(_no_store, capacity=2)
    sessions.get("a").sent.messages = [{"role": "user", "content": "a"}]
    sessions.get("b")
    sessions.get("a")  # a is now the most recently used
    sessions.get("c")
    assert "b" not in sessions and "a" in sessions and "c" in sessions and len(sessions) == 2
    assert sessions.get("a").sent.messages == [{"role": "user", "content": "a"}]


async def test_a_session_with_a_running_turn_is_never_let_go():
    sessions = Sessions(_no_store, capacity=1)
    held = sessions.get("a")
    release = asyncio.Event()

    async def run() -> SubmitTurnResult:
        await release.wait()
        return SubmitTurnResult(turn_id="t", stop_reason="endTurn", usage=TurnUsage())

    task = held.turns.start("t", run)
    sessions.get("b")
    sessions.get("c")
    assert sessions.peek("a") is held and "c" in sessions and "b" not in sessions
    release.set()
    await task
    sessions.get("d")
    assert list(s for s in "abcd" if s in sessions) == ["d"]


def test_memory_only_state_outlives_letting_go():
    """The MCP choices made for a session exist nowhere else: letting go of the rebuildable state keeps them."""
    sessions = Sessions(_no_store, capacity=1)
    handle = sessions.get("a")
    handle.mcp.decided["project-server"] = False
    handle.sent.messages = [{"role": "user", "content": "a"}]
    sessions.get("b")
    assert "a" not in sessions and handle.sent.messages is None
    assert sessions.get("a") is handle and handle.mcp.decided == {"project-server": False}


def test_issue29_the_handle_owns_the_slots_the_lower_packages_define():
    """Each slot is defined below the handle (``ViewState``, ``SentRequest``, ``McpChoices``, ``HookChoices``) and
    still lives and is dropped with it: letting go drops what the store rebuilds (the view state, the last request
    sent) and keeps what exists only in memory (an unsaved resume point, hook choices), with the handle itself."""
    sessions = Sessions(_no_store, capacity=1)
    handle = sessions.get("a")
    handle.view.state = IncrementalView()
    handle.view.resume_seq = 7
    handle.view.unsaved.resume = (7, {"head": True})
    handle.sent.digests = [b"x"]
    handle.hooks.decided["digest"] = True
    sessions.get("b")
    assert "a" not in sessions and handle.view.state is None and handle.view.resume_seq == 0
    assert handle.sent.digests is None
    assert sessions.get("a") is handle
    assert handle.view.unsaved.resume == (7, {"head": True}) and handle.hooks.decided == {"digest": True}
    handle.view.unsaved = Unsaved()
    handle.hooks.decided.clear()
    sessions.get("b")
    assert sessions.get("a") is not handle  # nothing memory-only left: the handle itself was let go


def test_forget_and_peek():
    forgotten: list[Session] = []
    sessions = Sessions(_no_store, on_forget=forgotten.append)
    assert sessions.peek("a") is None and "a" not in sessions  # peek never creates
    held = sessions.get("a")
    sessions.forget("a")
    sessions.forget("never seen")
    assert "a" not in sessions and forgotten == [held]


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
        totals = await rt.sessions.get(session.id).totals()
        assert (totals.input_tokens, totals.output_tokens, totals.cached_input_tokens, totals.cost_usd) == (
            120,
            10,
            20,
            0.5,
        )
        assert await rt.sessions.get(session.id).totals() is totals  # held while in memory
        approvals = await rt.sessions.get(session.id).approvals()
        await rt.sessions.get(other.id).approvals()  # capacity 1: the first session lets go ...
        assert session.id not in rt.sessions
        again = await rt.sessions.get(session.id).totals()  # ... and rebuilds from its events
        assert again is not totals and again == totals
        assert await rt.sessions.get(session.id).approvals() is not approvals
        await delete_session(rt, session.id)
        assert session.id not in rt.sessions and rt.sessions.peek(session.id) is None
        with pytest.raises(SessionNotFound):  # a turn that read the session before the delete cannot start
            rt.sessions.get(session.id).turns.ensure_idle()
    finally:
        await rt.close()
