"""Steering and queueing end to end: ``steerTurn`` reaches the running turn's next model call, after
the current tool finishes, and is kept when the turn is cancelled; ``submitTurn {queue: true}`` runs after the
running turn; edit approvals and results carry the change as a diff."""

from __future__ import annotations

import asyncio

import pytest

from server.cli.client import RpcError
from tests.e2e.agent_support import agent_fixture, request_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()


@pytest.fixture(autouse=True)
def fresh(agent):
    agent.fake.reset()
    agent.approvals.clear()
    agent.client.on_request = agent._answer


def held_approvals(agent):
    """Approvals wait until ``release`` is set; ``asked`` is set when one arrives."""
    asked, release = asyncio.Event(), asyncio.Event()

    async def hold(method, params):
        agent.approvals.append(params)
        asked.set()
        await release.wait()
        return {"decision": "allowOnce"}

    agent.client.on_request = hold
    return asked, release


async def test_steer_is_delivered_at_the_next_model_call_after_the_tool(agent, folder):
    agent.fake.push(
        {"tool_calls": [{"id": "call_w", "name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}}]},
        {"content": "done"},
    )
    asked, release = held_approvals(agent)
    sid = await agent.session(folder, policy="ask")
    _, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "write a"})
    await asyncio.wait_for(asked.wait(), 10)
    steered = await agent.client.request("steerTurn", {"sessionId": sid, "text": "and keep it short"})
    release.set()
    result = await asyncio.wait_for(fut, 10)
    assert result["stopReason"] == "endTurn" and steered["turnId"] == result["turnId"]

    second = request_messages(agent.chat_requests()[1])
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "user"]
    assert second[-1]["content"] == "and keep it short"
    items = [i for i in await agent.transcript(sid) if i["role"] != "system"]  # the frozen context
    assert [i["role"] for i in items] == ["user", "assistant", "tool", "user", "assistant"]
    assert [u for u in agent.updates(sid, "userMessage") if u.get("steered")] == [
        {"kind": "userMessage", "text": "and keep it short", "steered": True}
    ]


async def test_steer_during_the_last_answer_gets_one_more_model_call(agent, folder):
    agent.fake.push({"content": "first answer", "delay": 1.0}, {"content": "second answer"})
    sid = await agent.session(folder)
    _, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "hi"})
    await agent.wait_for(lambda: agent.chat_requests())  # the first call is under way: the steer waits for the next
    await agent.client.request("steerTurn", {"sessionId": sid, "text": "in French"})
    assert (await asyncio.wait_for(fut, 10))["stopReason"] == "endTurn"
    assert len(agent.chat_requests()) == 2
    assert request_messages(agent.chat_requests()[1])[-1] == {"role": "user", "content": "in French"}


async def test_steer_when_idle_is_TurnNotRunning(agent, folder):
    sid = await agent.session(folder)
    with pytest.raises(RpcError) as err:
        await agent.client.request("steerTurn", {"sessionId": sid, "text": "hello?"})
    assert err.value.code == -32602 and err.value.data == {"code": "TurnNotRunning"}


async def test_steer_is_kept_when_the_turn_is_cancelled(agent, folder):
    agent.fake.push(
        {"tool_calls": [{"id": "call_w", "name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}}]}
    )
    asked, release = held_approvals(agent)
    sid = await agent.session(folder, policy="ask")
    _, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "write a"})
    await asyncio.wait_for(asked.wait(), 10)
    await agent.client.request("steerTurn", {"sessionId": sid, "text": "actually, stop"})
    await agent.client.request("cancelTurn", {"sessionId": sid})
    release.set()
    assert (await asyncio.wait_for(fut, 10))["stopReason"] == "cancelled"
    items = [i for i in await agent.transcript(sid) if i["role"] != "system"]  # the frozen context
    assert [i["role"] for i in items] == ["user", "assistant", "tool", "user"]
    assert items[-1]["content"] == "actually, stop" and "interrupted" in items[-2]["content"]


async def test_queued_turns_run_in_order_after_the_running_one(agent, folder):
    agent.fake.push({"content": "one", "delay": 0.8}, {"content": "two"}, {"content": "three"})
    sid = await agent.session(folder)
    _, first = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "1"})
    await agent.wait_for(lambda: agent.updates(sid, "turnStarted"))
    with pytest.raises(RpcError) as err:
        await agent.client.request("submitTurn", {"sessionId": sid, "text": "not queued"})
    assert err.value.data == {"code": "TurnAlreadyRunning"}
    _, second = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "2", "queue": True})
    _, third = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "3", "queue": True})
    results = await asyncio.wait_for(asyncio.gather(first, second, third), 15)
    assert [r["stopReason"] for r in results] == ["endTurn"] * 3
    items = [i for i in await agent.transcript(sid) if i["role"] != "system"]  # the frozen context
    assert [(i["role"], i["content"]) for i in items] == [
        ("user", "1"),
        ("assistant", "one"),
        ("user", "2"),
        ("assistant", "two"),
        ("user", "3"),
        ("assistant", "three"),
    ]


async def test_edit_approvals_and_results_carry_the_diff(agent, folder):
    (folder / "g.py").write_text("print('hello')\n")
    agent.fake.push(
        {
            "tool_calls": [
                {
                    "id": "call_e",
                    "name": "edit_file",
                    "arguments": {"path": "g.py", "old_string": "hello", "new_string": "bonjour"},
                }
            ]
        },
        {"content": "done"},
    )
    sid = await agent.session(folder, policy="ask")
    await agent.turn(sid, "French")
    [asked] = agent.approvals
    assert asked["diff"] == {"path": "g.py", "oldText": "print('hello')\n", "newText": "print('bonjour')\n"}
    assert "-print('hello')\n+print('bonjour')" in asked["detail"]
    [result] = agent.updates(sid, "toolResult")
    assert result["diff"] == asked["diff"]
