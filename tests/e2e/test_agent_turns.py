"""Turns and tools end to end: the real server, the fake provider, real files and a real SQLite transcript."""

from __future__ import annotations

import json
import os

import pytest

from tests.e2e.agent_support import agent_fixture, request_messages, tool_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()


async def test_read_edit_write_and_command_turn_changes_real_files(agent, folder):
    (folder / "app.py").write_text("GREETING = 'hello'\n")
    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_read", "name": "read_file", "arguments": {"path": "app.py"}}]},
        {
            "tool_calls": [
                {
                    "id": "call_edit",
                    "name": "edit_file",
                    "arguments": {"path": "app.py", "old_string": "'hello'", "new_string": "'bonjour'"},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "id": "call_write",
                    "name": "write_file",
                    "arguments": {"path": "pkg/notes.md", "content": "# notes\n"},
                }
            ]
        },
        {"tool_calls": [{"id": "call_cmd", "name": "run_command", "arguments": {"command": "cat app.py; ls pkg"}}]},
        {"content": "All done.", "chunks": 3},
    )
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "change the greeting")

    assert result["stopReason"] == "endTurn", result
    assert (folder / "app.py").read_text() == "GREETING = 'bonjour'\n"
    assert (folder / "pkg" / "notes.md").read_text() == "# notes\n"
    results = {u["toolCallId"]: u for u in agent.updates(sid, "toolResult")}
    assert all(r["status"] == "ok" for r in results.values()), results
    assert "GREETING = 'hello'" in results["call_read"]["content"]
    assert "GREETING = 'bonjour'" in results["call_cmd"]["content"] and "notes.md" in results["call_cmd"]["content"]
    assert "".join(u["text"] for u in agent.updates(sid, "assistantDelta")) == "All done."
    # The model saw every result, each right after its call, and the transcript holds the whole exchange.
    requests = agent.chat_requests()
    assert len(requests) == 5 and not any(r["rejected"] for r in requests)
    assert [m["tool_call_id"] for m in tool_messages(requests[-1])] == [
        "call_read",
        "call_edit",
        "call_write",
        "call_cmd",
    ]
    roles = [i["role"] for i in await agent.transcript(sid) if i["role"] != "system"]
    assert roles == ["user"] + ["assistant", "tool"] * 4 + ["assistant"]


async def test_parallel_tool_calls_in_one_assistant_message(agent, folder):
    (folder / "a.txt").write_text("alpha\n")
    (folder / "b.txt").write_text("beta\n")
    agent.fake.reset()
    agent.fake.push(
        {
            "tool_calls": [
                {"id": "call_a", "name": "read_file", "arguments": {"path": "a.txt"}},
                {"id": "call_b", "name": "read_file", "arguments": {"path": "b.txt"}},
                {"id": "call_ls", "name": "list_files", "arguments": {}},
            ]
        },
        {"content": "Read both."},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "read both"))["stopReason"] == "endTurn"

    second = agent.chat_requests()[1]
    messages = request_messages(second)
    call_msg = next(m for m in messages if m.get("tool_calls"))
    after = messages[messages.index(call_msg) + 1 : messages.index(call_msg) + 4]
    assert [m["tool_call_id"] for m in after] == ["call_a", "call_b", "call_ls"]
    assert "alpha" in after[0]["content"] and "beta" in after[1]["content"] and "a.txt" in after[2]["content"]
    assert not second["rejected"]


@pytest.mark.parametrize("escape", ["dotdot", "absolute", "symlink"])
async def test_path_escapes_are_permission_denied_and_touch_nothing_outside(agent, folder, tmp_path, escape):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not touch\n")
    (folder / "link").symlink_to(outside)
    path = {"dotdot": "../outside/secret.txt", "absolute": str(outside / "secret.txt"), "symlink": "link/secret.txt"}[
        escape
    ]
    agent.fake.reset()
    agent.fake.push(
        {
            "tool_calls": [
                {"id": "call_r", "name": "read_file", "arguments": {"path": path}},
                {"id": "call_w", "name": "write_file", "arguments": {"path": path, "content": "pwned"}},
                {
                    "id": "call_e",
                    "name": "edit_file",
                    "arguments": {"path": path, "old_string": "do not", "new_string": "did"},
                },
                {
                    "id": "call_n",
                    "name": "write_file",
                    "arguments": {"path": path.replace("secret.txt", "new.txt"), "content": "x"},
                },
            ]
        },
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "try to escape"))["stopReason"] == "endTurn"

    seen = tool_messages(agent.chat_requests()[1])
    assert len(seen) == 4
    assert all(m["content"].startswith("Permission denied") for m in seen), seen
    assert all(u["status"] == "denied" for u in agent.updates(sid, "toolResult"))
    assert (outside / "secret.txt").read_text() == "do not touch\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_forbidden_command_is_refused_with_Forbidden(agent, folder):
    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_rm", "name": "run_command", "arguments": {"command": "rm -rf /"}}]},
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "clean up"))["stopReason"] == "endTurn"
    [seen] = tool_messages(agent.chat_requests()[1])
    assert seen["content"].startswith("Forbidden")


