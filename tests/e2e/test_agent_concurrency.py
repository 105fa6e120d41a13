"""One turn per session, any number across sessions (protocol/README.md ``TurnAlreadyRunning``)."""

from __future__ import annotations

import asyncio

import pytest

from server.cli.client import RpcError
from tests.e2e.agent_support import agent_fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()


async def hanging_turn(agent, folder) -> tuple[str, asyncio.Future]:
    """A turn whose provider stream never ends until the turn is cancelled."""
    agent.fake.push({"hang": True})
    sid = await agent.session(folder, policy="auto")
    _, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "hang on"})
    await agent.wait_for(lambda: len(agent.chat_requests()) >= 1)  # the turn is registered before it calls out
    return sid, fut


async def test_second_submitTurn_in_the_same_session_is_TurnAlreadyRunning(agent, folder):
    agent.fake.reset()
    sid, fut = await hanging_turn(agent, folder)
    with pytest.raises(RpcError) as err:
        await agent.client.request("submitTurn", {"sessionId": sid, "text": "me too"})
    assert err.value.code == -32602 and err.value.data["code"] == "TurnAlreadyRunning"

    await agent.client.request("cancelTurn", {"sessionId": sid})
    assert (await asyncio.wait_for(fut, 5))["stopReason"] == "cancelled"
    # Only the first turn's user message was stored.
    users = [i for i in await agent.transcript(sid) if i["role"] == "user"]
    assert [u["content"] for u in users] == ["hang on"]


async def test_turns_in_two_sessions_run_at_the_same_time(agent, folder, tmp_path):
    agent.fake.reset()
    slow, slow_fut = await hanging_turn(agent, folder)  # holds its provider stream open
    other_folder = tmp_path / "other"
    other_folder.mkdir()
    quick = await agent.session(other_folder, policy="auto")

    result = await agent.turn(quick, "meanwhile", timeout=15)  # empty script: the fake echoes
    assert result["stopReason"] == "endTurn" and not slow_fut.done()
    assert agent.updates(quick, "assistantMessage")[-1]["content"] == "Echo: meanwhile"

    await agent.client.request("cancelTurn", {"sessionId": slow})
    assert (await asyncio.wait_for(slow_fut, 5))["stopReason"] == "cancelled"
    assert agent.updates(quick, "turnCompleted")[-1]["stopReason"] == "endTurn"
