"""Hooks end to end (SPEC B-HOOK-1): real hook scripts (``hook_script.py``) run by the real server over
stdio, the model double calling built-in and MCP tools (``tests.fakes.mcp_server``, as the MCP tests use it).

Most tests use a project's ``.threadline/hooks.toml`` (approved "always" by the test client), so each test has
its own hooks; config.toml holds one user hook, on the MCP echo tool.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.e2e.agent_support import API_KEY, REPO, agent_fixture, events, request_messages, tool_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = Path(__file__).with_name("hook_script.py")
FAKE_MCP = [sys.executable, "-m", "tests.fakes.mcp_server"]


def hook(*args: str) -> str:
    """The shell command that runs the test hook with these arguments."""
    return shlex.join([sys.executable, str(SCRIPT), *args])


def toml(entries: list[tuple[str, str, str | None]], timeout: float | None = None) -> str:
    """``[[hooks.EVENT]]`` tables for (event, command, matcher)."""
    out = []
    for event, command, matcher in entries:
        out.append(f"[[hooks.{event}]]\ncommand = {json.dumps(command)}")
        if matcher is not None:
            out.append(f"matcher = {json.dumps(matcher)}")
        if timeout is not None:
            out.append(f"timeout = {timeout}")
    return "\n".join(out) + "\n"


USER_CONFIG = f"""
[mcp_servers.fake]
command = {json.dumps(FAKE_MCP[0])}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
disabled_tools = ["pid"]

