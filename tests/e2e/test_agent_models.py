"""Per-session models end to end: ``[models.NAME]`` in config.toml, ``createSession {model}``, ``updateSession``
(from the next model call, a running turn's included, across provider kinds) and ``listModels``, against the
real server and the strict doubles."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from server.cli.client import RpcError
from tests.e2e.agent_support import API_KEY, Agent, running_agent
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_provider import FakeProvider

pytestmark = pytest.mark.asyncio(loop_scope="module")

READ = {"id": "call_read", "name": "read_file", "arguments": {"path": "notes.txt"}}
EDIT = {"id": "call_edit", "name": "write_file", "arguments": {"path": "out.txt", "content": "done\n"}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agent(tmp_path_factory) -> AsyncIterator[Agent]:
    home = tmp_path_factory.mktemp("home")
    with FakeProvider(api_key=API_KEY) as chat, FakeAnthropic(api_key=API_KEY) as claude:
        (home / "config.toml").write_text(f"""
[models.small]
model = "small-chat"
context_window_tokens = 9000
price = {{ input = 1.0, output = 2.0 }}

[models.big]
model = "deepseek-chat"
context_window_tokens = 64000

[models.claude]
provider = "anthropic"
base_url = "{claude.url}"
api_key = "{API_KEY}"
model = "claude-sonnet-4-5"
""")
        async with running_agent(home, chat) as a:
            a.claude = claude  # type: ignore[attr-defined]
            yield a


@pytest.fixture
def folder(folder: Path) -> Path:
    """The harness's workspace, with files to read."""
    path = folder
    (path / "notes.txt").write_text("notes\n")
    return path


async def window(agent: Agent, sid: str) -> int:
    return (await agent.client.request("getContextView", {"sessionId": sid}))["contextWindowTokens"]


async def test_listModels_gives_each_configured_model_with_its_window_and_price(agent):
    result = await agent.client.request("listModels", {})
    by_name = {m["name"]: m for m in result["models"]}
    assert list(by_name) == ["small", "big", "claude"]
    assert by_name["small"] == {
        "name": "small",
        "provider": "openai",
        "model": "small-chat",
        "contextWindowTokens": 9000,
        "price": {"input": 1.0, "output": 2.0},
    }
    assert by_name["big"]["price"]["cachedInput"] == 0.028  # the table's list price for deepseek-chat
    assert by_name["claude"]["provider"] == "anthropic" and by_name["claude"]["contextWindowTokens"] == 200_000
    assert result["default"]["name"] is None and result["default"]["model"] == "fake-model"
    assert "price" not in result["default"]  # no price known: absent, never zero


async def test_an_unknown_model_is_ModelNotFound_and_changes_nothing(agent, folder):
    with pytest.raises(RpcError) as exc:
        await agent.client.request("createSession", {"cwd": str(folder), "model": "nope"})
    assert exc.value.code == -32602 and exc.value.data["code"] == "ModelNotFound"
    assert "small" in exc.value.message
    sid = await agent.session(folder)
    with pytest.raises(RpcError) as exc:
        await agent.client.request("updateSession", {"sessionId": sid, "model": "nope", "approvalPolicy": "auto"})
    assert exc.value.data["code"] == "ModelNotFound"
    info = next(s for s in (await agent.client.request("listSessions", {}))["sessions"] if s["sessionId"] == sid)
    assert "model" not in info and "approvalPolicy" not in info


async def test_a_session_created_with_a_model_talks_to_it_and_is_viewed_for_its_window(agent, folder):
    agent.fake.reset()
    agent.fake.push({"content": "hi"})
    sid = (await agent.client.request("createSession", {"cwd": str(folder), "model": "small"}))["sessionId"]
    assert await window(agent, sid) == 9000
    result = await agent.turn(sid, "hello")
    assert result["stopReason"] == "endTurn" and result["usage"]["contextWindowTokens"] == 9000
    assert agent.chat_requests()[0]["body"]["model"] == "small-chat"
    assert result["usage"]["costUsd"] > 0  # the configured price
    info = next(s for s in (await agent.client.request("listSessions", {}))["sessions"] if s["sessionId"] == sid)
    assert info["model"] == "small"


