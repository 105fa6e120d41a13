"""The session's running and queued turns (server.agent.turns), driven directly with real asyncio tasks."""

from __future__ import annotations

import asyncio

import pytest

from protocol.messages import SubmitTurnResult, TurnUsage
from server.agent.turns import SessionTurns
from server.errors import TurnAlreadyRunning, TurnNotRunning


async def test_steerTurn_after_a_turn_took_its_last_steer_is_TurnNotRunning_not_a_text_that_is_never_sent():
    """A turn that found nothing to deliver before ending still awaits (storing, announcing) before its
    task is done. A steer accepted in that window would be answered with the turn's id and then never sent; it
    must be refused, so the client runs it as a turn of its own. (And a steer that arrives before the new turn's
    task first runs, as when submitTurn and steerTurn are read in one go, is the turn's first delivery.)"""
    turns = SessionTurns("s")
    took_last, finish = asyncio.Event(), asyncio.Event()
    seen: list[list[str]] = []

    async def run() -> SubmitTurnResult:
        seen.append(turns.take_steers(False))  # a model call's look: the turn goes on
        await asyncio.sleep(0)
        seen.append(turns.take_steers(True))  # the last look: nothing, so the turn ends
        took_last.set()
        await finish.wait()  # what the turn still awaits before its task is done
        return SubmitTurnResult(turn_id="t1", stop_reason="endTurn", usage=TurnUsage())

    task = turns.start("t1", run)
    assert turns.steer("while it runs") == "t1"
    await took_last.wait()
    assert seen == [["while it runs"], []]
    with pytest.raises(TurnNotRunning):
        turns.steer("too late")
    finish.set()
    assert (await task).stop_reason == "endTurn"


async def test_a_last_look_that_finds_text_keeps_the_turn_open_to_steering():
    turns = SessionTurns("s")
    release = asyncio.Event()

    async def run() -> SubmitTurnResult:
        await release.wait()
        assert turns.take_steers(True) == ["one more"]  # delivered: the turn makes another call
        assert turns.steer("and another") == "t1"
        assert turns.take_steers(True) == ["and another"]
        assert turns.take_steers(True) == []
        return SubmitTurnResult(turn_id="t1", stop_reason="endTurn", usage=TurnUsage())

    task = turns.start("t1", run)
    turns.steer("one more")
    release.set()
    await task


async def test_an_exclusive_operation_has_the_session_to_itself():
    """``compactSession``/``rewindFiles``/``/compact`` (declared exclusive in the method table): refused while a turn
    runs; while one runs, a submitted turn is refused and a queued one waits for it to end, then runs."""
    turns = SessionTurns("s")
    release = asyncio.Event()
    order: list[str] = []

    async def run() -> SubmitTurnResult:
        order.append("turn")
        await release.wait()
        return SubmitTurnResult(turn_id="t", stop_reason="endTurn", usage=TurnUsage())

    running = turns.start("t1", run)
    with pytest.raises(TurnAlreadyRunning), turns.exclusive("compactSession"):
        pass
    release.set()
    await running
    release.clear()

    with turns.exclusive("compactSession"):
        with pytest.raises(TurnAlreadyRunning, match="compactSession"):
            turns.start("t2", run)
        with pytest.raises(TurnAlreadyRunning), turns.exclusive("rewindFiles"):
            pass
        queued = turns.start("t3", run, queue=True)
        for _ in range(5):
            await asyncio.sleep(0)
        assert order == ["turn"]  # only the first turn ran: the queued one waits for the operation
        order.append("compacted")
    release.set()
    await queued
    assert order == ["turn", "compacted", "turn"]
    assert not turns.is_running()


def test_session_exclusivity_is_declared_in_the_method_table_not_called_by_the_services():
    from pathlib import Path

    from server.methods.registry import HANDLERS

    assert sorted(name for name, h in HANDLERS.items() if h.exclusive) == [
        "compactSession",
        "discardWorktree",
        "mergeWorktree",
        "rewindFiles",
    ]
    services = Path(__file__).resolve().parents[2] / "server" / "services"
    assert [p.name for p in sorted(services.glob("*.py")) if "ensure_idle(" in p.read_text()] == []
