"""Background processes through the real server, the model double and this machine's sandbox
(B-SUM-11): a server the model starts with ``run_command {background: true}`` answers a later command, its output is
read incrementally, listed to the client, kept in a compaction's summary, stopped by the client; deleting the
session or SIGKILLing the server leaves none behind.

Under the default sandbox each command has its own network namespace (its own loopback), so the model's server
listens on a unix socket in the session folder, which crosses namespaces; ``tests/tools/test_background.py`` also
runs a real ``http.server`` and ``curl`` over 127.0.0.1 with ``[sandbox] network = true``.
"""

from __future__ import annotations

import asyncio
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_support import API_KEY, Agent, new_fake, start_agent

pytestmark = pytest.mark.asyncio

SERVER = r"""
import socket
s = socket.socket(socket.AF_UNIX); s.bind('srv.sock'); s.listen()
print('listening', flush=True)
while True:
    c, _ = s.accept(); data = c.recv(100); print('got', data.decode(), flush=True); c.sendall(b'pong ' + data); c.close()
"""
CLIENT = (
    "for i in $(seq 300); do [ -S srv.sock ] && break; sleep 0.1; done; "
    "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('srv.sock'); s.sendall(b'ping');"
    ' print(s.recv(100).decode())"'
)


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def wait_gone(pid: int) -> None:
    async with asyncio.timeout(30):
        while running(pid):
            await asyncio.sleep(0.05)


async def turn(agent: Agent, sid: str, *steps: dict[str, Any]) -> list[dict[str, Any]]:
    """One turn running ``steps``; the tool results it produced, in order."""
    before = len(agent.updates(sid, "toolResult"))
    agent.fake.push(*steps, {"content": "ok"})
    assert (await agent.turn(sid, "go", timeout=60))["stopReason"] == "endTurn"
    return agent.updates(sid, "toolResult")[before:]


async def start(agent: Agent, sid: str, command: str, call_id: str = "c_start") -> str:
    [result] = await turn(agent, sid, call(call_id, "run_command", command=command, background=True))
    assert result["status"] == "ok", result["content"]
    found = re.match(r"Started background process (\S+) \(pid \d+\)", result["content"])
    assert found, result["content"]
    return found.group(1)


async def processes(agent: Agent, sid: str) -> list[dict[str, Any]]:
    return (await agent.client.request("listProcesses", {"sessionId": sid}))["processes"]


async def test_B_SUM_11_a_background_server_answers_is_read_listed_summarized_and_stopped(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "server.py").write_text(SERVER)
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(tmp_path / "home", fake)
        try:
            sid = await agent.session(folder, policy="auto")
            pid_id = await start(agent, sid, "python3 server.py")
            answer, first = await turn(
                agent,
                sid,
                call("c_client", "run_command", command=CLIENT),
                call("c_out1", "process_output", processId=pid_id),
            )
            assert answer["status"] == "ok" and "pong ping" in answer["content"], answer["content"]
            assert first["content"].startswith(f"Process {pid_id} is running"), first["content"]
            [second] = await turn(agent, sid, call("c_out2", "process_output", processId=pid_id))
            both = first["content"] + second["content"]
            assert both.count("listening") == 1, "a read returns only what came since the last one"
            assert "got ping" in both

            [listed] = await processes(agent, sid)
            assert listed["processId"] == pid_id and listed["status"] == "running"
            assert listed["command"] == "python3 server.py" and "exitCode" not in listed and listed["startedAt"]
            view = await agent.client.request("getContextView", {"sessionId": sid})
            assert [p["processId"] for p in view["processes"]] == [pid_id]

            compacted = await agent.client.request("compactSession", {"sessionId": sid})
            assert compacted["compacted"], compacted
            view = await agent.client.request("getContextView", {"sessionId": sid})
            assert f"Running processes:\n- {pid_id}: python3 server.py\n" in view["summary"]

            stopped = await agent.client.request("stopProcess", {"sessionId": sid, "processId": pid_id})
            assert stopped["process"]["status"] == "stopped"
            await wait_gone(listed["pid"])
            [after] = await turn(agent, sid, call("c_out3", "process_output", processId=pid_id))
            assert after["content"].startswith(f"Process {pid_id} was stopped"), after["content"]
            bad = agent.client.request("stopProcess", {"sessionId": sid, "processId": "bg-none"})
            with pytest.raises(Exception, match=r"ProcessNotFound|no background process"):
                await bad
        finally:
            await agent.client.close()


async def test_deleting_the_session_stops_its_background_processes(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(tmp_path / "home", fake)
        try:
            sid = await agent.session(folder, policy="auto")
            await start(agent, sid, "sleep 600")
            [listed] = await processes(agent, sid)
            assert running(listed["pid"])
            await agent.client.request("deleteSession", {"sessionId": sid})
            await wait_gone(listed["pid"])
        finally:
            await agent.client.close()


async def test_the_cap_from_config_is_enforced(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[tools]\nmax_background_processes = 1\n")
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(home, fake)
        try:
            sid = await agent.session(folder, policy="auto")
            await start(agent, sid, "sleep 600")
            [refused] = await turn(agent, sid, call("c2", "run_command", command="sleep 600", background=True))
            assert refused["status"] == "error" and "max_background_processes" in refused["content"]
            assert len(await processes(agent, sid)) == 1
        finally:
            await agent.client.close()


async def test_no_background_process_remains_after_the_server_is_sigkilled(tmp_path):
    """SIGKILL gives the server no chance; its processes carry its lease's marker, and the next server on the data
    folder reaps them (the containment primitive of the process work will end them with the server itself)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(tmp_path / "home", fake)
        sid = await agent.session(folder, policy="auto")
        await start(agent, sid, "sleep 600")
        [listed] = await processes(agent, sid)
        agent.client.proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(agent.client.proc.wait(), 30)
        again = await start_agent(tmp_path / "home", fake)
        try:
            await wait_gone(listed["pid"])
            assert await processes(again, sid) == []
        finally:
            await again.client.close()
            await agent.client.close()


async def test_a_read_past_50_kb_is_kept_as_an_artifact(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(tmp_path / "home", fake)
        try:
            sid = await agent.session(folder, policy="auto")
            pid_id = await start(agent, sid, "python3 -c \"print('x' * 100000); print('the end')\"")
            for _ in range(300):  # bounded: until the process has ended and its output is all there
                if (await processes(agent, sid))[0]["status"] == "exited":
                    break
                await asyncio.sleep(0.1)
            [read] = await turn(agent, sid, call("c_big", "process_output", processId=pid_id))
            assert read["content"].startswith(f"Process {pid_id} exited with code 0"), read["content"][:200]
            assert "[artifact " in read["content"] and "the end" in read["content"]
            assert len(read["content"]) < 20_000
        finally:
            await agent.client.close()
