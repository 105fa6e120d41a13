"""``threadline acp`` end to end: the official SDK's client against the real agent process and the model double.

Every message the agent sends is checked against the official ACP v1 JSON schema after each test.
"""

from __future__ import annotations

import asyncio
import base64
import sqlite3
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import EnvVariable, McpServerStdio

from tests.acp.support import acp_fixture, command_call, fresh_fixture, new, schema_errors, write_call
from tests.e2e.agent_support import events
from tests.fakes.fake_provider import FakeProvider
from tests.harness import REPO, running_client

pytestmark = pytest.mark.asyncio(loop_scope="module")

acp = acp_fixture()
fresh = fresh_fixture()


def texts(updates) -> str:
    return "".join(u.content.text for u in updates)


async def test_the_clients_mcp_servers_give_the_model_their_tools_and_are_never_stored(acp, folder):
    secret = "acp-mcp-secret-51e0"
    server = McpServerStdio(
        name="editor",
        command=sys.executable,
        args=["-m", "tests.fakes.mcp_server"],
        env=[EnvVariable(name="PYTHONPATH", value=str(REPO)), EnvVariable(name="EDITOR_TOKEN", value=secret)],
    )
    sid = (await acp.conn.new_session(cwd=str(folder), mcp_servers=[server])).session_id
    acp.fake.push(
        {"tool_calls": [{"id": "call_m1", "name": "mcp__editor__echo", "arguments": {"text": "via ACP"}}]},
        {"content": "done"},
    )
    assert (await acp.prompt(sid, "use the editor's server", timeout=60)).stop_reason == "end_turn"
    chats = [r for r in acp.fake.requests if r["path"].startswith("/v1/chat")]
    assert "mcp__editor__echo" in [t["function"]["name"] for t in chats[0]["body"]["tools"]]
    assert [m["content"] for m in chats[1]["body"]["messages"] if m["role"] == "tool"] == ["via ACP"]
    assert [p.tool_call_id for p in acp.editor.permissions] == ["call_m1"]  # asked like a command
    assert events(acp.home, sid, "mcpServers") == []
    for path in acp.home.glob("threadline.db*"):
        assert secret.encode() not in path.read_bytes(), path


async def test_initialize_advertises_protocol_1_and_the_capabilities(acp):
    caps = acp.init.agent_capabilities
    assert acp.init.protocol_version == 1
    assert caps.load_session is True
    assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
    assert caps.session_capabilities.list is not None and caps.session_capabilities.resume is not None
    assert caps.session_capabilities.close is not None
    assert acp.init.agent_info.name == "threadline"
    assert (await acp.conn.authenticate(method_id="none")) is not None


async def test_a_prompt_streams_thoughts_then_the_answer_in_order(acp, folder):
    acp.fake.push({"reasoning": "let me think", "content": "Hello there, world", "chunks": 4})
    sid = await new(acp, folder)
    assert (await acp.prompt(sid, "hi")).stop_reason == "end_turn"
    kinds = [u.session_update for u in acp.editor.of(sid) if u.session_update.endswith("_chunk")]
    assert kinds.index("agent_message_chunk") > max(i for i, k in enumerate(kinds) if k == "agent_thought_chunk")
    assert texts(acp.editor.of(sid, "agent_thought_chunk")) == "let me think"
    assert texts(acp.editor.of(sid, "agent_message_chunk")) == "Hello there, world"
    usage = acp.editor.of(sid, "usage_update")
    assert usage and usage[-1].size > 0 and usage[-1].used > 0


async def test_a_write_asks_permission_and_arrives_as_a_diff(acp, folder):
    acp.fake.push(write_call("call_w1", "one.txt", "first\n"), {"content": "done"})
    sid = await new(acp, folder)
    assert (await acp.prompt(sid, "write it")).stop_reason == "end_turn"
    assert (folder / "one.txt").read_text() == "first\n"
    [asked] = acp.editor.permissions
    assert asked.tool_call_id == "call_w1"
    [start] = acp.editor.of(sid, "tool_call")
    assert start.kind == "edit" and start.raw_input == {"path": "one.txt", "content": "first\n"}
    assert [loc.path for loc in start.locations] == [str((folder / "one.txt").resolve())]
    *_, end = acp.editor.of(sid, "tool_call_update")  # after its in_progress
    assert end.status == "completed"
    diff = end.content[0]
    assert diff.type == "diff" and diff.old_text is None and diff.new_text == "first\n"


