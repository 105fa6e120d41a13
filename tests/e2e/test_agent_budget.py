"""B-BUDGET-1 through the real server: at a 1M window old tool outputs are cleared on the budget (not the window),
``getContextView`` reports the budget and why each output went, the model's requests carry the placeholders, the
meter's usage update names the budget, and a restarted server keeps them cleared."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.wire_text import PLACEHOLDER_PREFIX
from tests.e2e.agent_support import API_KEY, new_fake, request_messages, running_agent

pytestmark = pytest.mark.asyncio(loop_scope="function")

FILES = 5


def _reads() -> list[dict]:
    items: list[dict] = [
        {"tool_calls": [{"id": f"r{i}", "name": "read_file", "arguments": {"path": f"f{i}.txt"}}]} for i in range(FILES)
    ]
    return [*items, {"content": "read them all"}]


def _cleared(messages: list[dict]) -> list[str]:
    return [
        m["tool_call_id"]
        for m in messages
        if m["role"] == "tool" and str(m.get("content", "")).startswith(PLACEHOLDER_PREFIX)
    ]


async def test_B_BUDGET_1_get_context_view_reports_the_budget_and_each_cleared_output(tmp_path: Path):
    home, folder = tmp_path / "home", tmp_path / "ws"
    folder.mkdir()
    for i in range(FILES):
        (folder / f"f{i}.txt").write_text(f"line {i} of a file the agent reads once\n" * 600)
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW="1000000") as agent:
            sid = await agent.session(folder)
            fake.push(*_reads())
            assert (await agent.turn(sid, "read the five files"))["stopReason"] == "endTurn"
            view = await agent.client.request("getContextView", {"sessionId": sid})
            assert view["mode"] == "full"  # far under the window's threshold: no compaction
            budget = view["budget"]
            assert budget["source"] == "auto" and "cache write" in budget["reason"]
            cleared = view["breakdown"]["cleared"]
            assert [c["toolCallId"] for c in cleared] == [f"r{i}" for i in range(FILES - 1)]
            assert all(c["tool"] == "read_file" and c["tokens"] > 1000 and c["reason"] for c in cleared)
            assert _cleared(view["messages"]) == [c["toolCallId"] for c in cleared]
            last = request_messages(agent.chat_requests()[-1])
            assert _cleared(last) == [f"r{i}" for i in range(FILES - 1)]
            placeholder = next(m["content"] for m in last if m.get("tool_call_id") == "r0")
            assert placeholder.endswith('to see it again: read_file {"path": "f0.txt"}')
            assert {u.get("budgetSource") for u in agent.updates(sid, "usage")} == {"auto"}

        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW="1000000") as agent:  # a restarted server
            again = await agent.client.request("getContextView", {"sessionId": sid})
            assert again["messages"] == view["messages"]  # once cleared, cleared (B-CACHE-3)
