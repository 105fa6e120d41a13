"""The agent loop over the native providers end to end: the real server over stdio, configured with
``THREADLINE_PROVIDER=anthropic`` (or ``openai-responses``), against the strict doubles in tests/fakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.agent_support import agent_fixture, events
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_responses import FakeResponses

pytestmark = pytest.mark.asyncio(loop_scope="module")

READ = {"id": "toolu_read", "name": "read_file", "arguments": {"path": "notes.txt"}}


claude = agent_fixture(
    double=FakeAnthropic,
    config="[provider]\nthinking_budget_tokens = 1024\n",
    env={"THREADLINE_PROVIDER": "anthropic", "THREADLINE_MODEL": "claude-sonnet-4-5"},
    context_window=6000,
)
codex = agent_fixture(
    double=FakeResponses, env={"THREADLINE_PROVIDER": "openai-responses", "THREADLINE_MODEL": "gpt-5-codex"}
)


@pytest.fixture
def folder(folder: Path) -> Path:
    """The harness's workspace, with files to read."""
    path = folder
    (path / "notes.txt").write_text("the cache keeps prefixes\n" * 40)
    (path / "b.txt").write_text("bee\n")
    return path


async def test_a_thinking_tool_turn_round_trips_its_signature_and_reads_the_cache_it_wrote(claude, folder):
    claude.fake.reset()
    claude.fake.push({"thinking": "Read the notes.", "tool_calls": [READ]}, {"content": "They keep prefixes."})
    sid = await claude.session(folder, policy="auto")
    result = await claude.turn(sid, "what do the notes say?")
    assert result["stopReason"] == "endTurn", result
    _first, second = claude.fake.requests
    assert not second["rejected"], second["error"]
    assert second["body"]["messages"][1]["content"][0]["type"] == "thinking"  # sent back, signature checked
    items = await claude.transcript(sid)
    answer = next(i for i in items if i["role"] == "assistant" and i.get("toolCalls"))
    assert answer["reasoning"] == "Read the notes." and answer["content"] in ("", None)  # never shown as text
    usages = claude.updates(sid, "usage")
    assert usages[0]["cacheWriteTokens"] > 0 and usages[0]["cachedInputTokens"] == 0
    assert usages[1]["cachedInputTokens"] == second["usage"]["cache_read_input_tokens"] > 0
    totals = usages[-1]["totals"]
    assert totals["cacheWriteTokens"] == sum(u["cacheWriteTokens"] for u in usages)
    assert totals["cachedInputTokens"] == sum(u["cachedInputTokens"] for u in usages)
    # a listed model has a price: each call and the session carry their cost, the turn its own
    assert all(u["costUsd"] > 0 for u in usages)
    assert totals["costUsd"] == pytest.approx(sum(u["costUsd"] for u in usages), abs=1e-6)
    assert result["usage"]["costUsd"] == pytest.approx(totals["costUsd"], abs=1e-6)
    assert [e["cacheWriteTokens"] for e in events(claude.home, sid, "usage")] == [u["cacheWriteTokens"] for u in usages]


async def test_parallel_calls_are_answered_in_one_user_turn(claude, folder):
    claude.fake.reset()
    claude.fake.push(
        {"tool_calls": [READ, {"id": "toolu_b", "name": "read_file", "arguments": {"path": "b.txt"}}]},
        {"content": "Both."},
    )
    sid = await claude.session(folder, policy="auto")
    assert (await claude.turn(sid, "read both"))["stopReason"] == "endTurn"
    last = claude.fake.requests[-1]
    assert not last["rejected"], last["error"]
    results = last["body"]["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in results if b["type"] == "tool_result"] == ["toolu_read", "toolu_b"]


async def test_prompt_too_long_triggers_the_fallback_retry(claude, folder):
    claude.fake.reset()
    sid = await claude.session(folder, policy="auto")
    claude.fake.push({"ptl": True}, {"content": "short"})
    assert (await claude.turn(sid, "hello"))["stopReason"] == "endTurn"
    statuses = [r["status"] for r in claude.fake.requests]
    assert statuses[0] == 400 and "prompt is too long" in str(claude.fake.requests[0]["error"])
    assert len(statuses) == 2
    # one short message: the fallback is no smaller, so the retry is not announced as a compaction
    assert not claude.updates(sid, "contextCompacted")
    assert any("which is no smaller" in n["message"] for n in claude.updates(sid, "notice"))


async def test_prompt_too_long_on_a_long_session_retries_with_a_smaller_fallback(claude, folder):
    claude.fake.reset()
    sid = await claude.session(folder, policy="auto")
    claude.fake.push(*({"content": f"answer {i}: " + "detail " * 60} for i in range(6)))
    for i in range(6):
        assert (await claude.turn(sid, f"step {i}: " + "word " * 60))["stopReason"] == "endTurn"
    claude.fake.push({"ptl": True}, {"content": "short"})
    assert (await claude.turn(sid, "hello"))["stopReason"] == "endTurn"
    compacted = claude.updates(sid, "contextCompacted")
    assert compacted and compacted[-1]["mode"] == "fallback"
    assert compacted[-1]["afterTokens"] < compacted[-1]["beforeTokens"]


async def test_an_overloaded_529_is_retried_with_a_notice(claude, folder):
    claude.fake.reset()
    claude.fake.push(
        {
            "error": {
                "status": 529,
                "type": "overloaded_error",
                "message": "Overloaded",
                "headers": {"retry-after": "0"},
            }
        },
        {"content": "back"},
    )
    sid = await claude.session(folder)
    result = await claude.turn(sid, "hi")
    assert result["stopReason"] == "endTurn"
    assert any("retrying" in n["message"] for n in claude.updates(sid, "notice"))


async def test_a_responses_tool_turn_keeps_no_server_state_and_names_the_session_cache(codex, folder):
    codex.fake.reset()
    codex.fake.push({"reasoning": "Look first.", "tool_calls": [{**READ, "id": "call_read"}]}, {"content": "Done."})
    sid = await codex.session(folder, policy="auto")
    result = await codex.turn(sid, "what do the notes say?")
    assert result["stopReason"] == "endTurn", result
    _first, second = codex.fake.requests
    assert not second["rejected"], second["error"]
    assert second["body"]["store"] is False and second["body"]["prompt_cache_key"] == sid
    assert [i["type"] for i in second["body"]["input"]][-3:] == ["reasoning", "function_call", "function_call_output"]
    usages = codex.updates(sid, "usage")
    assert usages[1]["cachedInputTokens"] > 0 and all(u["costUsd"] > 0 for u in usages)
