"""MCP end to end: the real server with MCP servers from config.toml and .mcp.json, the model double calling them.

The MCP servers are real: ``tests.fakes.mcp_server`` (written with the official SDK) for crash, slow start, huge
and error results, and ``mcp-server-time`` from PyPI (installed with the test dependencies).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from tests.e2e.agent_support import (
    REPO,
    agent_fixture,
    fresh_fixture,
    read_db,
    request_tools,
    running_agent,
    tool_messages,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "mcp-secret-value-7d41c0"
FAKE = [sys.executable, "-m", "tests.fakes.mcp_server"]
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


def module_pidfile(home: Path) -> Path:
    """Where the module's MCP servers write their pids: next to the agent's home, so it outlives the server."""
    return home.parent / "mcp-pids.txt"


def config_toml(pidfile: Path) -> str:
    fake = json.dumps(FAKE[0])
    return f"""
[mcp_servers.fake]
command = {fake}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
env = {{ FAKE_TOKEN = "${{MCP_TEST_SECRET}}", FAKE_MCP_PIDFILE = {json.dumps(str(pidfile))} }}
disabled_tools = ["pid"]
tool_timeout_s = 3

[mcp_servers.broken]
command = {fake}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
env = {{ FAKE_MCP_FAIL_START = "1" }}

[mcp_servers.sleepy]
command = {fake}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
env = {{ FAKE_MCP_START_DELAY = "30", FAKE_MCP_PIDFILE = {json.dumps(str(pidfile))} }}
startup_timeout_s = 1

[mcp_servers.time]
command = {json.dumps(TIME_SERVER)}
args = ["--local-timezone", "UTC"]

