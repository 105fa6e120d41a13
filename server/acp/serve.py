"""``threadline acp``: the ACP agent on stdin/stdout, until the client closes stdin or a signal ends it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from acp import run_agent

from server.acp.agent import ThreadlineAgent
from server.acp.client import AcpClient
from server.acp.transport import LineTransport
from server.config import Settings
from server.edge.stdio import stdin_reader
from server.runtime import Runtime

LINE_LIMIT = 50 * 1024 * 1024  # one message per line; images make long lines
STOP_GRACE_S = 5.0  # how long the SDK's connection may take to wind down before the runtime closes anyway


def serve_acp(settings: Settings) -> int:
    # Only protocol lines may reach the client: the real stdout is kept for them, and fd 1 (stray prints,
    # anything a child inherits) becomes stderr.
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        return asyncio.run(_main(settings, out))
    except BrokenPipeError:
        return 0


async def _main(settings: Settings, out: Any) -> int:
    loop = asyncio.get_running_loop()
    # read by a thread, as ``serve`` reads: stdin may be a pipe, a file, /dev/null (which the event loop cannot
    # watch: connect_read_pipe failed on it and the agent never saw its end) or a terminal
    reader = stdin_reader(loop, 0, LINE_LIMIT)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), out
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    # A signal asks to stop, as EOF does; it never cancels the task that is closing the store (SIGTERM
    # just after EOF cancelled ``store.close()``, and aiosqlite's non-daemon thread then held the process).
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    client = AcpClient()
    client.transport = LineTransport(reader, writer)
    rt = Runtime(settings, notify=client.notify, ask=client.ask_client)
    await rt.open()
    # resume/close are stable in ACP v1 (schema 1.19); this SDK still routes them only with the unstable flag
    # ThreadlineAgent implements what it advertises; the SDK protocol also lists fork/config methods
    threadline = ThreadlineAgent(rt, client)
    serving = run_agent(threadline, client.transport, use_unstable_protocol=True)  # type: ignore[arg-type]
    agent = asyncio.ensure_future(serving)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({agent, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (agent, stopped):
            task.cancel()
        await asyncio.wait({agent, stopped}, timeout=STOP_GRACE_S)
        try:
            await rt.close()
        finally:
            client.close()
    return 0
