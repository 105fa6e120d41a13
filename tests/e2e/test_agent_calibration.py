"""B-TOK-4 over the real server, against a provider double that counts 1.4x chars/4 (messages and tool
definitions): what ``getContextView`` shows is in the provider's tokens, a window equal to the provider's real
limit is never overrun, and the inspector's messages are the next request's, byte for byte, across compactions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.agent_support import API_KEY, request_messages, running_agent
from tests.fakes.fake_provider import FakeProvider

pytestmark = pytest.mark.asyncio(loop_scope="function")

FACTOR = 1.4


def _prompt_tokens(record: dict) -> int:
    return record["usage"]["prompt_tokens"]


async def test_B_TOK_4_the_views_estimate_of_the_next_request_is_the_providers_count_within_10_percent(
    tmp_path: Path,
):
    home, folder = tmp_path / "home", tmp_path / "ws"
    folder.mkdir()
    with FakeProvider(api_key=API_KEY, token_factor=FACTOR) as fake:
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW="200000") as agent:
            sid = await agent.session(folder)
            before = await agent.client.request("getContextView", {"sessionId": sid})
            # before any answer nothing is learned: the plain (conservative, B-TOK-3) estimate, factor 1
            assert before["calibration"]["factor"] == 1.0 and before["calibration"].get("samples", 0) == 0
            fake.push(*({"content": f"answer {i}: " + "the module reads its config file. " * 40} for i in range(4)))
            for i in range(3):
                assert (await agent.turn(sid, f"question {i}: " + "why does it fail? " * 30))["stopReason"] == "endTurn"
            view = await agent.client.request("getContextView", {"sessionId": sid})
            assert view["calibration"]["samples"] == 3 and view["calibration"]["factor"] > 1.0
            shown = view["estimatedTokens"] + view["reservedTokens"]
            assert (await agent.turn(sid, "ok"))["stopReason"] == "endTurn"
            reported = _prompt_tokens(fake.requests[-1])
            assert abs(shown - reported) <= 0.10 * reported, (shown, reported)
            parts = view["breakdown"]
            assert parts["toolDefinitions"] == view["reservedTokens"]
            assert view["thresholdTokens"] <= view["contextWindowTokens"]


async def test_B_TOK_4_a_window_equal_to_the_providers_limit_is_never_overrun(tmp_path: Path):
    home, folder = tmp_path / "home", tmp_path / "ws"
    folder.mkdir()
    window = 6000
    with FakeProvider(api_key=API_KEY, token_factor=FACTOR, context_window=window) as fake:
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW=str(window)) as agent:
            sid = await agent.session(folder)
            fake.push(*({"content": f"answer {i}: " + "detail " * 120} for i in range(10)))
            for i in range(10):
                assert (await agent.turn(sid, f"goal {i}: " + "x " * 120))["stopReason"] == "endTurn"
            assert not [r for r in fake.requests if r["rejected"]], "a request went over the provider's window"
            assert max(_prompt_tokens(r) for r in fake.requests) <= window
            view = await agent.client.request("getContextView", {"sessionId": sid})
            assert view["compactions"], "the small window compacted"
            assert view["estimatedTokens"] + view["reservedTokens"] <= window


async def test_R_PIPE_3_the_inspectors_messages_are_the_next_requests_byte_for_byte_across_compactions(
    tmp_path: Path,
):
    home, folder = tmp_path / "home", tmp_path / "ws"
    folder.mkdir()
    with FakeProvider(api_key=API_KEY, token_factor=FACTOR) as fake:
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW="6000") as agent:
            sid = await agent.session(folder)
            fake.push(*({"content": f"answer {i}: " + "detail " * 300} for i in range(12)))
            compared = 0
            for i in range(10):
                if i == 6:
                    assert (await agent.client.request("compactSession", {"sessionId": sid}))["compacted"]
                view = await agent.client.request("getContextView", {"sessionId": sid})
                announced = len(agent.updates(sid, "contextCompacted"))
                assert (await agent.turn(sid, f"goal {i}: " + "x " * 80))["stopReason"] == "endTurn"
                if i == 0 or len(agent.updates(sid, "contextCompacted")) > announced:
                    continue  # the first turn adds the project context; a turn whose message made a new compaction
                sent = request_messages(agent.chat_requests()[-1])
                assert json.dumps(sent[:-1]) == json.dumps(view["messages"]), f"turn {i}"
                assert sent[-1]["role"] == "user"
                compared += 1
            events = await agent.client.request("getContextView", {"sessionId": sid})
            assert len(events["compactions"]) >= 2 and compared >= 4