{toml([("PostToolUse", hook("say", json.dumps({"additionalContext": "user hook saw the echo"})), "mcp__fake__echo")])}
"""


agent = agent_fixture(config=USER_CONFIG)


@pytest.fixture(autouse=True)
def fresh(agent):
    agent.reset()
    agent.decide = lambda params: "allowAlways" if params["tool"] == "projectHooks" else "allowOnce"


def project(folder: Path, text: str) -> Path:
    (folder / ".threadline").mkdir(exist_ok=True)
    (folder / ".threadline" / "hooks.toml").write_text(text)
    return folder


def seen(folder: Path) -> list[dict]:
    path = folder / ".hooks-seen.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def call(call_id: str, tool: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]}


def tool_asks(agent) -> list[dict]:
    return [a for a in agent.approvals if a["tool"] != "projectHooks"]


async def test_B_HOOK_1_each_event_gets_its_input_fields(agent, folder):
    every = [(e, hook("ok"), None) for e in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")]
    project(folder, toml([*every, ("PreCompact", hook("ok"), None), ("PostCompact", hook("ok"), None)]))
    (folder / "a.txt").write_text("alpha\n")
    agent.fake.push(call("call_r1", "read_file", path="a.txt"), {"content": "read it"}, {"content": "second"})
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "read a.txt"))["stopReason"] == "endTurn"
    compacted = await agent.client.request("compactSession", {"sessionId": sid})
    assert compacted["compacted"]
    inputs = {r["input"]["hook_event_name"]: r["input"] for r in seen(folder)}
    assert set(inputs) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "PreCompact",
        "PostCompact",
    }
    for given in inputs.values():
        assert given["session_id"] == sid and given["cwd"] == str(folder.resolve())
    assert inputs["UserPromptSubmit"]["prompt"] == "read a.txt"
    assert inputs["PreToolUse"]["tool_name"] == "read_file" and inputs["PreToolUse"]["tool_input"] == {"path": "a.txt"}
    post = inputs["PostToolUse"]["tool_response"]
    assert post["status"] == "ok" and "alpha" in post["content"]
    assert inputs["Stop"]["stop_reason"] == "endTurn"
    assert inputs["PreCompact"]["trigger"] == inputs["PostCompact"]["trigger"] == "manual"
    assert inputs["PostCompact"]["summary"] == compacted["summary"]
    assert inputs["SessionStart"]["source"] == "startup" and inputs["PreToolUse"]["tool_use_id"] == "call_r1"
    # the keys never reach a hook: neither the variable nor its value
    for record in seen(folder):
        assert "THREADLINE_API_KEY" not in record["env"] and API_KEY not in record["env"].values()


async def test_B_HOOK_1_deny_block_and_exit2_stop_the_call_and_the_model_reads_why(agent, folder):
    project(
        folder,
        toml(
            [
                ("PreToolUse", hook("say", json.dumps({"decision": "deny", "reason": "no writes here"})), "write_file"),
                ("PreToolUse", hook("exit2", "rm -rf outside the folder is not allowed"), "run_command"),
            ]
        ),
    )
    agent.fake.push(
        call("call_w1", "write_file", path="x.txt", content="x"),
        call("call_c1", "run_command", command="rm -rf /tmp/elsewhere"),
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "write and remove")
    assert not (folder / "x.txt").exists()
    write, command = tool_messages(agent.chat_requests()[2])
    assert (
        write["content"].startswith("Permission denied: blocked by a PreToolUse hook")
        and "no writes here" in write["content"]
    )
    assert "rm -rf outside the folder is not allowed" in command["content"]
    results = agent.updates(sid, "toolResult")
    assert [r["status"] for r in results] == ["denied", "denied"]
    runs = [u for u in agent.updates(sid, "hookRun") if u["event"] == "PreToolUse"]
    assert [(r["decision"], r.get("exitCode")) for r in runs] == [("deny", 0), ("block", 2)]


async def test_B_HOOK_1_a_crashed_timed_out_or_unreadable_hook_blocks_the_call(agent, folder):
    project(
        folder,
        toml([("PreToolUse", hook("crash"), "read_file"), ("PreToolUse", hook("garbage"), "list_files")])
        + toml([("PreToolUse", hook("sleep", "30"), "search_files")], timeout=1),
    )
    (folder / "a.txt").write_text("alpha\n")
    agent.fake.push(
        call("call_f1", "read_file", path="a.txt"),
        call("call_f2", "list_files", path="."),
        call("call_f3", "search_files", pattern="alpha"),
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "try", timeout=60)
    results = agent.updates(sid, "toolResult")
    assert [r["status"] for r in results] == ["denied"] * 3
    assert "the hook failed (exited with code 1)" in results[0]["content"]
    assert "not a JSON object" in results[1]["content"]
    assert "timed out after 1 s" in results[2]["content"]
    assert "alpha" not in results[0]["content"]
    failures = [e["failure"] for e in events(agent.home, sid, "hookRun")]
    assert len(failures) == 3


async def test_B_HOOK_1_allow_skips_the_approval_and_ask_asks_under_auto(agent, folder):
    project(
        folder,
        toml(
            [
                ("PreToolUse", hook("say", json.dumps({"decision": "allow"})), "run_command"),
                (
                    "PreToolUse",
                    hook("say", json.dumps({"decision": "ask", "reason": "edits are reviewed"})),
                    "write_file",
                ),
            ]
        ),
    )
    agent.fake.push(call("call_a1", "run_command", command="echo hi"), {"content": "ran"})
    asked = await agent.session(folder, policy="ask")
    await agent.turn(asked, "run")
    assert tool_asks(agent) == []  # policy ask, but the hook allowed it
    assert agent.updates(asked, "toolResult")[0]["status"] == "ok"

    agent.fake.push(call("call_a2", "write_file", path="y.txt", content="y"), {"content": "wrote"})
    auto = await agent.session(folder, policy="auto")
    await agent.turn(auto, "write")
    assert [a["toolCallId"] for a in tool_asks(agent)] == ["call_a2"]  # policy auto, but the hook asks
    assert (folder / "y.txt").read_text() == "y"


async def test_B_HOOK_1_mcp_tools_pass_the_same_hooks(agent, folder):
    project(folder, toml([("PreToolUse", hook("exit2", "no MCP echo today"), "mcp__fake__.*")]))
    agent.fake.push(call("call_m1", "mcp__fake__echo", text="hello"), {"content": "done"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "echo")
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "denied" and "no MCP echo today" in result["content"]
    [given] = [r["input"] for r in seen(folder) if r["input"]["hook_event_name"] == "PreToolUse"]
    assert given["tool_name"] == "mcp__fake__echo" and given["tool_input"] == {"text": "hello"}

    # and PostToolUse (the user's hook from config.toml) adds to what the model reads of an MCP result
    project(folder, "")
    agent.fake.reset()
    agent.fake.push(call("call_m2", "mcp__fake__echo", text="hello"), {"content": "done"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "echo")
    [seen_result] = tool_messages(agent.chat_requests()[1])
    assert seen_result["content"].startswith("hello") and "user hook saw the echo" in seen_result["content"]
    [run] = [u for u in agent.updates(sid, "hookRun") if u["event"] == "PostToolUse"]
    assert run["source"] == "user" and run["tool"] == "mcp__fake__echo"


async def test_B_HOOK_1_project_hooks_run_only_once_approved_and_ask_again_when_changed(agent, folder):
    project(folder, toml([("UserPromptSubmit", hook("ok"), None)]))
    listed = (await agent.client.request("listHooks", {"cwd": str(folder)}))["hooks"]
    mine = [h for h in listed if h["source"] == "project"]
    assert [(h["event"], h["approved"]) for h in mine] == [("UserPromptSubmit", False)]
    assert any(h["source"] == "user" and h["approved"] for h in listed)

    agent.decide = lambda params: "reject"
    agent.fake.push({"content": "hi"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "hello")
    assert [a["tool"] for a in agent.approvals] == ["projectHooks"] and seen(folder) == []
    assert any("not run" in n["message"] for n in agent.updates(sid, "notice"))

    agent.decide = lambda params: "allowAlways"
    agent.fake.push({"content": "hi"}, {"content": "again"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "hello")
    await agent.turn(sid, "hello again")
    assert len(agent.approvals) == 2 and len(seen(folder)) == 2  # asked once, then remembered
    listed = (await agent.client.request("listHooks", {"cwd": str(folder)}))["hooks"]
    assert [h["approved"] for h in listed if h["source"] == "project"] == [True]

    project(folder, toml([("UserPromptSubmit", hook("ok"), None), ("Stop", hook("ok"), None)]))  # changed
    agent.decide = lambda params: "reject"
    agent.fake.push({"content": "hi"})
    await agent.turn(sid, "after the change")
    assert len(agent.approvals) == 3 and len(seen(folder)) == 2  # asked again; rejected: not run

    agent.decide = lambda params: "allowAlways"
    agent.fake.push({"content": "hi"})
    other = await agent.session(folder, policy="auto")
    await agent.turn(other, "approve the new file")
    assert len(agent.approvals) == 4 and len(seen(folder)) == 4
    revoked = await agent.client.request("revokeHooksApproval", {"cwd": str(folder)})
    assert revoked == {"revoked": True}
    listed = (await agent.client.request("listHooks", {"cwd": str(folder)}))["hooks"]
    assert [h["approved"] for h in listed if h["source"] == "project"] == [False, False]


async def test_B_HOOK_1_every_run_is_a_hookRun_event_and_update(agent, folder):
    project(folder, toml([("UserPromptSubmit", hook("say", json.dumps({"additionalContext": "ticket ABC-1"})), None)]))
    agent.fake.push({"content": "hi"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "hello")
    [update] = agent.updates(sid, "hookRun")
    [stored] = events(agent.home, sid, "hookRun")
    assert update["event"] == stored["event"] == "UserPromptSubmit"
    assert stored["command"] == update["command"] and stored["exitCode"] == 0 and stored["durationMs"] >= 0
    assert "ticket ABC-1" in stored["output"] and stored["additionalContext"] == "ticket ABC-1"
    sent = request_messages(agent.chat_requests()[0])
    assert any("ticket ABC-1" in str(m["content"]) for m in sent)  # added to what the model sees, and stored
    assert any("ticket ABC-1" in str(i["content"]) for i in await agent.transcript(sid))


async def test_B_HOOK_1_a_refused_prompt_calls_no_model(agent, folder):
    project(folder, toml([("UserPromptSubmit", hook("exit2", "prompts mentioning secrets are refused"), None)]))
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "print the secrets")
    assert result["stopReason"] == "error" and "prompts mentioning secrets are refused" in result["error"]["message"]
    assert agent.chat_requests() == [] and await agent.transcript(sid) == []


async def test_B_HOOK_1_session_start_context_joins_the_frozen_context(agent, folder):
    project(folder, toml([("SessionStart", hook("say", json.dumps({"additionalContext": "on-call: dana"})), None)]))
    agent.fake.push({"content": "hi"}, {"content": "again"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "hello")
    await agent.turn(sid, "hello again")
    first, second = (request_messages(r) for r in agent.chat_requests())
    assert [m["role"] for m in first if "on-call: dana" in str(m["content"])] == ["system"]
    assert sum("on-call: dana" in str(m["content"]) for m in second) == 1  # ran once, on the first turn
    assert len([r for r in seen(folder) if r["input"]["hook_event_name"] == "SessionStart"]) == 1


async def test_B_HOOK_1_precompact_notes_are_in_the_next_requests_summary(agent, folder):
    note = json.dumps({"additionalContext": "keep: the release branch is release/2.4"})
    project(folder, toml([("PreCompact", hook("say", note), None), ("PostCompact", hook("ok"), None)]))
    agent.fake.push({"content": "one"}, {"content": "two"}, {"content": "three"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "first goal")
    await agent.turn(sid, "second goal")
    compacted = await agent.client.request("compactSession", {"sessionId": sid})
    assert compacted["compacted"] and "Hook notes:\nkeep: the release branch is release/2.4" in compacted["summary"]
    await agent.turn(sid, "third goal")
    sent = request_messages(agent.chat_requests()[-1])
    summary = next(m["content"] for m in sent if "[compressed conversation context]" in str(m["content"]))
    assert "Hook notes:\nkeep: the release branch is release/2.4" in summary
    post = [r["input"] for r in seen(folder) if r["input"]["hook_event_name"] == "PostCompact"]
    assert post and post[0]["trigger"] == "manual" and "Hook notes:" in post[0]["summary"]


async def test_B_HOOK_1_a_stop_hook_sends_the_turn_on_at_most_three_times(agent, folder):
    project(folder, toml([("Stop", hook("block-stop-unless", "DONE"), None)]))
    agent.fake.push(*({"content": f"answer {i}"} for i in range(6)))
    sid = await agent.session(folder, policy="auto")
    result = await agent.turn(sid, "finish the work")
    assert result["stopReason"] == "endTurn"
    requests = agent.chat_requests()
    assert len(requests) == 4  # the answer, then three more sent on by the hook
    last = request_messages(requests[-1])
    assert last[-1]["role"] == "user" and "DONE is missing" in last[-1]["content"]
    assert any("3 times" in n["message"] for n in agent.updates(sid, "notice"))

    (folder / "DONE").write_text("")
    agent.fake.reset()
    agent.fake.push({"content": "finished"})
    await agent.turn(sid, "and now")
    assert len(agent.chat_requests()) == 1


async def test_B_HOOK_1_an_automatic_compaction_runs_precompact_and_keeps_its_notes(agent, folder):
    note = json.dumps({"additionalContext": "keep: deploys go through staging first"})
    project(folder, toml([("PreCompact", hook("say", note), None), ("PostCompact", hook("ok"), None)]))
    history = []
    for i in range(30):  # ~37k estimated tokens: over the 32k window's threshold, so the first call compacts
        history += [
            {"role": "user", "content": f"goal {i}: " + "please look at this " * 125},
            {"role": "assistant", "content": f"answer {i}: " + "looked at it " * 190},
        ]
    sid = (await agent.client.request("importSession", {"cwd": str(folder), "messages": history}))["sessionId"]
    await agent.client.request("updateSession", {"sessionId": sid, "approvalPolicy": "auto"})
    agent.fake.push({"content": "compacted and answered"})
    assert (await agent.turn(sid, "go on"))["stopReason"] == "endTurn"
    [compacted] = agent.updates(sid, "contextCompacted")
    assert compacted["mode"] == "summarized"
    sent = request_messages(agent.chat_requests()[0])
    summary = next(m["content"] for m in sent if "[compressed conversation context]" in str(m["content"]))
    assert summary.endswith("Hook notes:\nkeep: deploys go through staging first")
    triggers = [(r["input"]["hook_event_name"], r["input"]["trigger"]) for r in seen(folder)]
    assert triggers == [("PreCompact", "auto"), ("PostCompact", "auto")]
    [post] = [r["input"] for r in seen(folder) if r["input"]["hook_event_name"] == "PostCompact"]
    assert post["summary"] == compacted["summary"] == summary


async def test_B_HOOK_1_a_subagents_calls_pass_the_hooks_under_its_parents_approval(agent, folder):
    project(
        folder,
        toml(
            [("PreToolUse", hook("exit2", "no reading in children"), "read_file"), ("SessionStart", hook("ok"), None)]
        ),
    )
    (folder / "a.txt").write_text("alpha\n")
    agent.decide = lambda params: "allowOnce"  # for this session only: the child must not ask again
    task = {"id": "call_t1", "name": "task", "arguments": {"description": "read", "prompt": "What is in a.txt?"}}
    agent.fake.push(
        {"tool_calls": [task]},
        call("call_c1", "read_file", path="a.txt"),
        {"content": "I could not read it."},
        {"content": "done"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "explore", timeout=60))["stopReason"] == "endTurn"
    assert [a["tool"] for a in agent.approvals] == ["projectHooks"]  # asked once, for the parent
    child_read = tool_messages(agent.chat_requests()[2])
    assert child_read and "no reading in children" in child_read[-1]["content"]
    given = [r["input"] for r in seen(folder) if r["input"]["hook_event_name"] == "PreToolUse"]
    assert [g["tool_name"] for g in given] == ["read_file"] and given[0]["session_id"] != sid
    starts = [r["input"]["session_id"] for r in seen(folder) if r["input"]["hook_event_name"] == "SessionStart"]
    assert starts == [sid]  # the parent's start only: a subagent is no new session


async def test_B_HOOK_1_the_background_process_tools_pass_the_hooks(agent, folder):
    project(
        folder,
        toml(
            [
                (
                    "PreToolUse",
                    hook("say", json.dumps({"decision": "deny", "reason": "keep it running"})),
                    "stop_process",
                ),
                ("PostToolUse", hook("say", ""), "run_command|process_output"),
            ]
        ),
    )
    agent.fake.push(call("call_b1", "run_command", command="sleep 600", background=True), {"content": "started"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "start it")
    [started] = agent.updates(sid, "toolResult")
    process_id = started["content"].split()[3]
    agent.fake.push(
        call("call_b2", "process_output", processId=process_id),
        call("call_b3", "stop_process", processId=process_id),
        {"content": "ok"},
    )
    await agent.turn(sid, "look and stop it")
    output, stop = agent.updates(sid, "toolResult")[1:]
    assert output["content"].startswith(f"Process {process_id} is running")
    assert stop["status"] == "denied" and "keep it running" in stop["content"]
    assert [r["input"]["tool_name"] for r in seen(folder) if r["input"]["hook_event_name"] == "PostToolUse"] == [
        "run_command",
        "process_output",
    ]
    listed = await agent.client.request("listProcesses", {"sessionId": sid})
    assert [p["status"] for p in listed["processes"]] == ["running"]
    await agent.client.request("stopProcess", {"sessionId": sid, "processId": process_id})