async def test_an_edit_diff_has_the_whole_file_before_and_after(acp, folder):
    (folder / "a.py").write_text("x = 1\ny = 2\n")
    acp.fake.push(
        {
            "tool_calls": [
                {
                    "id": "call_e1",
                    "name": "edit_file",
                    "arguments": {"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"},
                }
            ]
        },
        {"content": "ok"},
    )
    sid = await new(acp, folder)
    await acp.prompt(sid, "edit")
    *_, end = acp.editor.of(sid, "tool_call_update")
    assert end.content[0].old_text == "x = 1\ny = 2\n" and end.content[0].new_text == "x = 1\ny = 3\n"


@pytest.mark.parametrize("choice", ["reject_once", None])
async def test_a_rejection_or_a_cancelled_outcome_refuses_the_call(acp, folder, choice):
    acp.editor.decide = lambda request: choice
    acp.fake.push(write_call("call_r1", "no.txt"), {"content": "ok"})
    sid = await new(acp, folder)
    assert (await acp.prompt(sid, "write")).stop_reason == "end_turn"
    assert not (folder / "no.txt").exists()
    [end] = acp.editor.of(sid, "tool_call_update")
    assert end.status == "failed" and "Permission denied" in end.content[0].content.text


async def test_reject_always_stops_asking_for_that_tool(acp, folder):
    acp.editor.decide = lambda request: "reject_always"
    acp.fake.push(
        command_call("call_c1", "echo one"), {"content": "ok"}, command_call("call_c2", "echo two"), {"content": "ok"}
    )
    sid = await new(acp, folder)
    await acp.prompt(sid, "first")
    await acp.prompt(sid, "second")
    assert [p.tool_call_id for p in acp.editor.permissions] == ["call_c1"]
    assert [u.status for u in acp.editor.of(sid, "tool_call_update")] == ["failed", "failed"]


async def test_set_mode_changes_what_asks(acp, folder):
    sid = await new(acp, folder)
    await acp.conn.set_session_mode(session_id=sid, mode_id="auto")
    assert [u.current_mode_id for u in acp.editor.of(sid, "current_mode_update")] == ["auto"]
    acp.fake.push(command_call("call_m1", "echo hi > out.txt"), {"content": "ok"})
    await acp.prompt(sid, "run")
    assert acp.editor.permissions == [] and (folder / "out.txt").exists()
    resumed = await acp.conn.resume_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    assert resumed.modes.current_mode_id == "auto"
    with pytest.raises(RequestError):
        await acp.conn.set_session_mode(session_id=sid, mode_id="yolo")


async def test_cancel_mid_stream_answers_cancelled(acp, folder):
    acp.fake.push({"content": "word " * 60, "chunks": 60, "chunk_delay": 0.05})
    sid = await new(acp, folder)
    running = asyncio.create_task(acp.prompt(sid, "talk"))
    await acp.wait_for(lambda: acp.editor.of(sid, "agent_message_chunk"))
    await acp.conn.cancel(session_id=sid)
    assert (await running).stop_reason == "cancelled"


async def test_cancel_during_a_permission_request_answers_cancelled(acp, folder):
    acp.editor.hold = True
    acp.editor.decide = lambda request: None  # as the spec asks: the client answers `cancelled` after cancelling
    acp.fake.push(write_call("call_p1", "held.txt"), {"content": "never"})
    sid = await new(acp, folder)
    running = asyncio.create_task(acp.prompt(sid, "write"))
    await asyncio.wait_for(acp.editor.asked.wait(), 10)
    await acp.conn.cancel(session_id=sid)
    assert (await running).stop_reason == "cancelled"
    acp.editor.release.set()
    assert not (folder / "held.txt").exists()
    [end] = acp.editor.of(sid, "tool_call_update")
    assert end.status == "failed"


async def test_a_provider_failure_is_an_error_with_its_message(acp, folder):
    acp.fake.push({"error": {"status": 401, "body": {"error": {"message": "bad key", "type": "auth"}}}})
    sid = await new(acp, folder)
    with pytest.raises(RequestError) as raised:
        await acp.prompt(sid, "hi")
    assert raised.value.code == -32603 and str(raised.value)


async def test_a_prompt_with_an_image_and_resources_becomes_one_user_message(acp, folder):
    from acp import embedded_text_resource, image_block, resource_block, resource_link_block

    acp.fake.push({"content": "seen"})
    sid = await new(acp, folder)
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    blocks = [
        text_block("look"),
        image_block(png, "image/png"),
        resource_link_block("a.py", "file:///w/a.py"),
        resource_block(embedded_text_resource("file:///w/b.py", "print(1)")),
    ]
    assert (await acp.conn.prompt(session_id=sid, prompt=blocks)).stop_reason == "end_turn"
    user = [m for m in acp.fake.requests[-1]["body"]["messages"] if m["role"] == "user"][-1]
    text = " ".join(p.get("text", "") for p in user["content"])
    assert "look" in text and "file:///w/a.py" in text and "print(1)" in text
    assert any(p["type"] == "image_url" for p in user["content"])


