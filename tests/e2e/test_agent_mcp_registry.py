"""MCP servers no one here wrote, from the npm registry: ``@modelcontextprotocol/server-everything`` over stdio and
over streamable HTTP (with a header from ``${VAR}``), its text, image, embedded-resource and structured results
reaching the model as tool results."""

from __future__ import annotations

import asyncio
import json
import os
import socket

import pytest
import pytest_asyncio

from tests.e2e.agent_support import API_KEY, new_fake, request_tools, running_agent, tool_messages
from tests.fakes.npm_servers import ensure_installed

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "http-header-secret-93ab"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agent(tmp_path_factory):
    everything = ensure_installed()
    port = free_port()
    http = await asyncio.create_subprocess_exec(
        str(everything),
        "streamableHttp",
        env={**os.environ, "PORT": str(port)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    home = tmp_path_factory.mktemp("home")
    (home / "config.toml").write_text(f"""
[mcp_servers.everything]
command = {json.dumps(str(everything))}
args = ["stdio"]

[mcp_servers.everything_http]
url = "http://127.0.0.1:{port}/mcp"
headers = {{ Authorization = "Bearer ${{MCP_TEST_SECRET}}" }}
""")
    for _ in range(100):  # the HTTP server listening
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            break
        except OSError:
            await asyncio.sleep(0.1)
    try:
        with new_fake(api_key=API_KEY) as fake:
            async with running_agent(home, fake, MCP_TEST_SECRET=SECRET) as a:
                yield a
    finally:
        http.kill()
        await http.wait()


def call(call_id: str, tool: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}]}


async def test_everything_over_stdio_and_http(agent, folder):
    agent.fake.push(
        call("c1", "mcp__everything__echo", message="hi there"),
        call("c2", "mcp__everything__get-tiny-image"),
        call("c3", "mcp__everything__get-resource-reference", resourceType="Text", resourceId=1),
        call("c4", "mcp__everything__get-structured-content", location="New York"),
        call("c5", "mcp__everything_http__get-sum", a=2, b=40),
        {"content": "done"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "use everything", timeout=60))["stopReason"] == "endTurn"
    names = [t["function"]["name"] for t in request_tools(agent.chat_requests()[0])]
    assert "mcp__everything__echo" in names and "mcp__everything_http__get-sum" in names
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(agent.chat_requests()[-1])}
    assert "hi there" in results["c1"]
    assert "[image image/png" in results["c2"]
    assert "[resource " in results["c3"]
    assert "temperature" in results["c4"]
    assert "42" in results["c5"]
    assert all(r["status"] == "ok" for r in agent.updates(sid, "toolResult"))
    servers = {s["name"]: s for s in (await agent.client.request("listMcpServers", {"sessionId": sid}))["servers"]}
    assert servers["everything_http"]["transport"] == "http" and servers["everything_http"]["state"] == "ready"
    assert SECRET not in json.dumps(servers)
    for path in agent.home.glob("threadline.db*"):  # the ${VAR} header value is in no stored byte
        assert SECRET.encode() not in path.read_bytes(), path
