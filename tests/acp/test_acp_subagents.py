"""Subagents over ACP (B-SUB-1): a child's progress updates the parent's ``task`` tool call, and its approvals are
asked through the parent's session and call, the ones the client knows. Every message the agent sends is checked
against the official ACP v1 JSON schema after each test."""

from __future__ import annotations

import pytest

from tests.acp.support import acp_fixture, command_call, fresh_fixture, new

pytestmark = pytest.mark.asyncio(loop_scope="module")

acp = acp_fixture()
fresh = fresh_fixture()


def task(call_id: str, prompt: str) -> dict:
    return {
        "tool_calls": [{"id": call_id, "name": "task", "arguments": {"description": "look around", "prompt": prompt}}]
    }


async def test_B_SUB_1_acp_a_childs_progress_updates_the_parents_task_call(acp, folder):
    (folder / "notes.txt").write_text("hello\n")
    sid = await new(acp, folder)
    acp.fake.push(
        task("call_t1", "read notes.txt"),
        {"tool_calls": [{"id": "call_r1", "name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"content": "notes.txt says hello"},
        {"content": "done"},
    )
    assert (await acp.prompt(sid, "delegate")).stop_reason == "end_turn"
    calls = [u for u in acp.editor.of(sid) if getattr(u, "tool_call_id", None) == "call_t1"]
    assert calls[0].session_update == "tool_call"
    assert (calls[1].status, calls[1].field_meta) == ("in_progress", None)  # the task call started (toolStarted)
    progress = [u for u in calls[2:-1] if u.status == "in_progress"]
    assert progress and "- notes.txt (read_file)" in progress[-1].content[0].content.text  # titled as the parent's
    assert all(u.field_meta["threadline"]["childSessionId"] != sid for u in progress)
    assert calls[-1].status == "completed" and calls[-1].raw_output == "notes.txt says hello"
    assert not [u for u in acp.editor.of(sid) if getattr(u, "tool_call_id", None) == "call_r1"]


async def test_B_SUB_1_acp_a_childs_approval_is_asked_on_the_parents_call(acp, folder):
    sid = await new(acp, folder)
    acp.fake.push(task("call_t2", "run echo"), command_call("call_c1", "echo hi"), {"content": "hi"}, {"content": "ok"})
    assert (await acp.prompt(sid, "delegate")).stop_reason == "end_turn"
    [asked] = acp.editor.permissions
    assert asked.tool_call_id == "call_t2" and "echo hi" in asked.content[0].content.text