async def test_issue_29_an_image_blob_that_is_not_its_type_is_refused_before_anything_is_stored(acp, folder):
    """ACP shares submitTurn's image checks (they are the turn service's): an embedded ``image/*`` blob whose bytes
    are not that type, or a type no provider takes, is -32602 InvalidImage; nothing is stored, no model is asked."""
    from acp import embedded_blob_resource, image_block, resource_block

    sid = await new(acp, folder)
    not_a_png = base64.b64encode(b"#!/bin/sh\necho not an image\n").decode()
    for blocks in (
        [
            text_block("look"),
            resource_block(embedded_blob_resource("file:///w/x.png", not_a_png, mime_type="image/png")),
        ],
        [
            text_block("look"),
            resource_block(embedded_blob_resource("file:///w/x.svg", not_a_png, mime_type="image/svg+xml")),
        ],
        [text_block("look"), image_block("not base64 at all!", "image/png")],
    ):
        with pytest.raises(RequestError) as refused:
            await acp.conn.prompt(session_id=sid, prompt=blocks)
        assert refused.value.code == -32602 and refused.value.data == {"code": "InvalidImage"}
    assert acp.fake.requests == []
    with sqlite3.connect(acp.home / "threadline.db") as db:
        stored = db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,)).fetchone()[0]
    db.close()
    assert stored == 0


async def test_load_replays_a_session_made_over_threadlines_protocol(acp, folder):
    acp.fake.push(command_call("call_l1", "echo replayed"), {"content": "all done"})
    async with running_client(acp.home, acp.fake.url, THREADLINE_APPROVAL_POLICY="auto") as rpc:
        sid = (await rpc.request("createSession", {"cwd": str(folder)}))["sessionId"]
        assert (await rpc.request("submitTurn", {"sessionId": sid, "text": "run it"}))["stopReason"] == "endTurn"
        made_over_acp = await new(acp, folder)
        listed = {s["sessionId"] for s in (await rpc.request("listSessions", {"cwd": str(folder)}))["sessions"]}
        assert made_over_acp in listed
    await acp.conn.load_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    kinds = [u.session_update for u in acp.editor.of(sid)]
    assert kinds == ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]
    replayed = acp.editor.of(sid)
    assert replayed[0].content.text == "run it" and replayed[1].kind == "execute"
    assert replayed[2].status == "completed" and "replayed" in replayed[2].content[0].content.text
    assert replayed[3].content.text == "all done"


async def test_list_pages_with_a_cursor_and_close_forgets(acp, folder):
    async with running_client(acp.home, acp.fake.url) as rpc:  # sessions somebody prompted: listed
        messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
        made = {
            (await rpc.request("importSession", {"cwd": str(folder), "messages": messages}))["sessionId"]
            for _ in range(52)
        }
    first = await acp.conn.list_sessions(cwd=str(folder))
    assert len(first.sessions) == 50 and first.next_cursor
    second = await acp.conn.list_sessions(cwd=str(folder), cursor=first.next_cursor)
    assert second.next_cursor is None
    assert {s.session_id for s in first.sessions + second.sessions} == made
    assert all(s.cwd == str(folder.resolve()) for s in second.sessions)
    sid = next(iter(made))
    assert await acp.conn.close_session(session_id=sid) is not None
    with pytest.raises(RequestError):
        await acp.conn.list_sessions(cwd=str(folder), cursor="nope")


async def test_bad_requests_are_errors_and_the_agent_keeps_running(acp, folder):
    with pytest.raises(RequestError) as missing:
        await acp.conn.load_session(session_id="ses_nope", cwd=str(folder), mcp_servers=[])
    assert missing.value.data is not None
    assert missing.value.code == -32602 and missing.value.data["code"] == "SessionNotFound"
    with pytest.raises(RequestError) as bad_cwd:
        await acp.conn.new_session(cwd=str(folder / "absent"), mcp_servers=[])
    assert bad_cwd.value.code == -32602
    with pytest.raises(RequestError) as unknown:
        await acp.conn.ext_method("threadline/nope", {})
    assert unknown.value.code == -32601
    assert await new(acp, folder)


