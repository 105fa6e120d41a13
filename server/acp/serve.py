"""``threadline acp``: the ACP agent on stdin/stdout, until the client closes stdin or a signal ends it."""

from __future__ import annotations

import asyncio
import os
import signal

from acp import run_agent

from server.acp.agent import ThreadlineAgent
from server.acp.client import AcpClient
from server.acp.transport import LineTransport
from server.acp_doorman import Doorman
from server.config import Settings
from server.edge.stdio import stdin_reader
from server.runtime import Runtime

LINE_LIMIT = 50 * 1024 * 1024  # one message per line; images make long lines
STOP_GRACE_S = 5.0  # how long the SDK's connection may take to wind down before the runtime closes anyway


def serve_acp(settings: Settings, doorman: Doorman) -> int:
    """The agent on the protocol's stdin and stdout as ``server.serve.serve_acp`` set them up: ``doorman`` has
    answered (or is answering) ``initialize`` and hands on the rest of stdin; fd 1 is stderr by now."""
    try:
        return asyncio.run(_main(settings, doorman))
    except BrokenPipeError:
        return 0


class _Output:
    """The protocol's stdout, written whole line by line (as ``serve`` writes its frames): a pipe, a file or a
    terminal alike (asyncio's pipe transport refuses a regular file, so ``threadline acp > log`` failed)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.closed = fd, False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    async def drain(self) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


async def _main(settings: Settings, doorman: Doorman) -> int:
    loop = asyncio.get_running_loop()
    # read by a thread, as ``serve`` reads: stdin may be a pipe, a file, /dev/null (which the event loop cannot
    # watch: connect_read_pipe failed on it and the agent never saw its end) or a terminal
    reader = stdin_reader(loop, 0, LINE_LIMIT, doorman.read)
    writer = _Output(doorman.out_fd)
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
