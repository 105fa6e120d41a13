"""Security/robustness: a huge MCP result does not stall the server.

A real MCP server (``tests.fakes.mcp_server``, the official SDK) answers an approved call with ~40 MB of text, which
its SDK sends twice (``content`` and ``structuredContent``): one ~80 MB line. While that result streams in, the
same client keeps asking ``listSessions``; every one is answered (what is asserted is that it answers, not how
fast). The over-long result is read and dropped past the bound (``server.mcp.stdio``) and the call fails with a
message saying so; a 6 MB one fits and becomes an artifact, as a built-in tool's large output does.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from tests.e2e.agent_support import API_KEY, REPO, new_fake, running_agent

pytestmark = pytest.mark.asyncio(loop_scope="function")


def call(call_id: str, tool: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]}


async def test_issue28_a_40_mb_mcp_result_leaves_the_server_answering(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        f"""
[mcp_servers.fake]
command = {json.dumps(sys.executable)}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
tool_timeout_s = 600
"""
    )
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as agent:
            sid = await agent.session(work, policy="auto")
            fake.push(call("c_huge", "mcp__fake__huge", megabytes=40), call("c_big", "mcp__fake__huge", megabytes=6))
            fake.push({"content": "ok"})
            turn = asyncio.ensure_future(agent.turn(sid, "get it", timeout=600))
            await agent.wait_for(lambda: bool(agent.updates(sid, "toolCall")), timeout=120)
            answered = 0
            while not turn.done():
                listed = await asyncio.wait_for(agent.client.request("listSessions", {}), 60)
                assert any(s["sessionId"] == sid for s in listed["sessions"])
                answered += 1
                await asyncio.sleep(0.05)
            result = await turn
            assert result["stopReason"] == "endTurn", result
    assert answered >= 1
    huge, big = agent.updates(sid, "toolResult")
    assert huge["status"] == "error" and "over the 16 MB" in huge["content"], huge["content"][:500]
    assert big["status"] == "ok" and big.get("artifactId"), big["content"][:500]
    [created] = agent.updates(sid, "artifactCreated")
    assert created["toolCallId"] == "c_big" and created["totalBytes"] >= 6_000_000