async def test_tool_errors_reach_the_model_as_Tool_failed(agent, folder):
    agent.fake.reset()
    agent.fake.push(
        {
            "tool_calls": [
                {"id": "call_missing", "name": "read_file", "arguments": {"path": "nope.txt"}},
                {"id": "call_exit", "name": "run_command", "arguments": {"command": "echo boom; exit 3"}},
                {"id": "call_json", "name": "read_file", "arguments": "{not json"},
                {"id": "call_unknown", "name": "no_such_tool", "arguments": {}},
            ]
        },
        {"content": "I see the failures."},
    )
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "fail please")
    assert result["stopReason"] == "endTurn"
    seen = {m["tool_call_id"]: m["content"] for m in tool_messages(agent.chat_requests()[1])}
    assert all(text.startswith("Tool failed: ") for text in seen.values()), seen
    assert "code 3" in seen["call_exit"] and "boom" in seen["call_exit"]
    assert not agent.chat_requests()[1]["rejected"]


async def test_echo_turn_without_script_and_second_turn_sees_history(agent, folder):
    agent.fake.reset()
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "first question"))["stopReason"] == "endTurn"
    assert (await agent.turn(sid, "second question"))["stopReason"] == "endTurn"
    second = request_messages(agent.chat_requests()[1])
    texts = [(m["role"], m["content"]) for m in second if m["role"] != "system"]
    assert texts == [("user", "first question"), ("assistant", "Echo: first question"), ("user", "second question")]


async def test_api_key_never_reaches_run_command_environment(agent, folder):
    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_env", "name": "run_command", "arguments": {"command": "env"}}]}, {"content": "ok"}
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "show env"))["stopReason"] == "endTurn"
    [seen] = tool_messages(agent.chat_requests()[1])
    assert "PATH=" in seen["content"]  # it really ran and printed the environment
    assert "SECRET-5f1c9a" not in seen["content"] and "THREADLINE_" not in seen["content"]
    assert "SECRET-5f1c9a" not in json.dumps(agent.updates(sid))


async def test_readTranscript_tells_how_each_tool_call_ended(agent, folder):
    """Clients resuming a session show ok / error / denied without re-reading the model's words."""
    agent.fake.push(
        {
            "tool_calls": [
                {"id": "call_ok", "name": "list_files", "arguments": {}},
                {"id": "call_err", "name": "read_file", "arguments": {"path": "missing.txt"}},
                {"id": "call_deny", "name": "read_file", "arguments": {"path": "../outside.txt"}},
            ]
        },
        {"content": "done"},
    )
    sid = await agent.session(folder, policy="auto")
    await agent.client.request("submitTurn", {"sessionId": sid, "text": "look around"})
    items = await agent.transcript(sid)
    status = {i["toolCallId"]: i["toolStatus"] for i in items if i["role"] == "tool"}
    assert status == {"call_ok": "ok", "call_err": "error", "call_deny": "denied"}
    assert all("toolStatus" not in i for i in items if i["role"] != "tool")


async def test_the_live_and_resumed_status_of_a_tool_call_agree_whatever_its_output_says(agent, folder):
    """A command that succeeded but printed "Permission denied ..." (ssh does) or "Tool failed" was
    shown ok live and denied or error on resume, read from its text. The status the loop knew is stored."""
    agent.fake.reset()
    agent.fake.push(
        {
            "tool_calls": [
                {
                    "id": "call_ssh",
                    "name": "run_command",
                    "arguments": {"command": "printf 'Permission denied (publickey).\\n'"},
                },
                {
                    "id": "call_echo",
                    "name": "run_command",
                    "arguments": {"command": "printf 'Tool failed: just words\\n'"},
                },
            ]
        },
        {"content": "done"},
    )
    sid = await agent.session(folder, policy="auto")
    await agent.client.request("submitTurn", {"sessionId": sid, "text": "print things"})
    live = {u["toolCallId"]: u["status"] for u in agent.updates(sid, "toolResult")}
    items = await agent.transcript(sid)
    resumed = {i["toolCallId"]: i["toolStatus"] for i in items if i["role"] == "tool"}
    assert live == resumed, (live, resumed)
    assert all(i["content"].startswith(("Permission denied", "Tool failed")) for i in items if i["role"] == "tool")
