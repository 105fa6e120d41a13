"""``compactSession`` end to end: compact on request, with a focus, over the real server and the model double."""

from __future__ import annotations

import pytest

from tests.e2e.agent_support import agent_fixture, events, request_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()
FOCUS = "keep the API decisions: /v2 paths, snake_case fields"


async def test_compactSession_makes_the_next_request_start_from_a_summary_with_the_focus(agent, tmp_path):
    sid = await agent.session(tmp_path, policy="auto")
    agent.fake.reset()
    agent.fake.push(*({"content": f"answer {i}: " + "detail " * 300} for i in range(4)))
    for i in range(3):
        assert (await agent.turn(sid, f"goal {i}: design the endpoint " + "x " * 200))["stopReason"] == "endTurn"
    result = await agent.client.request("compactSession", {"sessionId": sid, "focus": FOCUS})
    assert result["compacted"] is True and result["mode"] == "summarized"
    assert result["afterTokens"] < result["beforeTokens"]
    assert f"Focus:\n{FOCUS}" in result["summary"] and "- goal 0: design the endpoint" in result["summary"]
    update = agent.updates(sid, "contextCompacted")[-1]
    assert update["summary"] == result["summary"]
    # R-OBS-1: announced as starting before the hooks and the summary run, then done, in that order
    starting, done = [u for u in agent.updates(sid) if u["kind"].startswith("contextCompact")][-2:]
    assert starting == {"kind": "contextCompacting", "trigger": "manual", "beforeTokens": result["beforeTokens"]}
    assert done == update
    stored = events(agent.home, sid, "contextCompacted")[-1]
    assert (
        stored["requested"] is True
        and stored["focus"] == FOCUS
        and stored["compaction"]["summary"] == result["summary"]
    )
    before = len(agent.chat_requests())
    assert (await agent.turn(sid, "goal 3: now write it"))["stopReason"] == "endTurn"
    sent = request_messages(agent.chat_requests()[before])
    summaries = [m for m in sent if m["role"] == "system" and m["content"] == result["summary"]]
    assert len(summaries) == 1  # the window is large: without the request, this would have been a full view
    assert sent[-1] == {"role": "user", "content": "goal 3: now write it"}


async def test_compactSession_with_nothing_older_than_the_tail_changes_nothing(agent, tmp_path):
    sid = await agent.session(tmp_path)
    result = await agent.client.request("compactSession", {"sessionId": sid})
    assert result == {"compacted": False, "beforeTokens": 0, "afterTokens": 0, "mode": "full"}
    assert events(agent.home, sid, "contextCompacted") == []


async def test_compactSession_bad_input_is_a_clear_error(agent, tmp_path):
    sid = await agent.session(tmp_path)
    with pytest.raises(Exception) as err:
        await agent.client.request("compactSession", {"sessionId": sid, "focus": "x" * 5000})
    assert "-32602" in str(err.value) or getattr(err.value, "code", None) == -32602
    with pytest.raises(Exception) as err:
        await agent.client.request("compactSession", {"sessionId": "ses_nope"})
    assert "SessionNotFound" in str(getattr(err.value, "data", "")) or "SessionNotFound" in str(err.value)
