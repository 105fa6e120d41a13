"""Plan mode over the real server and the model double: under approval policy ``plan`` reading,
``update_plan``, ``search_transcript`` and ``read_artifact`` run; writes, edits and commands are refused without
asking, with a result that says the session is in plan mode and how to leave it; leaving it is ``updateSession``.
The policy is accepted wherever policies are (createSession, updateSession, env, initializationOptions, ACP)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from server.agent.approvals import PLAN_MODE_REFUSAL
from server.cli.client import Client
from tests.e2e.agent_support import API_KEY, REPO, Agent, agent_fixture, new_fake
from tests.harness import initialize, kind_of, log_path, server_env, start_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "name": name, "arguments": arguments}


async def test_plan_mode_runs_reading_and_planning_and_refuses_writes_and_commands_saying_how_to_leave(agent, tmp_path):
    (tmp_path / "app.py").write_text("GREETING = 'hello'\n")
    sid = await agent.session(tmp_path, policy="plan")
    agent.fake.reset()
    agent.approvals.clear()
    agent.fake.push(
        {
            "tool_calls": [
                call("r", "read_file", path="app.py"),
                call("l", "list_files"),
                call("s", "search_files", pattern="GREETING"),
                call("t", "search_transcript", query="greeting"),
                call("a", "read_artifact", artifact_id="artifact-none"),
                call("p", "update_plan", plan=[{"step": "change the greeting", "status": "pending"}]),
                call("e", "edit_file", path="app.py", old_string="hello", new_string="bonjour"),
                call("w", "write_file", path="new.py", content="x"),
                call("c", "run_command", command="touch ran.txt"),
            ]
        },
        {"content": "here is my plan"},
    )
    assert (await agent.turn(sid, "plan the change"))["stopReason"] == "endTurn"
    results = {u["toolCallId"]: u for u in agent.updates(sid, "toolResult")}
    assert {k: results[k]["status"] for k in "rlstp"} == dict.fromkeys("rlstp", "ok")
    assert results["a"]["status"] == "error" and "no artifact" in results["a"]["content"], "ran, not refused"
    for key, tool in (("e", "edit_file"), ("w", "write_file"), ("c", "run_command")):
        assert results[key]["status"] == "denied"
        assert results[key]["content"] == PLAN_MODE_REFUSAL.format(tool=tool)
    assert "plan mode" in results["e"]["content"] and "updateSession {approvalPolicy}" in results["e"]["content"]
    assert agent.approvals == [], "plan mode refuses without asking"
    assert (tmp_path / "app.py").read_text() == "GREETING = 'hello'\n"
    assert not (tmp_path / "new.py").exists() and not (tmp_path / "ran.txt").exists()

    updated = await agent.client.request("updateSession", {"sessionId": sid, "approvalPolicy": "autoEdit"})
    assert updated["approvalPolicy"] == "autoEdit"
    agent.fake.push(
        {"tool_calls": [call("e2", "edit_file", path="app.py", old_string="hello", new_string="bonjour")]},
        {"content": "done"},
    )
    assert (await agent.turn(sid, "go ahead"))["stopReason"] == "endTurn"
    assert (tmp_path / "app.py").read_text() == "GREETING = 'bonjour'\n"


async def test_plan_is_a_policy_for_updateSession_and_listSessions(agent, tmp_path):
    sid = await agent.session(tmp_path)
    updated = await agent.client.request("updateSession", {"sessionId": sid, "approvalPolicy": "plan"})
    assert updated["approvalPolicy"] == "plan"
    listed = await agent.client.request("listSessions", {"cwd": str(tmp_path)})
    assert [s.get("approvalPolicy") for s in listed["sessions"]] == ["plan"]


@pytest.mark.parametrize("where", ["env", "initializationOptions"])
async def test_plan_mode_as_the_servers_default_policy(tmp_path: Path, where: str):
    home = tmp_path / "home"
    with new_fake(api_key=API_KEY) as fake:
        env = {"THREADLINE_PROVIDER": kind_of(fake)}  # the double's kind (run.sh runs this file under each)
        env |= {"THREADLINE_APPROVAL_POLICY": "plan"} if where == "env" else {}
        options = {"approvalPolicy": "plan"} if where == "initializationOptions" else None
        proc = await start_server(home, env=server_env(home, fake.url, **env))
        server = Agent(await initialize(Client(proc), options), fake, home, log_path(home))
        try:
            sid = await server.session(tmp_path)
            fake.push({"tool_calls": [call("c", "run_command", command="touch ran.txt")]}, {"content": "ok"})
            assert (await server.turn(sid, "run it"))["stopReason"] == "endTurn"
            [result] = server.updates(sid, "toolResult")
            assert result["status"] == "denied" and "plan mode" in result["content"]
            assert not (tmp_path / "ran.txt").exists() and server.approvals == []
        finally:
            await server.client.close()


async def test_plan_mode_refuses_mcp_tools(agent, tmp_path):
    """A client's MCP server (the official SDK's, ``tests.fakes.mcp_server``) starts, but its tools do not run."""
    server = {
        "name": "fake",
        "command": sys.executable,
        "args": ["-m", "tests.fakes.mcp_server"],
        "env": [{"name": "PYTHONPATH", "value": str(REPO)}],
    }
    params = {"cwd": str(tmp_path), "approvalPolicy": "plan", "mcpServers": [server]}
    sid = (await agent.client.request("createSession", params))["sessionId"]
    agent.fake.reset()
    agent.approvals.clear()
    agent.fake.push({"tool_calls": [call("m", "mcp__fake__echo", text="hi")]}, {"content": "ok"})
    assert (await agent.turn(sid, "echo", timeout=60))["stopReason"] == "endTurn"
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "denied" and result["content"] == PLAN_MODE_REFUSAL.format(tool="mcp__fake__echo")
    assert agent.approvals == []
