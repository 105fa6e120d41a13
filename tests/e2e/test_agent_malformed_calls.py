"""A malformed tool call from the model must not brick the session: truncated JSON arguments and
duplicate call ids, stored as they came (R-SRC-1), used to be re-sent on every later request and rejected with
HTTP 400 forever. The view repair makes every stored call sendable (R-REP-1, R-REP-2)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.agent_support import agent_fixture, request_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()


def assert_sendable(messages: list[dict]) -> None:
    for m in messages:
        ids = [c["id"] for c in m.get("tool_calls") or ()]
        assert len(ids) == len(set(ids)), f"duplicate tool call ids sent: {ids}"
        for call in m.get("tool_calls") or ():
            json.loads(call["function"]["arguments"])  # valid JSON, or the provider answers 400


async def test_R_REP_1_truncated_arguments_and_duplicate_ids_are_sent_valid_and_the_session_goes_on(agent, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_t", "name": "write_file", "arguments": '{"path": "a.txt", "content": "hel'}]},
        {
            "tool_calls": [
                {"id": "call_d", "name": "list_files", "arguments": {}},
                {"id": "call_d", "name": "list_files", "arguments": {"pattern": "*.md"}},
            ]
        },
        {"content": "first turn done"},
        {"content": "second turn done"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "go"))["stopReason"] == "endTurn"
    second = await agent.turn(sid, "and again")
    assert second["stopReason"] == "endTurn", second
    requests = agent.chat_requests()
    for request in requests[1:]:
        assert_sendable(request_messages(request))
    last = request_messages(requests[-1])
    [broken] = [c for m in last for c in m.get("tool_calls") or () if c["function"]["name"] == "write_file"]
    raw = '{"path": "a.txt", "content": "hel'
    # kept, as a string (Anthropic's tool_use input must be an object: the string goes under "arguments")
    kept = {"arguments": raw} if requests[-1]["kind"] == "anthropic" else raw
    assert json.loads(broken["function"]["arguments"]) == kept
    results = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    assert results["call_t"].startswith("Tool failed: Invalid arguments") or "Invalid" in results["call_t"]
    assert set(results) == {"call_t", "call_d", "call_d__2"}
    assert not (folder / "a.txt").exists()
