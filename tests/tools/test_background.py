"""Background processes through the real tools: real processes under this machine's real sandbox.

Under the default sandbox (no network) every command gets its own network namespace, so a server on one command's
127.0.0.1 is out of another's reach: there the server listens on a unix socket in the session folder (a path
socket crosses network namespaces). With ``network = true`` the commands share the host's loopback, and a real
``python3 -m http.server`` on 127.0.0.1 answers a ``curl`` from another command.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import socket
from dataclasses import replace
from pathlib import Path

import pytest

from server.sandbox.mode import command_sandbox
from server.sandbox.policy import SandboxSettings
from server.sandbox.runner import support
from server.tools import ToolContext, run_tool
from server.tools.processes import ProcessGroups
from server.tools.running import BackgroundProcesses

sandboxed = pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}")

UNIX_SERVER = r"""
import os, socket
s = socket.socket(socket.AF_UNIX); s.bind('srv.sock'); s.listen()
print('listening', flush=True)
while True:
    c, _ = s.accept(); data = c.recv(100); print('got', data.decode(), flush=True); c.sendall(b'pong ' + data); c.close()
"""
UNIX_CLIENT = (
    "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('srv.sock'); s.sendall(b'ping');"
    ' print(s.recv(100).decode())"'
)


def with_slot(ctx: ToolContext, *, network: bool = False, cap: int = 4) -> ToolContext:
    sandbox = command_sandbox(SandboxSettings(network=network), ctx.session_id, ctx.cwd, "workspace-write")
    return replace(
        ctx,
        sandbox=sandbox,
        background=BackgroundProcesses(ctx.session_id),
        processes=ProcessGroups(),
        settings=replace(ctx.settings, max_background_processes=cap),
    )


def process_id(text: str) -> str:
    found = re.match(r"Started background process (\S+) \(pid (\d+)\)", text)
    assert found, text
    return found.group(1)


async def output_until(ctx: ToolContext, pid: str, needle: str) -> str:
    """Read the process's output until ``needle`` shows (bounded)."""
    seen = ""
    for _ in range(300):
        out = await run_tool(ctx, "process_output", {"processId": pid})
        assert out.status == "ok", out.content
        seen += out.content.split("\n", 1)[1]
        if needle in seen:
            return seen
        await asyncio.sleep(0.1)
    raise AssertionError(f"{needle!r} never came: {seen!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()


@sandboxed
async def test_a_background_server_answers_a_later_command_over_a_unix_socket(ctx):
    ctx = with_slot(ctx)
    (ctx.cwd / "server.py").write_text(UNIX_SERVER)
    started = await run_tool(ctx, "run_command", {"command": "python3 server.py", "background": True})
    assert started.status == "ok", started.content
    pid = process_id(started.content)
    assert "listening" in await output_until(ctx, pid, "listening")
    answer = await run_tool(ctx, "run_command", {"command": UNIX_CLIENT})
    assert answer.status == "ok" and "pong ping" in answer.content, answer.content
    # incremental: the second read holds only what came after the first
    later = await output_until(ctx, pid, "got ping")
    assert "listening" not in later
    stopped = await run_tool(ctx, "stop_process", {"processId": pid})
    assert stopped.content.startswith(f"Process {pid} was stopped"), stopped.content
    assert ctx.background is not None and not ctx.background


@sandboxed
async def test_a_background_http_server_answers_curl_when_the_sandbox_allows_the_network(ctx):
    ctx = with_slot(ctx, network=True)
    (ctx.cwd / "index.html").write_text("hello from the dev server\n")
    port = free_port()
    command = f"python3 -u -m http.server {port} --bind 127.0.0.1"
    pid = process_id((await run_tool(ctx, "run_command", {"command": command, "background": True})).content)
    await output_until(ctx, pid, "Serving HTTP")
    answer = await run_tool(ctx, "run_command", {"command": f"curl -s http://127.0.0.1:{port}/index.html"})
    assert "hello from the dev server" in answer.content, answer.content
    assert "GET /index.html" in await output_until(ctx, pid, "GET /index.html")
    await run_tool(ctx, "stop_process", {"processId": pid})


async def test_a_process_that_ends_reports_its_exit_code_and_last_output(ctx):
    ctx = with_slot(ctx)
    pid = process_id((await run_tool(ctx, "run_command", {"command": "echo bye; exit 3", "background": True})).content)
    seen = []  # what each read said: the output may come in a read made while the group was still running
    for _ in range(300):
        out = await run_tool(ctx, "process_output", {"processId": pid})
        seen.append(out.content)
        if not out.content.startswith(f"Process {pid} is running"):
            break
        await asyncio.sleep(0.1)
    assert out.content.startswith(f"Process {pid} exited with code 3"), out.content
    assert sum(text.count("bye") for text in seen) == 1, seen  # its output, given once


async def test_the_cap_is_enforced_and_a_stopped_process_frees_its_place(ctx):
    ctx = with_slot(ctx, cap=2)
    ids = [
        process_id((await run_tool(ctx, "run_command", {"command": "sleep 600", "background": True})).content)
        for _ in range(2)
    ]
    refused = await run_tool(ctx, "run_command", {"command": "sleep 600", "background": True})
    assert refused.status == "error" and "max_background_processes" in refused.content
    await run_tool(ctx, "stop_process", {"processId": ids[0]})
    again = await run_tool(ctx, "run_command", {"command": "sleep 600", "background": True})
    assert again.status == "ok", again.content
    assert ctx.background is not None
    await ctx.background.stop_all()


async def test_stop_ends_what_the_shell_started_too(ctx):
    ctx = with_slot(ctx)
    # Found by its argv: inside the server's PID namespace `$!` is not a pid this test can see
    seconds = str(600 + secrets.randbelow(10_000))
    started = await run_tool(ctx, "run_command", {"command": f"sleep {seconds} & echo child; wait", "background": True})
    pid = process_id(started.content)
    await output_until(ctx, pid, "child")
    (child,) = _pids_running(f"sleep\0{seconds}\0".encode())
    await run_tool(ctx, "stop_process", {"processId": pid})
    for _ in range(100):
        if not alive(child):
            break
        await asyncio.sleep(0.05)
    assert not alive(child)


def _pids_running(cmdline: bytes) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == cmdline:
                    found.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile
    return found


async def test_an_unknown_process_id_is_a_clear_failure(ctx):
    ctx = with_slot(ctx)
    out = await run_tool(ctx, "process_output", {"processId": "bg-nope"})
    assert out.status == "error" and "no background process bg-nope" in out.content


THREADED = (
    "python3 -c \"import threading; t = threading.Thread(target=print, args=('thread ran',)); t.start(); t.join()\""
)


@sandboxed
@pytest.mark.parametrize("network", [False, True])
async def test_B_PROC_1_a_contained_command_can_start_threads(ctx, network):
    """A process that joined the server's PID namespace cannot start threads itself, so the command is its child,
    born inside: node, a JVM or a threaded Python run as the shell's one command work, in front and behind."""
    ctx = with_slot(ctx, network=network)
    front = await run_tool(ctx, "run_command", {"command": THREADED})
    assert front.status == "ok" and "thread ran" in front.content, front.content
    pid = process_id((await run_tool(ctx, "run_command", {"command": THREADED, "background": True})).content)
    assert "thread ran" in await output_until(ctx, pid, "thread ran")
