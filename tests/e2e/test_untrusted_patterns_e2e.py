""" "One regex freezes the whole server": the model's catastrophic regex runs against a real folder while
the same client keeps using the real server. The search runs in a worker process that is killed at its deadline,
so the server answers other requests meanwhile and the tool result says the search timed out.

No timing is measured: the order of events shows the server answered while the search was still running.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.agent_support import agent_fixture
from tests.fakes.fake_provider import FakeProvider

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEADLINE = 8  # seconds the server gives one pattern job (THREADLINE_PATTERN_TIMEOUT)


agent = agent_fixture(double=FakeProvider, env={"THREADLINE_PATTERN_TIMEOUT": str(DEADLINE)})


def evil_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "evil.txt").write_text("a" * 64 + "!\n")  # (a+)+$ backtracks 2^64 ways on every start position
    return folder


async def test_search_files_catastrophic_regex_does_not_stop_the_server_answering(agent, tmp_path):
    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_re", "name": "search_files", "arguments": {"pattern": "(a+)+$"}}]},
        {"content": "done"},
    )
    sid = await agent.session(evil_folder(tmp_path), policy="auto")
    _, turn = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "search"})
    await agent.wait_for(lambda: agent.updates(sid, "toolCall"), timeout=30)
    listed = await asyncio.wait_for(agent.client.request("listSessions", {}), 30)
    assert sid in [s["sessionId"] for s in listed["sessions"]]
    assert not agent.updates(sid, "toolResult"), "listSessions was answered only after the search ended"
    result = await asyncio.wait_for(turn, 60)
    assert result["stopReason"] == "endTurn"
    [tool] = agent.updates(sid, "toolResult")
    assert tool["status"] == "ok" and f"search stopped after {DEADLINE} s" in tool["content"], tool


async def test_cancelTurn_during_a_catastrophic_search_is_answered_and_ends_the_turn(agent, tmp_path):
    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_re", "name": "search_files", "arguments": {"pattern": "(a+)+$"}}]},
        {"content": "not reached"},
    )
    sid = await agent.session(evil_folder(tmp_path), policy="auto")
    _, turn = agent.client.start_request("submitTurn", {"sessionId": sid, "text": "search"})
    await agent.wait_for(lambda: agent.updates(sid, "toolCall"), timeout=30)
    cancelled = await asyncio.wait_for(agent.client.request("cancelTurn", {"sessionId": sid}), 30)
    assert cancelled["cancelled"] is True
    assert (await asyncio.wait_for(turn, 30))["stopReason"] == "cancelled"
    assert len(agent.chat_requests()) == 1
