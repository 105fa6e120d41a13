""" "ACP, as real clients use it": what CodeCompanion.nvim and avante.nvim needed, performed with the
official SDK's client against a real ``threadline acp`` process; every agent message checked against the schema."""

from __future__ import annotations

import asyncio

import pytest

from tests.acp.support import acp_fixture, command_call, fresh_fixture, new, write_call
from tests.harness import running_client

pytestmark = pytest.mark.asyncio(loop_scope="module")

acp = acp_fixture()
fresh = fresh_fixture()


def permission_requests(acp, call_id: str) -> list[dict]:
    return [
        m
        for m in acp.received
        if m.get("method") == "session/request_permission" and m["params"]["toolCall"]["toolCallId"] == call_id
    ]


async def test_issue_28_a_write_permission_request_shows_a_diff_block_first_and_its_kind(acp, folder):
    """CodeCompanion opens its diff review only when ``toolCall.content[0]`` is a ``diff`` block."""
    (folder / "old.txt").write_text("one\ntwo\n")
    acp.fake.push(
        {
            "tool_calls": [
                {
                    "id": "call_d1",
                    "name": "edit_file",
                    "arguments": {"path": "old.txt", "old_string": "two", "new_string": "three"},
                }
            ]
        },
        write_call("call_d2", "new.txt", "fresh\n"),
        {"content": "done"},
    )
    sid = await new(acp, folder)
    assert (await acp.prompt(sid, "edit then write")).stop_reason == "end_turn"
    edit, write = acp.editor.permissions
    diff, note = edit.content
    assert (diff.type, diff.path) == ("diff", str((folder / "old.txt").resolve()))
    assert (diff.old_text, diff.new_text) == ("one\ntwo\n", "one\nthree\n")
    assert note.type == "content" and "Allow always" in note.content.text
    assert edit.kind == "edit" and [loc.path for loc in edit.locations] == [diff.path]
    new_file = write.content[0]
    assert new_file.type == "diff" and new_file.old_text is None and new_file.new_text == "fresh\n"
    [raw] = permission_requests(acp, "call_d2")
    assert "oldText" not in raw["params"]["toolCall"]["content"][0]  # a new file: no old text, as ACP says


async def test_issue_28_every_tool_call_has_a_kind_and_reports_in_progress_when_it_starts(acp, folder):
    """Clients hide pending calls: a command is ``in_progress`` from when it starts, before it completes."""
    acp.fake.push(command_call("call_k1", "echo running"), {"content": "ok"})
    sid = await new(acp, folder)
    assert (await acp.prompt(sid, "run")).stop_reason == "end_turn"
    [asked] = acp.editor.permissions
    assert asked.kind == "execute" and "echo running" in asked.content[0].content.text
    assert asked.title == "`echo running`"  # the command first, whole: CodeCompanion shows a backticked span whole
    [start] = acp.editor.of(sid, "tool_call")
    assert (start.kind, start.status) == ("execute", "pending")
    assert [u.status for u in acp.editor.of(sid, "tool_call_update")] == ["in_progress", "completed"]
    updates = [m["params"]["update"] for m in acp.received if m.get("method") == "session/update"]
    order = [u.get("status") for u in updates if u.get("toolCallId") == "call_k1"]
    assert order == ["pending", "in_progress", "completed"]


async def test_issue_28_a_rejected_call_never_reports_in_progress(acp, folder):
    acp.editor.decide = lambda request: "reject_once"
    acp.fake.push(command_call("call_k2", "echo never"), {"content": "ok"})
    sid = await new(acp, folder)
    await acp.prompt(sid, "run")
    assert [u.status for u in acp.editor.of(sid, "tool_call_update")] == ["failed"]


async def test_issue_28_no_cancel_request_for_a_permission_the_client_answers_after_its_cancel(acp, folder):
    """ACP has the client answer every open permission request ``cancelled`` once it sends ``session/cancel``
    (CodeCompanion and avante do, at once): a ``$/cancel_request`` for it would name an answered request."""
    acp.editor.hold = True
    acp.editor.decide = lambda request: None
    acp.fake.push(command_call("call_a1", "echo answered"), {"content": "after"})
    sid = await new(acp, folder)
    running = asyncio.create_task(acp.prompt(sid, "run"))
    await asyncio.wait_for(acp.editor.asked.wait(), 30)
    [asked] = permission_requests(acp, "call_a1")
    await acp.conn.cancel(session_id=sid)
    acp.editor.release.set()
    assert (await running).stop_reason == "cancelled"
    await new(acp, folder)  # a round trip: whatever the agent would send about it has been sent
    assert {"requestId": asked["id"]} not in [
        m.get("params") for m in acp.received if m.get("method") == "$/cancel_request"
    ]


async def test_issue_28_a_permission_request_left_open_by_session_close_is_withdrawn(acp, folder):
    """The client did not cancel anything it could answer: closing the session withdraws the open request."""
    acp.editor.hold = True
    acp.editor.decide = lambda request: None
    acp.fake.push(command_call("call_a2", "echo closed"), {"content": "after"})
    sid = await new(acp, folder)
    running = asyncio.create_task(acp.prompt(sid, "run"))
    await asyncio.wait_for(acp.editor.asked.wait(), 30)
    [asked] = permission_requests(acp, "call_a2")
    await acp.conn.close_session(session_id=sid)
    assert (await running).stop_reason == "cancelled"
    await acp.wait_for(
        lambda: (
            {"requestId": asked["id"]}
            in [m.get("params") for m in acp.received if m.get("method") == "$/cancel_request"]
        )
    )
    acp.editor.release.set()


async def test_issue_28_a_session_is_titled_after_its_first_prompt_over_acp(acp, folder):
    sid = await new(acp, folder)
    acp.fake.push({"content": "ok"}, {"content": "ok"})
    await acp.prompt(sid, "\n   Fix the   flaky parser test  \nthe details follow on later lines")
    await acp.prompt(sid, "a second prompt does not rename it")
    listed = {s.session_id: s.title for s in (await acp.conn.list_sessions(cwd=str(folder))).sessions}
    assert listed[sid] == "Fix the flaky parser test"
    [told] = acp.editor.of(sid, "session_info_update")  # once, when the first prompt named it
    assert told.title == "Fix the flaky parser test" and told.updated_at


async def test_issue_28_titles_are_stored_bounded_and_an_explicit_title_wins_over_listSessions(acp, folder):
    acp.fake.push({"content": "ok"}, {"content": "ok"}, {"content": "ok"})
    long_prompt = "word " * 60
    async with running_client(acp.home, acp.fake.url) as rpc:
        named = (await rpc.request("createSession", {"cwd": str(folder), "title": "My own title"}))["sessionId"]
        untitled = (await rpc.request("createSession", {"cwd": str(folder)}))["sessionId"]
        long = (await rpc.request("createSession", {"cwd": str(folder)}))["sessionId"]
        for sid, text in ((named, "please do the thing"), (untitled, "Add a --json flag"), (long, long_prompt)):
            assert (await rpc.request("submitTurn", {"sessionId": sid, "text": text}))["stopReason"] == "endTurn"
    async with running_client(acp.home, acp.fake.url) as second:  # a new server process reads what was stored
        titles = {s["sessionId"]: s["title"] for s in (await second.request("listSessions", {}))["sessions"]}
    assert titles[named] == "My own title" and titles[untitled] == "Add a --json flag"
    assert len(titles[long]) <= 80 and titles[long].endswith("…") and titles[long].startswith("word word")
