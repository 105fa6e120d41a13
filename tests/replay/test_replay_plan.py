"""The replay provider: recorded answers in order, recorded tool results, empty answers where a turn has none."""

from __future__ import annotations

import asyncio
from typing import Any

from server.providers import StreamEvent, TextDelta
from server.replay import NO_RESULT, ReplayProvider, plan_replay
from tests.conftest import KIMI, MINI_SWE, load_trajectory

RECORDING: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "list files"},
    {
        "role": "assistant",
        "content": "looking",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}},
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": '{"path": "src"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "b.py"},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    {"role": "user", "content": "stop"},  # steering after results: the recording has no answer in between
    {"role": "assistant", "content": "done"},
]


def test_plan_splits_systems_and_turns():
    plan = plan_replay(RECORDING)
    assert plan.systems == ["be brief"]
    assert [text for text, _ in plan.turns] == ["list files", "stop"]
    first = plan.turns[0][1][0]
    assert [c.id for c in first.tool_calls] == ["c1", "c2"] and first.results == {"c1": "a.py", "c2": "b.py"}


def test_provider_answers_in_order_and_ends_turns_without_an_answer():
    provider = ReplayProvider(plan_replay(RECORDING))
    deltas: list[StreamEvent] = []

    async def run():
        first = await provider.stream_chat([], None, deltas.append)
        src = await provider.run_tool(None, "ls", {"path": "src"})
        here = await provider.run_tool(None, "ls", {"path": "."})
        again = await provider.run_tool(None, "ls", {"path": "."})
        gap = await provider.stream_chat([], None, deltas.append)
        last = await provider.stream_chat([], None, deltas.append)
        beyond = await provider.stream_chat([], None, deltas.append)
        return first, src, here, again, gap, last, beyond

    first, src, here, again, gap, last, beyond = asyncio.run(run())
    assert first.content == "looking" and [c.name for c in first.tool_calls] == ["ls", "ls"]
    assert (src.content, here.content, again.content) == ("b.py", "a.py", NO_RESULT)
    assert gap.content == "" and not gap.tool_calls
    assert last.content == "done" and beyond.content == ""
    assert deltas == [TextDelta("looking"), TextDelta("done")]


def test_real_trajectories_plan_every_assistant_message():
    for path in (KIMI, MINI_SWE):
        messages = load_trajectory(path)
        plan = plan_replay(messages)
        assert sum(len(answers) for _, answers in plan.turns) == sum(m["role"] == "assistant" for m in messages)
        assert len(plan.turns) == sum(m["role"] == "user" for m in messages)
        assert plan.skipped == 0
