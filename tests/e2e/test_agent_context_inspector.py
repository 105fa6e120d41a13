"""The context inspector over the real server: ``getContextView.breakdown`` splits the request's estimate
exactly (the relation protocol/README.md states) and ``compactions`` lists automatic and manual compactions."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.context import estimate_message_tokens
from server.project.prompt import SYSTEM_PROMPT
from tests.e2e.agent_support import API_KEY, new_fake, request_messages, running_agent

pytestmark = pytest.mark.asyncio(loop_scope="function")

PARTS = ("systemPrompt", "projectContext", "summary", "messages", "placeholders")


def check_relation(view: dict) -> dict:
    parts = view["breakdown"]
    assert all(isinstance(v, int) and v >= 0 for v in parts.values())
    assert sum(parts[k] for k in PARTS) == view["estimatedTokens"]
    assert parts["toolDefinitions"] == view["reservedTokens"]
    assert parts["free"] == max(0, view["contextWindowTokens"] - view["estimatedTokens"] - view["reservedTokens"])
    return parts


async def test_breakdown_sums_to_the_estimate_and_compactions_list_auto_and_manual(tmp_path: Path):
    home, folder = tmp_path / "home", tmp_path / "ws"
    folder.mkdir()
    (folder / "AGENTS.md").write_text("Run `make check` before you say a change is done.\n" * 20)
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW="5000") as agent:
            sid = await agent.session(folder)
            fake.push({"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "AGENTS.md"}}]})
            fake.push(*({"content": f"answer {i}: " + "detail " * 150} for i in range(8)))
            for i in range(8):
                assert (await agent.turn(sid, f"goal {i}: " + "x " * 120))["stopReason"] == "endTurn"
            view = await agent.client.request("getContextView", {"sessionId": sid})
            parts = check_relation(view)
            first = request_messages(agent.chat_requests()[0])
            assert parts["systemPrompt"] == estimate_message_tokens({"role": "system", "content": SYSTEM_PROMPT})
            assert parts["projectContext"] == sum(
                estimate_message_tokens(m) for m in first[1:] if m["role"] == "system"
            )
            assert parts["projectContext"] > 0 and parts["messages"] > 0
            auto = view["compactions"]
            assert auto and {c["trigger"] for c in auto} == {"auto"}, "the small window compacted on its own"
            if view["mode"] == "summarized":
                assert parts["summary"] == estimate_message_tokens({"role": "system", "content": view["summary"]})

            made = await agent.client.request("compactSession", {"sessionId": sid, "focus": "keep goal 7"})
            assert made["compacted"]
            view = await agent.client.request("getContextView", {"sessionId": sid})
            parts = check_relation(view)
            assert view["mode"] == "summarized" and parts["summary"] > 0
            last = view["compactions"][-1]
            assert last["trigger"] == "manual" and last["focus"] == "keep goal 7"
            assert (last["beforeTokens"], last["afterTokens"]) == (made["beforeTokens"], made["afterTokens"])
            ids = [c["eventId"] for c in view["compactions"]]
            assert ids == sorted(ids) and len(ids) == len(auto) + 1
            assert all(c["at"] for c in view["compactions"])

            context = await agent.turn(sid, "/context")
            output = context["command"]["output"]
            assert "project context" in output and "Compactions: " in output and "(manual, summarized" in output


async def test_placeholders_count_what_microcompacted_outputs_still_cost(tmp_path: Path):
    home, folder = tmp_path / "home", tmp_path / "ws"
    folder.mkdir()
    (folder / "big.txt").write_text("line of a big file\n" * 400)
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as agent:
            sid = await agent.session(folder)
            for i in range(3):
                fake.push(
                    {"tool_calls": [{"id": f"r{i}", "name": "read_file", "arguments": {"path": "big.txt"}}]},
                    {"content": f"read it {i}"},
                )
                await agent.turn(sid, f"read big.txt ({i})")
            # "What if the window were smaller": a first compaction, which the old outputs' placeholders make
            view = await agent.client.request("getContextView", {"sessionId": sid, "contextWindowTokens": 7000})
            assert view["mode"] == "microcompacted", view["mode"]
            parts = check_relation(view)
            held = [m for m in view["messages"] if m["role"] == "tool" and m["content"].startswith("[old tool")]
            assert parts["placeholders"] == sum(estimate_message_tokens(m) for m in held) > 0


async def test_a_context_too_long_retry_is_a_promptTooLong_compaction(tmp_path: Path):
    home, folder = tmp_path / "home", tmp_path / "ws"
    folder.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as agent:
            sid = await agent.session(folder)
            fake.push(*({"content": f"answer {i}: " + "detail " * 60} for i in range(8)))
            for i in range(8):  # long enough that the fallback (the last messages) is smaller than the history
                await agent.turn(sid, f"step {i}: " + "word " * 60)
            fake.push({"ptl": True}, {"content": "fits now"})
            assert (await agent.turn(sid, "two"))["stopReason"] == "endTurn"
            view = await agent.client.request("getContextView", {"sessionId": sid})
            [record] = view["compactions"]
            assert record["trigger"] == "promptTooLong" and record["mode"] == "fallback"
            check_relation(view)
