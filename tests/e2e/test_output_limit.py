"""An answer cut at the output limit is never silent, for every provider kind, against a real server.

Chat Completions' ``finish_reason: "length"``, Anthropic's ``stop_reason: "max_tokens"`` and Responses'
``response.incomplete`` (``max_output_tokens``) are the same thing: the user gets a notice, the model is told its
answer was cut so it can go on, and a tool call cut while its arguments were being written is never run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from server.agent.cut import CONTINUE_NOTE, CUT_CALL_RESULT, MAX_CONTINUATIONS, OUTPUT_LIMIT
from tests.e2e.agent_support import API_KEY, Agent, model_requests, request_messages, running_agent
from tests.fakes import fake_anthropic, fake_responses
from tests.fakes.fake_provider import FakeProvider

pytestmark = pytest.mark.asyncio(loop_scope="module")

CUT: dict[str, tuple[Any, dict[str, Any]]] = {
    "openai": (FakeProvider, {"finish_reason": "length"}),
    "anthropic": (fake_anthropic.FakeAnthropic, {"stop_reason": "max_tokens"}),
    "openai-responses": (fake_responses.FakeResponses, {"incomplete": True}),
}


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(CUT))
async def kind_agent(request, tmp_path_factory) -> AsyncIterator[tuple[Agent, dict[str, Any]]]:
    """One server and one double per provider kind, for the module, with what that kind's cut answer says."""
    fake_class, cut = CUT[request.param]
    with fake_class(api_key=API_KEY) as fake:
        async with running_agent(tmp_path_factory.mktemp("home"), fake) as running:
            yield running, cut


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def notices(agent, sid: str) -> list[str]:
    return [u["message"] for u in agent.updates(sid, "notice")]


async def test_issue_28_a_cut_text_answer_is_announced_and_the_model_is_told_to_go_on(kind_agent, folder: Path):
    agent, cut = kind_agent
    fake = agent.fake
    fake.reset()
    fake.push({"content": "The first half of the answer", **cut}, {"content": " and the second half."})
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "explain it all")
    transcript = await agent.transcript(sid)
    assert result["stopReason"] == "endTurn", result
    _, second = model_requests(fake)
    last = request_messages(second)[-1]
    assert last["role"] == "user" and text_of(last["content"]) == CONTINUE_NOTE
    assert [m["role"] for m in request_messages(second)][-2:] == ["assistant", "user"]
    [notice] = notices(agent, sid)
    assert "cut off at its output limit" in notice and "asked to continue" in notice
    assert [(m["role"], m["content"]) for m in transcript if m["role"] != "system"][-3:] == [
        ("assistant", "The first half of the answer"),
        ("user", CONTINUE_NOTE),
        ("assistant", " and the second half."),
    ]


async def test_issue_28_a_tool_call_cut_mid_arguments_is_never_run(kind_agent, folder: Path):
    agent, cut = kind_agent
    fake = agent.fake
    fake.reset()
    whole = {"id": "call_whole", "name": "write_file", "arguments": {"path": "whole.txt", "content": "whole\n"}}
    # a whole JSON object would be run: this one stopped inside its string, as a cut answer does
    partial = {"id": "call_cut", "name": "write_file", "arguments": '{"path": "cut.txt", "content": "half of it'}
    fake.push({"tool_calls": [whole, partial], **cut}, {"content": "ok, writing it in parts"})
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "write two files")
    assert result["stopReason"] == "endTurn", result
    assert (folder / "whole.txt").read_text() == "whole\n" and not (folder / "cut.txt").exists()
    results = {u["toolCallId"]: u for u in agent.updates(sid, "toolResult")}
    assert results["call_cut"]["status"] == "error" and results["call_cut"]["content"] == CUT_CALL_RESULT
    assert results["call_whole"]["status"] == "ok"
    assert "call_cut" not in [u["toolCallId"] for u in agent.updates(sid, "toolStarted")]
    told = {m.get("tool_call_id"): text_of(m["content"]) for m in request_messages(model_requests(fake)[1])}
    assert told["call_cut"] == CUT_CALL_RESULT  # the model hears why, and can write the call again
    [notice] = notices(agent, sid)
    assert "1 tool call(s) it was still writing were not run" in notice


async def test_issue_28_an_answer_cut_again_and_again_ends_the_turn_as_failed_naming_the_limit(
    kind_agent, folder: Path
):
    agent, cut = kind_agent
    fake = agent.fake
    fake.reset()
    fake.push(*[{"content": f"part {n}", **cut} for n in range(MAX_CONTINUATIONS + 2)])
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "a runaway answer")
    assert result["stopReason"] == "error", result  # a runaway is a failure, not a finished turn
    assert result["error"]["code"] == OUTPUT_LIMIT and "output limit 3 times" in result["error"]["message"]
    assert len(model_requests(fake)) == MAX_CONTINUATIONS + 1  # never a loop
    said = notices(agent, sid)
    assert len(said) == MAX_CONTINUATIONS + 1 and "the turn ends here as failed" in said[-1]


async def test_issue_42_a_call_cut_mid_arguments_counts_toward_the_continuations(kind_agent, folder: Path):
    """Only max_iterations used to bound a model that keeps writing over-long calls: each one is a cut too."""
    agent, cut = kind_agent
    fake = agent.fake
    fake.reset()
    for n in range(MAX_CONTINUATIONS + 2):
        partial = {"id": f"call_{n}", "name": "write_file", "arguments": '{"path": "big.txt", "content": "aaa'}
        fake.push({"tool_calls": [partial], **cut})
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "write a huge file")
    assert result["stopReason"] == "error" and result["error"]["code"] == OUTPUT_LIMIT, result
    assert len(model_requests(fake)) == MAX_CONTINUATIONS + 1
    results = [u for u in agent.updates(sid, "toolResult")]
    assert len(results) == MAX_CONTINUATIONS + 1  # every call is answered before the turn ends
    assert all(r["content"] == CUT_CALL_RESULT for r in results)
    assert "the turn ends here as failed" in notices(agent, sid)[-1]
    assert not (folder / "big.txt").exists()


async def test_issue_28_a_cut_answer_whose_calls_are_whole_runs_them_and_says_so(kind_agent, folder: Path):
    agent, cut = kind_agent
    fake = agent.fake
    fake.reset()
    whole = {"id": "call_done", "name": "write_file", "arguments": {"path": "done.txt", "content": "done\n"}}
    fake.push({"tool_calls": [whole], **cut}, {"content": "written"})
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "write it"))["stopReason"] == "endTurn"
    assert (folder / "done.txt").read_text() == "done\n"
    [notice] = notices(agent, sid)
    assert "its tool calls were whole, and run" in notice