[mcp_servers.off]
command = "does-not-exist"
enabled = false
"""


agent = agent_fixture(config=lambda home: config_toml(module_pidfile(home)), env={"MCP_TEST_SECRET": SECRET})
fresh = fresh_fixture()


def call(call_id: str, tool: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]}


def tool_names(record: dict) -> list[str]:
    return [t["function"]["name"] for t in request_tools(record)]


async def test_mcp_tools_are_offered_approved_and_answered(agent, folder):
    agent.fake.push(call("call_e1", "mcp__fake__echo", text="hello from MCP"), {"content": "done"})
    sid = await agent.session(folder, policy="ask")
    result = await agent.turn(sid, "echo something")
    assert result["stopReason"] == "endTurn"

    first = agent.chat_requests()[0]
    names = tool_names(first)
    assert {"mcp__fake__echo", "mcp__fake__big", "mcp__fake__fail", "mcp__time__get_current_time"} <= set(names)
    assert "mcp__fake__pid" not in names  # disabled_tools
    assert not any(n.startswith(("mcp__broken__", "mcp__sleepy__", "mcp__off__")) for n in names)
    echo = next(t for t in request_tools(first) if t["function"]["name"] == "mcp__fake__echo")
    assert echo["function"]["parameters"]["properties"]["text"]["type"] == "string"

    [asked] = agent.approvals
    assert asked["tool"] == "mcp__fake__echo" and "hello from MCP" in asked["detail"]
    [seen] = tool_messages(agent.chat_requests()[1])
    assert seen["content"] == "hello from MCP"
    assert agent.updates(sid, "toolResult")[0]["status"] == "ok"

    # the frozen MCP tool definitions are reserved in the budget, as the built-in ones are
    fresh = await agent.session(folder)
    view = await agent.client.request("getContextView", {"sessionId": sid})
    bare = await agent.client.request("getContextView", {"sessionId": fresh})
    mcp_specs = [t for t in request_tools(first) if t["function"]["name"].startswith("mcp__")]
    assert view["reservedTokens"] - bare["reservedTokens"] >= len(json.dumps(mcp_specs)) // 5


async def test_failing_and_slow_servers_are_notices_not_failed_turns(agent, folder):
    agent.fake.push({"content": "hi"})
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "hello"))["stopReason"] == "endTurn"
    notices = [n["message"] for n in agent.updates(sid, "notice")]
    assert any("'broken' failed" in n and "refusing to start" in n for n in notices), notices
    assert any("'sleepy' failed" in n and "did not start within 1 s" in n for n in notices), notices
    states = {(s["name"], s["state"]) for s in agent.updates(sid, "mcpServerStatus")}
    assert ("fake", "ready") in states and ("broken", "failed") in states


async def test_allow_always_covers_that_mcp_tool_only(agent, folder):
    agent.decide = lambda params: "allowAlways"
    agent.fake.push(
        call("call_a1", "mcp__fake__echo", text="one"),
        {"content": "ok"},
        call("call_a2", "mcp__fake__echo", text="two"),
        {"content": "ok"},
        call("call_a3", "mcp__fake__env_digest", name="FAKE_TOKEN"),
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="autoEdit")
    await agent.turn(sid, "first")
    await agent.turn(sid, "second")
    await agent.turn(sid, "third")
    assert [a["toolCallId"] for a in agent.approvals] == ["call_a1", "call_a3"]
    # ${MCP_TEST_SECRET} reached the server's environment
    digest = tool_messages(agent.chat_requests()[-1])[-1]["content"]
    assert digest == hashlib.sha256(SECRET.encode()).hexdigest()


async def test_a_large_result_becomes_an_artifact(agent, folder):
    agent.fake.push(call("call_big", "mcp__fake__big", kilobytes=80), {"content": "ok"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "big")
    [created] = agent.updates(sid, "artifactCreated")
    assert created["toolCallId"] == "call_big" and created["totalBytes"] > 80 * 1024
    [seen] = tool_messages(agent.chat_requests()[1])
    assert len(seen["content"]) < 50 * 1024 and created["artifactId"] in seen["content"]


async def test_errors_are_tool_failures(agent, folder):
    agent.fake.push(call("call_f", "mcp__fake__fail", message="no such thing"), {"content": "ok"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "fail")
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "error" and result["content"].startswith("Tool failed:")


async def test_a_call_that_times_out_is_a_tool_failure_and_the_server_stays_up(agent, folder):
    agent.fake.push(
        call("call_slow", "mcp__fake__slow", seconds=30),
        {"content": "too slow"},
        call("call_next", "mcp__fake__echo", text="still here"),
        {"content": "ok"},
    )
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "slow")
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "error" and result["content"].startswith("Tool failed:")
    assert "did not answer within 3 s" in result["content"]
    await agent.turn(sid, "again")
    assert agent.updates(sid, "toolResult")[-1]["content"] == "still here"


async def test_the_time_server_from_pypi(agent, folder):
    agent.fake.push(call("call_t", "mcp__time__get_current_time", timezone="UTC"), {"content": "ok"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "what time is it")
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "ok" and "UTC" in result["content"], result


async def test_a_crashed_server_is_a_tool_failure_then_restarts(agent, folder):
    agent.fake.push(call("call_c", "mcp__fake__crash"), {"content": "it crashed"})
    sid = await agent.session(folder, policy="auto")
    await agent.turn(sid, "crash it")
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "error" and result["content"].startswith("Tool failed:")
    await agent.wait_for(
        lambda: any(s["name"] == "fake" and s["state"] == "failed" for s in agent.updates(sid, "mcpServerStatus"))
    )
    assert any("'fake' failed" in n["message"] for n in agent.updates(sid, "notice"))
    # a call made while it restarts waits for it rather than failing
    agent.fake.push(call("call_after", "mcp__fake__echo", text="back"), {"content": "ok"})
    await agent.turn(sid, "again")
    assert agent.updates(sid, "toolResult")[-1]["content"] == "back"
    servers = (await agent.client.request("listMcpServers", {}))["servers"]
    assert next(s for s in servers if s["name"] == "fake")["restarts"] >= 1


async def test_a_project_server_starts_only_once_approved(agent, tmp_path):
    project = tmp_path / "cloned"
    project.mkdir()
    pidfile = tmp_path / "project-pids.txt"
    (project / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "proj": {
                        "command": FAKE[0],
                        "args": FAKE[1:],
                        "env": {"FAKE_MCP_PIDFILE": str(pidfile), "PYTHONPATH": str(REPO)},
                    }
                }
            }
        )
    )
    agent.decide = lambda params: "reject" if params["tool"] == "mcpServer" else "allowOnce"
    agent.fake.push({"content": "hi"})
    sid = await agent.session(project, policy="auto")
    listed = (await agent.client.request("listMcpServers", {"sessionId": sid}))["servers"]
    assert next(s for s in listed if s["name"] == "proj")["state"] == "needsApproval"
    await agent.turn(sid, "hello")
    [asked] = agent.approvals
    assert asked["tool"] == "mcpServer" and "tests.fakes.mcp_server" in asked["detail"]
    assert "mcp__proj__echo" not in tool_names(agent.chat_requests()[0])
    await asyncio.sleep(0.5)
    assert not pidfile.exists()

    agent.decide = lambda params: "allowAlways"
    agent.fake.push({"content": "hi"}, {"content": "hi again"})
    sid2 = await agent.session(project, policy="auto")
    await agent.turn(sid2, "hello")
    assert len(agent.approvals) == 2 and pidfile.exists()
    assert "mcp__proj__echo" in tool_names(agent.chat_requests()[1])
    sid3 = await agent.session(project, policy="auto")
    await agent.turn(sid3, "hello")
    assert len(agent.approvals) == 2  # remembered for the project

    revoked = await agent.client.request("revokeMcpServerApproval", {"cwd": str(project), "name": "proj"})
    assert revoked == {"revoked": True}
    agent.decide = lambda params: "reject"
    agent.fake.push({"content": "hi"})
    sid4 = await agent.session(project, policy="auto")
    await agent.turn(sid4, "hello")
    assert len(agent.approvals) == 3 and agent.approvals[-1]["tool"] == "mcpServer"


async def test_client_servers_from_createSession(agent, folder):
    sid = (
        await agent.client.request(
            "createSession",
            {
                "cwd": str(folder),
                "approvalPolicy": "auto",
                "mcpServers": [
                    {
                        "name": "editor",
                        "command": FAKE[0],
                        "args": FAKE[1:],
                        "env": [{"name": "PYTHONPATH", "value": str(REPO)}, {"name": "EDITOR_TOKEN", "value": SECRET}],
                    }
                ],
            },
        )
    )["sessionId"]
    agent.fake.push(call("call_ed", "mcp__editor__env_digest", name="EDITOR_TOKEN"), {"content": "ok"})
    await agent.turn(sid, "use the editor's server")
    assert agent.updates(sid, "toolResult")[0]["content"] == hashlib.sha256(SECRET.encode()).hexdigest()
    bad = agent.client.request("createSession", {"cwd": str(folder), "mcpServers": [{"name": "x"}]})
    with pytest.raises(Exception, match="command"):
        await bad


async def test_listMcpServers_shows_state_transport_and_tools(agent, folder):
    servers = {s["name"]: s for s in (await agent.client.request("listMcpServers", {}))["servers"]}
    assert servers["fake"]["state"] == "ready" and servers["fake"]["transport"] == "stdio"
    assert any(t["modelName"] == "mcp__fake__echo" for t in servers["fake"]["tools"])
    assert SECRET not in json.dumps(servers) and "FAKE_TOKEN" in servers["fake"]["commandLine"]
    assert servers["off"]["state"] == "stopped"


async def test_zz_secrets_are_not_stored_and_no_server_outlives_the_server(agent):
    db = (agent.home / "threadline.db").read_bytes()
    for path in agent.home.glob("threadline.db*"):
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in agent.stderr_path.read_text(errors="replace")
    assert db
    frozen = read_db(agent.home, "SELECT payload FROM events WHERE kind = 'mcpToolsFrozen'")
    assert frozen and all(SECRET not in p for (p,) in frozen)
    await agent.client.close()
    pids = [int(p) for p in module_pidfile(agent.home).read_text().split()]
    assert pids
    await asyncio.sleep(0.5)
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    details = {
        pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:200]
        for pid in alive
        if Path(f"/proc/{pid}/cmdline").exists()
    }
    assert not alive, f"MCP servers still running: {details}"


async def test_zzz_the_frozen_tools_survive_a_restart_and_a_config_change(agent, folder):
    """R-FRZ-1 for MCP: an old session keeps the tool list of its first turn after a restart, even when
    config.toml gained a server; a new session sees the new one. Runs after the module's server has exited."""
    home = agent.home
    [(old_sid,)] = read_db(home, "SELECT session_id FROM events WHERE kind = 'mcpToolsFrozen' ORDER BY id LIMIT 1")
    config = (home / "config.toml").read_text()
    (home / "config.toml").write_text(
        config
        + f"""
[mcp_servers.later]
command = {json.dumps(FAKE[0])}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
"""
    )
    agent.fake.reset()
    async with running_agent(home, agent.fake, MCP_TEST_SECRET=SECRET) as again:
        agent.fake.push(call("call_r", "mcp__fake__echo", text="after restart"), {"content": "ok"})
        result = await asyncio.wait_for(again.client.request("submitTurn", {"sessionId": old_sid, "text": "again"}), 60)
        assert result["stopReason"] == "endTurn"
        names = tool_names(again.chat_requests()[0])
        assert "mcp__fake__echo" in names and not any(n.startswith("mcp__later__") for n in names)
        assert tool_messages(again.chat_requests()[1])[-1]["content"] == "after restart"

        agent.fake.push({"content": "hi"})
        new_sid = await again.session(folder, policy="auto")
        await asyncio.wait_for(again.client.request("submitTurn", {"sessionId": new_sid, "text": "hi"}), 60)
        assert "mcp__later__echo" in tool_names(again.chat_requests()[-1])
