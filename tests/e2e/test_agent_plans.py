"""Plans (B-SUM-9) over the real server and the model double: ``update_plan`` is stored as a
``planUpdated`` event, streamed as a ``plan`` update, reported by ``getContextView``, and kept verbatim in the
summary of every compaction, also one made by a new server process on the same data home."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.agent_support import (
    API_KEY,
    events,
    new_fake,
    request_messages,
    request_tools,
    running_agent,
)

pytestmark = pytest.mark.asyncio(loop_scope="function")

PLAN = [
    {"step": "Read the parser and its tests", "status": "completed"},
    {"step": "Make the tokenizer accept unicode identifiers (ß, λ)", "status": "in_progress"},
    {"step": "Run the test suite", "status": "pending"},
]
PLAN_SECTION = (
    "Plan:\n- [completed] Read the parser and its tests\n"
    "- [in_progress] Make the tokenizer accept unicode identifiers (ß, λ)\n- [pending] Run the test suite\n"
    "- Explanation: parser first\nGoals:"
)


def call(call_id: str, name: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def summaries(record: dict) -> list[str]:
    return [m["content"] for m in request_messages(record) if m["role"] == "system" and "Goals:" in m["content"]]


async def test_B_SUM_9_update_plan_is_an_event_an_update_and_the_context_views_plan(tmp_path: Path):
    home = tmp_path / "home"
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as agent:
            sid = await agent.session(tmp_path)
            view = await agent.client.request("getContextView", {"sessionId": sid})
            assert view.get("plan") is None
            two_running = [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]
            fake.push(
                call("p0", "update_plan", plan=two_running),
                call("p1", "update_plan", plan=PLAN, explanation="parser first"),
                {"content": "planned"},
            )
            assert (await agent.turn(sid, "fix the tokenizer"))["stopReason"] == "endTurn"
            results = {u["toolCallId"]: u for u in agent.updates(sid, "toolResult")}
            assert results["p0"]["status"] == "error"
            assert "at most one step may be in_progress, not 2" in results["p0"]["content"]
            assert results["p1"]["status"] == "ok" and results["p1"]["content"].startswith("Plan updated: 3 steps")
            assert agent.updates(sid, "plan") == [{"kind": "plan", "entries": PLAN, "explanation": "parser first"}]
            stored = events(home, sid, "planUpdated")
            assert stored == [{"entries": PLAN, "explanation": "parser first", "toolCallId": "p1"}]
            view = await agent.client.request("getContextView", {"sessionId": sid})
            assert view["plan"] == {"entries": PLAN, "explanation": "parser first"}
            first = agent.chat_requests()[0]
            assert "update_plan" in [t["function"]["name"] for t in request_tools(first)]
            assert "keep a short plan with update_plan" in request_messages(first)[0]["content"]


async def test_B_SUM_9_the_plan_is_verbatim_in_the_next_request_after_a_compaction_and_after_a_restart(
    tmp_path: Path,
):
    home = tmp_path / "home"
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as agent:
            sid = await agent.session(tmp_path)
            fake.push(call("p1", "update_plan", plan=PLAN, explanation="parser first"), {"content": "planned"})
            assert (await agent.turn(sid, "goal 0: fix the tokenizer"))["stopReason"] == "endTurn"
            fake.push(*({"content": f"answer {i}: " + "detail " * 300} for i in range(1, 4)))
            for i in range(1, 4):
                assert (await agent.turn(sid, f"goal {i}: go on " + "x " * 200))["stopReason"] == "endTurn"
            made = await agent.client.request("compactSession", {"sessionId": sid})
            assert made["compacted"] is True and PLAN_SECTION in made["summary"]
            first_summary = made["summary"]
            before = len(agent.chat_requests())
            fake.push({"content": "next"})
            assert (await agent.turn(sid, "goal 4: continue"))["stopReason"] == "endTurn"
            assert [s for s in summaries(agent.chat_requests()[before]) if PLAN_SECTION in s], "after a compaction"

        async with running_agent(home, fake) as agent:
            before = len(agent.chat_requests())
            fake.push({"content": "after restart"})
            assert (await agent.turn(sid, "goal 5: still going"))["stopReason"] == "endTurn"
            assert [s for s in summaries(agent.chat_requests()[before]) if PLAN_SECTION in s], "repeated"
            # A new compaction made by this process, which resumes from the stored tail, not the old summary
            fake.push(*({"content": f"answer {i}: " + "detail " * 300} for i in range(6, 9)))
            for i in range(6, 9):
                assert (await agent.turn(sid, f"goal {i}: more " + "y " * 200))["stopReason"] == "endTurn"
            made = await agent.client.request("compactSession", {"sessionId": sid})
            assert made["compacted"] is True and made["summary"] != first_summary
            assert PLAN_SECTION in made["summary"]
            before = len(agent.chat_requests())
            fake.push({"content": "next"})
            assert (await agent.turn(sid, "goal 9: finish"))["stopReason"] == "endTurn"
            assert [s for s in summaries(agent.chat_requests()[before]) if PLAN_SECTION in s], "after a restart"
            view = await agent.client.request("getContextView", {"sessionId": sid})
            assert view["plan"] == {"entries": PLAN, "explanation": "parser first"}
