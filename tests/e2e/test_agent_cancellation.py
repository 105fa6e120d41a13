"""Cancelling a turn end to end: mid-stream (``cancelTurn`` and ``$/cancelRequest``) and mid-command.

"Does not hang" bounds are generous (5 s); nothing here measures speed.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.e2e.agent_support import agent_fixture, request_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()

SLOW_TEXT = "This answer arrives one slow piece at a time and will be cut off part way through."


async def start_slow_turn(agent, folder) -> tuple[str, int, asyncio.Future]:
    agent.fake.reset()
    agent.fake.push({"content": SLOW_TEXT, "chunks": 40, "chunk_delay": 0.25})
    sid = await agent.session(folder, policy="auto")
    msg_id, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "talk slowly"})
    await agent.wait_for(lambda: len(agent.updates(sid, "assistantDelta")) >= 2)
    return sid, msg_id, fut


async def check_interrupted_then_next_turn_works(agent, sid: str) -> None:
    streamed = "".join(u["text"] for u in agent.updates(sid, "assistantDelta"))
    items = await agent.transcript(sid)
    partial = items[-1]
    assert partial["role"] == "assistant" and partial["status"] == "interrupted"
    assert partial["content"] and SLOW_TEXT.startswith(partial["content"]) and partial["content"] != SLOW_TEXT
    assert streamed.startswith(partial["content"])

    agent.fake.reset()
    result = await agent.turn(sid, "are you still there?")
    assert result["stopReason"] == "endTurn"
    [record] = agent.chat_requests()
    assert not record["rejected"] and record["status"] == 200  # the fake checks every request as OpenAI does
    assert request_messages(record)[-1] == {"role": "user", "content": "are you still there?"}


async def test_cancelTurn_mid_stream_keeps_the_partial_answer_as_interrupted(agent, folder):
    sid, _, fut = await start_slow_turn(agent, folder)
    assert (await agent.client.request("cancelTurn", {"sessionId": sid})) == {"cancelled": True}
    result = await asyncio.wait_for(fut, 5)
    assert result["stopReason"] == "cancelled" and "error" not in result
    assert agent.updates(sid, "turnCompleted")[-1]["stopReason"] == "cancelled"
    await check_interrupted_then_next_turn_works(agent, sid)


async def test_cancelRequest_on_submitTurn_mid_stream_resolves_cancelled(agent, folder):
    sid, msg_id, fut = await start_slow_turn(agent, folder)
    agent.client.notify("$/cancelRequest", {"id": msg_id})
    result = await asyncio.wait_for(fut, 5)
    assert result["stopReason"] == "cancelled"
    await check_interrupted_then_next_turn_works(agent, sid)


async def test_cancelTurn_with_no_turn_running_says_so(agent, folder):
    sid = await agent.session(folder, policy="auto")
    assert (await agent.client.request("cancelTurn", {"sessionId": sid})) == {"cancelled": False}


async def test_cancel_mid_command_kills_the_command_and_closes_the_call(agent, folder):
    agent.fake.reset()
    agent.fake.push(
        {
            "tool_calls": [
                {
                    "id": "call_sleep",
                    "name": "run_command",
                    # The shell's pid as /proc tells it (the host's): inside the server's PID namespace `$$` is not
                    "arguments": {"command": "cut -d' ' -f4 /proc/self/stat > pid.txt; exec sleep 30"},
                }
            ]
        }
    )
    sid = await agent.session(folder, policy="auto")
    _, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "wait a while"})
    pid_file = folder / "pid.txt"
    await agent.wait_for(lambda: pid_file.exists() and pid_file.read_text().strip())
    pid = int(pid_file.read_text())

    await agent.client.request("cancelTurn", {"sessionId": sid})
    result = await asyncio.wait_for(fut, 5)
    assert result["stopReason"] == "cancelled"
    # The sleep is gone (and reaped) rather than left running for 30 s; inside the server's PID namespace its
    # reaper is the namespace's init, a moment after the kill, so give it that moment (bounded)
    await agent.wait_for(lambda: not Path(f"/proc/{pid}").exists())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)

    items = await agent.transcript(sid)
    assert items[-1]["role"] == "tool" and items[-1]["toolCallId"] == "call_sleep"
    assert "interrupted" in items[-1]["content"]
    # The closed call keeps the next request valid.
    agent.fake.reset()
    assert (await agent.turn(sid, "next"))["stopReason"] == "endTurn"
    assert not agent.chat_requests()[0]["rejected"]


async def test_cancel_while_waiting_for_approval_resolves(agent, folder):
    agent.fake.reset()
    agent.fake.push({"tool_calls": [{"id": "call_ask", "name": "run_command", "arguments": {"command": "echo hi"}}]})
    asked = asyncio.Event()
    never = asyncio.get_running_loop().create_future()

    async def hold(method, params):
        asked.set()
        return await never  # the person never answers

    agent.client.on_request = hold
    try:
        sid = await agent.session(folder, policy="ask")
        _, fut = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "ask me"})
        await asyncio.wait_for(asked.wait(), 10)
        await agent.client.request("cancelTurn", {"sessionId": sid})
        result = await asyncio.wait_for(fut, 5)
    finally:
        never.cancel()
        agent.client.on_request = agent._answer
    assert result["stopReason"] == "cancelled"
    items = await agent.transcript(sid)
    assert items[-1]["role"] == "tool" and "interrupted" in items[-1]["content"]
    # The client is told to withdraw the question it was asked.
    asked_id = [r["id"] for r in agent.client.server_requests if r["method"] == "requestApproval"][-1]
    for _ in range(50):
        if ("$/cancelRequest", {"id": asked_id}) in agent.client.notifications:
            break
        await asyncio.sleep(0.1)
    assert ("$/cancelRequest", {"id": asked_id}) in agent.client.notifications
