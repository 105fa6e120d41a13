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


def _answer(messages: list[dict]) -> dict:
    """Each session's answer takes a second: the first one still holds the cache when the second arrives."""
    last = next(m for m in reversed(messages) if m["role"] == "user")["content"]
    return {"content": f"{str(last).split(',', 1)[0]} is done", "delay": 1}


async def test_issue_42_two_sessions_at_once_the_full_shared_cache_is_a_prompt_too_long_with_the_slots_size(
    tmp_path: Path, folder
):
    """Session A holds the cache while session B asks: llama-server fails both (every slot being processed), and
    each takes it as a prompt-too-long: its retry is a smaller view (never the same request again), and the slot's
    size (``/props``) is learned as the window, said to come from there."""
    server = LlamaServer(n_ctx=SLOT)
    with FakeProvider(api_key=API_KEY, llama_server=server, answer=_answer) as fake:
        async with running_agent(tmp_path / "home", fake, THREADLINE_CONTEXT_WINDOW=CONFIGURED) as agent:
            first = await _imported(agent, folder, history(12))  # about 2,000 tokens and the tools
            second = await _imported(agent, folder, history(30))  # about 5,000: not beside the first
            turn_a = asyncio.create_task(agent.turn(first, "A, go on", timeout=120))
            await _until(lambda: len(fake.requests) == 1)  # A's request holds the cache
            turn_b = await agent.turn(second, "B, go on", timeout=120)
            turn_a_result = await turn_a
            later = await agent.turn(second, "B, and again", timeout=120)
    assert turn_a_result["stopReason"] == "endTurn", turn_a_result
    assert turn_b["stopReason"] == "endTurn", turn_b
    assert later["stopReason"] == "endTurn", later
    statuses = [r["status"] for r in fake.requests]
    assert statuses[:2] == [500, 500] and statuses[2:] == [200, 200, 200], statuses  # A failed with B
    assert server.collisions == 1
    b_refused = fake.requests[1]["body"]["messages"]
    b_retried = next(r["body"]["messages"] for r in fake.requests[2:4] if "B, go on" in json.dumps(r["body"]))
    assert estimate_prompt_tokens(b_retried) < estimate_prompt_tokens(b_refused) / 2  # smaller, not resent
    assert fake.gets == ["/props"] * 3  # beside the first call (its template), then once for each refusal
    compacted = [e["mode"] for e in events(agent.home, second, "contextCompacted")]
    assert compacted[0] == "fallback"  # then planned for the slot, the next turn compacts as usual
    said = [u["message"] for s in (first, second) for u in agent.updates(s, "notice")]
    assert any(f"({SLOT:,} tokens, as its /props says" in s and "larger than the server's" in s for s in said), said
    assert agent.updates(second, "usage")[-1]["contextWindowTokens"] == SLOT  # planned for the slot from then on


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
