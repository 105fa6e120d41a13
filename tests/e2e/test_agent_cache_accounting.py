"""B-CACHE-5 end to end: the provider's cached-token figures reach the ``usage`` update, the totals, the
``submitTurn`` result and the stored events. The real server over stdio; the fake provider caches message
prefixes the way OpenAI and DeepSeek do (see tests/fakes/fake_provider.py) and reports them in either's field.
Under ``THREADLINE_PROVIDER=anthropic`` (or ``openai-responses``) the first test runs against that kind's double,
which reports ``cache_read_input_tokens`` (or ``input_tokens_details.cached_tokens``); the DeepSeek field and a
provider reporting no cache figures are Chat Completions cases, so those two always run against its double."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_support import Agent, agent_fixture, read_db, request_messages
from tests.fakes.fake_provider import FakeProvider

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()


# two agents on the Chat Completions double whatever THREADLINE_PROVIDER says
deepseek_agent = agent_fixture(double=FakeProvider, cache_style="deepseek")
silent_agent = agent_fixture(double=FakeProvider, cache_style="none")


def cached_reported(record: dict[str, Any]) -> int:
    """The cached-input figure the double reported for one model call, in its kind's own field."""
    usage = record["usage"]
    if record["kind"] == "anthropic":
        return usage["cache_read_input_tokens"]
    if record["kind"] == "openai-responses":
        return usage["input_tokens_details"]["cached_tokens"]
    return usage["prompt_tokens_details"]["cached_tokens"]


READ = {"tool_calls": [{"id": "call_read", "name": "read_file", "arguments": {"path": "notes.txt"}}]}


@pytest.fixture
def folder(folder: Path) -> Path:
    """The harness's workspace, with files to read."""
    path = folder
    (path / "notes.txt").write_text("the cache keeps prefixes\n" * 40)
    return path


async def two_call_turn(a: Agent, folder: Path) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """One turn of two model calls: the second request is the first plus the tool call and its result."""
    a.fake.reset()
    a.fake.push(READ, {"content": "They keep prefixes."})
    sid = await a.session(folder, policy="auto")
    result = await a.turn(sid, "what do the notes say?")
    assert result["stopReason"] == "endTurn", result
    first, second = (request_messages(r) for r in a.chat_requests())
    assert second[: len(first)] == first  # the second request extends the first
    return sid, result, a.updates(sid, "usage")


async def test_B_CACHE_5_the_second_call_reports_the_cached_prefix_the_provider_reported(agent, folder):
    sid, result, usages = await two_call_turn(agent, folder)
    reported = [cached_reported(r) for r in agent.chat_requests()]
    assert len(usages) == 2 and reported[0] == 0 and reported[1] > 0
    assert [u["cachedInputTokens"] for u in usages] == reported
    assert usages[1]["cachedInputTokens"] < usages[1]["inputTokens"]
    assert usages[1]["totals"]["cachedInputTokens"] == sum(reported)
    assert usages[1]["totals"]["inputTokens"] == sum(u["inputTokens"] for u in usages)
    assert result["usage"]["cachedInputTokens"] == sum(reported)

    # stored per call with the session
    stored = (await agent.client.request("readEvents", {"sessionId": sid, "kinds": ["usage"]}))["events"]
    assert [e["payload"]["cachedInputTokens"] for e in stored] == reported
    assert [e["payload"]["inputTokens"] for e in stored] == [u["inputTokens"] for u in usages]
    assert all(e["turnId"] == result["turnId"] for e in stored)

    # the next turn's first call resends the whole conversation so far: cached again, totals add up
    agent.fake.push({"content": "Nothing else."})
    await agent.turn(sid, "anything else?")
    third = agent.updates(sid, "usage")[-1]
    assert third["cachedInputTokens"] == cached_reported(agent.chat_requests()[-1])
    assert third["cachedInputTokens"] > reported[1]
    assert third["totals"]["cachedInputTokens"] == sum(reported) + third["cachedInputTokens"]


async def test_B_CACHE_5_each_calls_usage_event_is_stored_in_its_answers_transaction(agent, folder):
    """A model call's writes are one transaction (one round trip to the database): its answer and its usage event
    carry the one stamp of that transaction, and the tool result, stored before the next call, one of its own."""
    sid, _, _ = await two_call_turn(agent, folder)
    stamps = read_db(
        agent.home,
        "SELECT role, created_at FROM messages WHERE session_id = ? AND role IN ('assistant', 'tool') ORDER BY seq",
        sid,
    )
    usage = read_db(
        agent.home, "SELECT created_at FROM events WHERE session_id = ? AND kind = 'usage' ORDER BY id", sid
    )
    assert [role for role, _ in stamps] == ["assistant", "tool", "assistant"]
    assert [stamp for (stamp,) in usage] == [stamp for role, stamp in stamps if role == "assistant"]


async def test_B_CACHE_5_deepseek_prompt_cache_hit_tokens_are_reported(deepseek_agent, folder):
    _, result, usages = await two_call_turn(deepseek_agent, folder)
    reported = [r["usage"]["prompt_cache_hit_tokens"] for r in deepseek_agent.chat_requests()]
    assert reported[1] > 0 and [u["cachedInputTokens"] for u in usages] == reported
    assert usages[-1]["totals"]["cachedInputTokens"] == result["usage"]["cachedInputTokens"] == sum(reported)


async def test_B_CACHE_5_a_provider_without_cache_figures_gives_0(silent_agent, folder):
    sid, result, usages = await two_call_turn(silent_agent, folder)
    assert all("cachedInputTokens" not in u for u in usages)  # absent on the wire: nothing was reported
    assert usages[-1]["totals"]["cachedInputTokens"] == 0 and result["usage"]["cachedInputTokens"] == 0
    stored = (await silent_agent.client.request("readEvents", {"sessionId": sid, "kinds": ["usage"]}))["events"]
    assert len(stored) == 2 and all("cachedInputTokens" not in e["payload"] for e in stored)
