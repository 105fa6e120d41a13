"""``deleteSession`` right after ``submitTurn`` still called the model. Delete now cancels the running
(or still starting) turn first and waits for it, so the model is not called for a deleted session."""

from __future__ import annotations

import asyncio

import pytest

from server.cli.client import RpcError
from tests.e2e.agent_support import agent_fixture, request_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()


async def check_gone(agent, sid: str) -> None:
    with pytest.raises(RpcError) as err:
        await agent.transcript(sid)
    assert err.value.data["code"] == "SessionNotFound"


async def test_deleteSession_right_after_submitTurn_cancels_the_turn_and_the_model_is_never_called(agent, tmp_path):
    agent.fake.reset()
    agent.fake.push({"content": "MUST NOT BE ASKED"})
    sid = await agent.session(tmp_path, policy="auto")
    _, turn = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "hello"})
    _, deleted = agent.client.start_request("deleteSession", {"sessionId": sid})  # same write, no wait between
    assert await asyncio.wait_for(deleted, 30) == {}
    try:
        outcome = (await asyncio.wait_for(turn, 30))["stopReason"]
    except RpcError as exc:  # the delete was handled before the turn was registered
        outcome = exc.data["code"]
    assert outcome in ("cancelled", "SessionNotFound"), outcome
    await check_gone(agent, sid)
    agent.fake.push({"content": "a later turn elsewhere"})  # the server is fine, and nothing reached the model
    other = await agent.session(tmp_path, policy="auto")
    assert (await agent.turn(other, "hi"))["stopReason"] == "endTurn"
    assert [request_messages(r)[-1]["content"] for r in agent.chat_requests()] == ["hi"]


async def test_deleteSession_during_a_streaming_turn_cancels_it_before_deleting(agent, tmp_path):
    agent.fake.reset()
    agent.fake.push({"content": "slow " * 40, "chunks": 40, "chunk_delay": 0.25}, {"content": "never"})
    sid = await agent.session(tmp_path, policy="auto")
    _, turn = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "talk slowly"})
    await agent.wait_for(lambda: agent.updates(sid, "assistantDelta"), timeout=30)
    assert await asyncio.wait_for(agent.client.request("deleteSession", {"sessionId": sid}), 30) == {}
    assert (await asyncio.wait_for(turn, 30))["stopReason"] == "cancelled"
    await check_gone(agent, sid)
    assert len(agent.chat_requests()) == 1 and agent.fake.pending == 1