async def test_threadline_extensions_search_the_transcript(acp, folder):
    acp.fake.push({"content": "the zebra answer"})
    sid = await new(acp, folder)
    await acp.prompt(sid, "find zebra")
    hits = (await acp.conn.ext_method("threadline/searchTranscript", {"query": "zebra", "sessionId": sid}))["hits"]
    assert hits and all(h["sessionId"] == sid for h in hits)
    view = await acp.conn.ext_method("threadline/getContextView", {"sessionId": sid})
    assert view["messages"]
    compacted = await acp.conn.ext_method("threadline/compactSession", {"sessionId": sid})
    assert compacted["compacted"] is (compacted["mode"] != "full")


async def test_threadline_extensions_answer_bad_params_with_invalid_params_naming_the_field(acp, folder):
    """Bad input is -32602 with data.code naming the request's fault (never -32603), as on Threadline's protocol."""
    sid = await new(acp, folder)
    with pytest.raises(RequestError) as wrong_type:
        await acp.conn.ext_method("threadline/searchTranscript", {"query": 42, "sessionId": sid})
    assert wrong_type.value.code == -32602
    assert "query" in str(wrong_type.value)
    assert (wrong_type.value.data or {}).get("code") == "InvalidParams"
    with pytest.raises(RequestError) as missing:
        await acp.conn.ext_method("threadline/getContextView", {})
    assert missing.value.code == -32602
    assert "sessionId" in str(missing.value)
    assert (await acp.conn.ext_method("threadline/getContextView", {"sessionId": sid}))["messages"] is not None


async def test_lines_that_are_not_requests_are_answered_and_the_agent_keeps_running(acp, folder):
    before = len(acp.received)
    acp.proc.stdin.write(b"this is not json\n[1, 2]\n42\n\n")
    await acp.proc.stdin.drain()
    await acp.wait_for(lambda: len([m for m in acp.received[before:] if "error" in m]) >= 3)
    codes = [m["error"]["code"] for m in acp.received[before:] if "error" in m]
    assert codes == [-32700, -32600, -32600]
    acp.proc.stdin.write(
        b'{"jsonrpc": "2.0", "id": "bad1", "method": "session/prompt", "params": {"prompt": 1}}\n'
        b'{"jsonrpc": "2.0", "id": "bad2", "method": "no/such_method", "params": {}}\n'
    )
    await acp.proc.stdin.drain()
    await acp.wait_for(lambda: {"bad1", "bad2"} <= {m.get("id") for m in acp.received})
    answers = {m["id"]: m["error"]["code"] for m in acp.received if m.get("id") in ("bad1", "bad2")}
    assert answers == {"bad1": -32602, "bad2": -32601}
    assert await new(acp, folder)


async def test_too_many_model_calls_stop_with_max_turn_requests(tmp_path, folder):
    from tests.acp.support import start_acp
    from tests.harness import API_KEY

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('max_iterations = 1\napproval_policy = "auto"\n')
    with FakeProvider(api_key=API_KEY) as fake:
        fake.push(command_call("call_x1", "echo 1"), {"content": "never reached"})
        async with start_acp(home, fake) as agent:
            await agent.conn.initialize(protocol_version=1)
            sid = await new(agent, folder)
            assert (await agent.prompt(sid, "loop")).stop_reason == "max_turn_requests"
            assert schema_errors(agent.received, agent.sent_methods) == []


async def test_a_compaction_is_an_agent_message_marked_in_meta(acp, folder):
    messages = []
    for i in range(60):
        messages += [
            {"role": "user", "content": f"question {i} " + "words " * 400},
            {"role": "assistant", "content": f"answer {i} " + "prose " * 400},
        ]
    async with running_client(acp.home, acp.fake.url) as rpc:
        sid = (await rpc.request("importSession", {"cwd": str(folder), "messages": messages}))["sessionId"]
    await acp.conn.resume_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    result = await acp.conn.ext_method("threadline/compactSession", {"sessionId": sid})
    assert result["compacted"] is True
    await acp.wait_for(lambda: acp.editor.of(sid, "agent_message_chunk"))
    [note] = acp.editor.of(sid, "agent_message_chunk")
    meta = note.field_meta["threadline"]["contextCompacted"]
    assert meta["mode"] == result["mode"] and meta["afterTokens"] == result["afterTokens"]


async def test_the_provider_key_is_not_in_the_agents_environment_block(acp):
    from tests.harness import API_KEY

    environ = Path(f"/proc/{acp.proc.pid}/environ").read_bytes()
    assert API_KEY.encode() not in environ and b"THREADLINE_API_KEY" not in environ
