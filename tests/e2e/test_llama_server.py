"""A real llama.cpp server, as a local-model user meets it, against the real Threadline server: the double plays
``llama-server`` byte for byte where its bytes are known (tests/fakes/llama_server.py): ``/props``, its slots'
shared KV cache and its HTTP 500 "Context size has been exceeded.", its 404 "File Not Found"."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from server.providers.llama_props import TOOLS_DROPPED, parse_props, props_url
from tests.e2e.agent_support import API_KEY, events, model_requests, running_agent
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.llama_server import CONTEXT_EXCEEDED, LlamaServer
from tests.fakes.openai_rules import estimate_prompt_tokens

pytestmark = pytest.mark.asyncio

SLOT = 6000  # llama-server -c 6000 with -np left to auto: 4 slots of 6,000 sharing one KV cache of 6,000
CONFIGURED = "32000"  # the window the user configured, larger than a slot's


def history(exchanges: int, words: int = 40) -> list[dict]:
    messages: list[dict] = []
    for n in range(exchanges):
        messages += [
            {"role": "user", "content": f"question {n}: " + "details " * words},
            {"role": "assistant", "content": f"answer {n}: " + "prose " * words},
        ]
    return messages


async def _until(predicate, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


async def _imported(agent, folder: Path, messages: list[dict]) -> str:
    created = await agent.client.request("importSession", {"cwd": str(folder), "messages": messages})
    return created["sessionId"]


async def test_issue_42_two_sessions_at_once_the_full_shared_cache_is_a_prompt_too_long_with_the_slots_size(
    tmp_path: Path, folder
):
    """Session A holds the cache while session B asks: B's 500 is a prompt-too-long, so B's one retry is a smaller
    view (never the same request again), and the slot's size (``/props``) is learned as the window."""
    server = LlamaServer(n_ctx=SLOT)
    with FakeProvider(api_key=API_KEY, llama_server=server) as fake:
        async with running_agent(tmp_path / "home", fake, THREADLINE_CONTEXT_WINDOW=CONFIGURED) as agent:
            first = await _imported(agent, folder, history(12))  # about 2,000 tokens
            second = await _imported(agent, folder, history(30))  # about 5,000: not beside the first
            fake.push({"content": "A is done", "delay": 3}, {"content": "B is done"})
            turn_a = asyncio.create_task(agent.turn(first, "go on, A", timeout=120))
            await _until(lambda: len(fake.requests) == 1)  # A's request holds the cache
            turn_b = await agent.turn(second, "go on, B", timeout=120)
            turn_a_result = await turn_a
            later = await agent.turn(second, "and again", timeout=120)
    assert turn_a_result["stopReason"] == "endTurn", turn_a_result
    assert turn_b["stopReason"] == "endTurn", turn_b
    assert later["stopReason"] == "endTurn", later
    statuses = [r["status"] for r in fake.requests]
    assert statuses == [200, 500, 200, 200], statuses
    refused, retried = [estimate_prompt_tokens(r["body"]["messages"]) for r in fake.requests[1:3]]
    assert retried < refused / 2  # a smaller view, not the same request retried
    assert fake.gets == ["/props", "/props"]  # beside the first call (its template), then for the slot's size
    compacted = [e["mode"] for e in events(agent.home, second, "contextCompacted")]
    assert compacted[0] == "fallback"  # then planned for the slot, the next turn compacts as usual
    said = [u["message"] for u in agent.updates(second, "notice")]
    assert any(f"({SLOT:,} tokens" in s and "larger than the server's" in s for s in said), said
    assert agent.updates(second, "usage")[-1]["contextWindowTokens"] == SLOT  # planned for the slot from then on


async def test_issue_42_a_fallback_no_smaller_than_the_view_is_not_announced_as_a_compaction(tmp_path: Path, folder):
    """The cache is held by another session and this one is short: its fallback is no smaller, so no
    "compacted 2.2k -> 2.3k"; the turn fails as too long, saying why."""
    server = LlamaServer(n_ctx=SLOT)
    with FakeProvider(api_key=API_KEY, llama_server=server) as fake:
        async with running_agent(tmp_path / "home", fake, THREADLINE_CONTEXT_WINDOW=CONFIGURED) as agent:
            big = await _imported(agent, folder, history(24))  # about 4,000 tokens held
            short = await agent.session(folder)
            fake.push({"content": "done", "delay": 4})
            holding = asyncio.create_task(agent.turn(big, "a long one", timeout=120))
            await _until(lambda: len(fake.requests) == 1)
            result = await agent.turn(short, "a short question " + "word " * 2400, timeout=120)
            await holding
    assert result["stopReason"] == "error" and result["error"]["code"] == "contextTooLong", result
    assert [r["status"] for r in fake.requests[1:]] == [500, 500]
    assert not agent.updates(short, "contextCompacted") and not agent.updates(short, "contextCompacting")
    assert not events(agent.home, short, "contextCompacted")
    said = [u["message"] for u in agent.updates(short, "notice")]
    assert any("which is no smaller" in s for s in said), said


@pytest.mark.parametrize("supports_tools", [False, True])
async def test_issue_42_tools_a_template_drops_are_told_once(tmp_path: Path, folder, supports_tools):
    server = LlamaServer(supports_tools=supports_tools)
    with FakeProvider(api_key=API_KEY, llama_server=server) as fake:
        fake.push({"content": "I cannot see any tools."}, {"content": "Still none."}, {"content": "Nope."})
        async with running_agent(tmp_path / "home", fake) as agent:
            sid = await agent.session(folder)
            assert (await agent.turn(sid, "list the files"))["stopReason"] == "endTurn"
            assert (await agent.turn(sid, "and now?"))["stopReason"] == "endTurn"
            other = await agent.session(folder)
            assert (await agent.turn(other, "anything?"))["stopReason"] == "endTurn"
    assert all(r["body"].get("tools") for r in model_requests(fake))  # sent: the server is what drops them
    said = [u["message"] for s in (sid, other) for u in agent.updates(s, "notice")]
    assert said == ([TOOLS_DROPPED] if not supports_tools else [])
    assert fake.gets == ["/props"]  # asked once, beside the first call


async def test_issue_42_a_wrong_url_path_is_explained_with_the_path_not_the_model(tmp_path: Path, folder):
    with FakeProvider(api_key=API_KEY, llama_server=LlamaServer()) as fake:
        root = fake.url.removesuffix("/v1")  # the user left /v1 out of the base URL
        async with running_agent(tmp_path / "home", fake, THREADLINE_BASE_URL=root) as agent:
            sid = await agent.session(folder)
            result = await agent.turn(sid, "hello")
    assert result["stopReason"] == "error", result
    error = result["error"]
    assert error["code"] == "not_found"
    assert f"Nothing answers at {root}/chat/completions (HTTP 404): the path is wrong" in error["message"]
    assert "/v1" in error["message"] and "Model '" not in error["message"]
    assert "File Not Found" in error["message"]


async def test_the_double_answers_as_llama_server_does():
    """The bytes the double sends are llama-server's; /props parses as Threadline reads it."""
    assert CONTEXT_EXCEEDED == (
        b'{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}'
    )
    assert props_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    props = parse_props(json.loads(LlamaServer(n_ctx=4096, supports_tools=False).props()))
    assert props is not None and props.slot_tokens == 4096 and props.supports_tools is False
    assert parse_props({"error": "nope"}) is None
