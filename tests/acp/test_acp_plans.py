"""Plans over ACP, against the real ``threadline acp`` process: the plan arrives as ACP's ``plan`` update, and
every message the agent wrote validates against the official ACP schema (``schema_errors``)."""

from __future__ import annotations

import pytest

from tests.acp.support import acp_fixture, fresh_fixture, new

pytestmark = pytest.mark.asyncio(loop_scope="module")

acp = acp_fixture()
fresh = fresh_fixture()


def plan_call(call_id: str, plan: list[dict], explanation: str | None = None) -> dict:
    arguments: dict = {"plan": plan}
    if explanation:
        arguments["explanation"] = explanation
    return {"tool_calls": [{"id": call_id, "name": "update_plan", "arguments": arguments}]}


async def test_B_SUM_9_update_plan_reaches_the_editor_as_an_acp_plan_update(acp, folder):
    sid = await new(acp, folder)
    steps = [{"step": "read", "status": "completed"}, {"step": "fix", "status": "in_progress"}]
    acp.fake.push(
        plan_call("p1", steps, "why"), plan_call("p2", [{"step": "fix", "status": "completed"}]), {"content": "ok"}
    )
    await acp.prompt(sid, "go")
    plans = acp.editor.of(sid, "plan")
    assert [[(e.content, e.status, e.priority) for e in p.entries] for p in plans] == [
        [("read", "completed", "medium"), ("fix", "in_progress", "medium")],
        [("fix", "completed", "medium")],
    ]
    assert plans[0].field_meta == {"threadline": {"explanation": "why"}}
    raw = [m["params"]["update"] for m in acp.received if m.get("method") == "session/update"]
    assert [u for u in raw if u["sessionUpdate"] == "plan"][1] == {
        "sessionUpdate": "plan",
        "entries": [{"content": "fix", "priority": "medium", "status": "completed"}],
    }


async def test_plan_is_an_acp_mode_that_refuses_commands_without_asking(acp, folder):
    sid = await new(acp, folder)
    created = acp.editor.of(sid)  # nothing yet; the modes came with session/new
    assert created == []
    await acp.conn.set_session_mode(session_id=sid, mode_id="plan")
    assert [u.current_mode_id for u in acp.editor.of(sid, "current_mode_update")] == ["plan"]
    acp.fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": "touch out.txt"}}]},
        {"content": "planned"},
    )
    await acp.prompt(sid, "run")
    assert acp.editor.permissions == [] and not (folder / "out.txt").exists()
    [done] = [u for u in acp.editor.of(sid, "tool_call_update") if u.status == "failed"]
    assert "plan mode" in done.content[0].content.text
    resumed = await acp.conn.resume_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    assert resumed.modes.current_mode_id == "plan" and "plan" in [m.id for m in resumed.modes.available_modes]


async def test_available_commands_update_after_new_and_load_and_when_the_files_change(acp, folder):
    commands = folder / ".threadline" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: <path>\n---\nReview $ARGUMENTS\n"
    )
    sid = await new(acp, folder)
    await acp.wait_for(lambda: acp.editor.of(sid, "available_commands_update"))
    [first] = acp.editor.of(sid, "available_commands_update")
    assert [(c.name, c.description) for c in first.available_commands][-1] == ("review", "Review a file")
    assert {c.name for c in first.available_commands} == {"compact", "context", "plan", "review"}
    review = next(c for c in first.available_commands if c.name == "review")
    assert review.input.root.hint == "<path>"

    (commands / "ship.md").write_text("Ship it: $ARGUMENTS\n")
    await acp.wait_for(lambda: len(acp.editor.of(sid, "available_commands_update")) == 2)
    assert "ship" in {c.name for c in acp.editor.of(sid, "available_commands_update")[-1].available_commands}

    await acp.conn.load_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    await acp.wait_for(lambda: len(acp.editor.of(sid, "available_commands_update")) == 3)

    acp.fake.push({"content": "shipping"})
    await acp.prompt(sid, "/ship the release")
    sent = [m for m in acp.fake.requests if m["path"].endswith("/chat/completions")][-1]["body"]["messages"]
    assert sent[-1] == {"role": "user", "content": "Ship it: the release"}
    calls = len(acp.fake.requests)
    answer = await acp.prompt(sid, "/context")
    assert answer.stop_reason == "end_turn" and len(acp.fake.requests) == calls
    chunks = [u.content.text for u in acp.editor.of(sid, "agent_message_chunk")]
    assert chunks[-1].startswith("Context: about ")