async def test_updateSession_switches_the_model_and_policy_and_null_goes_back_to_the_default(agent, folder):
    agent.fake.reset()
    sid = (await agent.client.request("createSession", {"cwd": str(folder), "model": "small"}))["sessionId"]
    result = await agent.client.request("updateSession", {"sessionId": sid, "model": "big", "approvalPolicy": "auto"})
    sandbox = result.pop("sandbox")  # the session's sandbox as it applies now (B-SBX-2)
    assert {"mode", "enforced", "mechanism", "network"} <= set(sandbox)
    assert result == {"sessionId": sid, "model": "big", "approvalPolicy": "auto", "contextWindowTokens": 64000}
    assert await window(agent, sid) == 64000
    agent.fake.push({"content": "big answer"})
    await agent.turn(sid, "hello")
    assert agent.chat_requests()[-1]["body"]["model"] == "deepseek-chat"
    result = await agent.client.request("updateSession", {"sessionId": sid, "model": None})
    assert result["approvalPolicy"] == "auto" and "model" not in result  # only what was sent changes
    assert result["contextWindowTokens"] == await window(agent, sid)
    with pytest.raises(RpcError) as exc:
        await agent.client.request("updateSession", {"sessionId": "ses_missing", "model": "big"})
    assert exc.value.data["code"] == "SessionNotFound"


async def test_a_switch_during_a_turn_applies_from_its_next_model_call_across_provider_kinds(agent, folder):
    """Chat Completions for the first call; the switch is made while the turn waits for an approval; the call
    after the tool runs goes to the Anthropic double with the transcript converted (its strict rules pass)."""
    agent.fake.reset()
    agent.claude.reset()
    agent.fake.push({"tool_calls": [EDIT]})
    agent.claude.push({"content": "written"})
    sid = (await agent.client.request("createSession", {"cwd": str(folder), "model": "small"}))["sessionId"]

    async def switch_then_allow(method, params):
        await agent.client.request("updateSession", {"sessionId": sid, "model": "claude"})
        return {"decision": "allowOnce"}

    agent.client.on_request = switch_then_allow
    try:
        result = await asyncio.wait_for(agent.client.request("submitTurn", {"sessionId": sid, "text": "write"}), 30)
    finally:
        agent.client.on_request = agent._answer
    assert result["stopReason"] == "endTurn", result
    assert len(agent.chat_requests()) == 1
    (request,) = agent.claude.requests
    assert not request["rejected"], request.get("error")
    assert request["body"]["model"] == "claude-sonnet-4-5"
    assert [u["contextWindowTokens"] for u in agent.updates(sid, "usage")] == [9000, 200_000]
    assert (folder / "out.txt").read_text() == "done\n"


async def test_listSessions_gives_the_stored_totals_and_a_restarted_server_goes_on_counting(tmp_path, folder):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[provider]\nprice = { input = 2.0, output = 8.0 }\n")
    with FakeProvider(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as first:
            sid = await first.session(folder)
            assert "totals" not in (await first.client.request("listSessions", {}))["sessions"][0]
            await first.turn(sid, "one")
            before = first.updates(sid, "usage")[-1]["totals"]
            [info] = (await first.client.request("listSessions", {}))["sessions"]
            assert info["totals"] == before and before["costUsd"] > 0
        async with running_agent(home, fake) as second:
            await second.turn(sid, "two")
            call = second.updates(sid, "usage")[-1]
            assert call["totals"]["inputTokens"] == before["inputTokens"] + call["inputTokens"]
            assert call["totals"]["costUsd"] == pytest.approx(before["costUsd"] + call["costUsd"], abs=1e-6)
            [info] = (await second.client.request("listSessions", {}))["sessions"]
            assert info["totals"] == call["totals"]
