"""The stdio transport to an MCP server, with a bound on what one message may make us read.

The SDK's ``stdio_client`` rebuilds its line buffer for every chunk read (``buffer + chunk``), which is quadratic
in the line: a 40 MB result (the SDK's servers put the text in both ``content`` and ``structuredContent``) took
over 45 s of the event loop, and every client request waited. This transport splits lines in linear time, parses
a large message off the loop, and never holds more than ``MAX_MESSAGE_BYTES`` of one: the rest of a longer line is
read and dropped as it arrives, and the request it answers gets a JSON-RPC error saying so (so the tool call
fails at once with a clear message instead of at its timeout). What fits is a normal result, which the agent loop
keeps as an artifact when it is large, as it does for built-in tools.

The process starts through the server's one launcher (``server.sandbox.start``): in its own session (process
group), inside the server's PID namespace, confined when the server opted in; with the SDK's safe default
environment plus the configured variables. Stopping is the SDK's: stdin closed, a grace period, then the whole
group killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import IO, Any

import anyio
from mcp import types as mt
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from server.sandbox.start import Confine, Contain, start

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # one message (a tool result) read from an MCP server, at most
OFF_LOOP_BYTES = 256 * 1024  # a message this large is parsed in a worker thread
STOP_GRACE_S = 2.0
TOO_LARGE = -32001  # our error code for a message over the bound (JSON-RPC's server-defined range)
_READ_CHUNK = 1 << 16
_ID = rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")'
_HEAD_ID = re.compile(rb'^\s*\{(?:\s*"jsonrpc"\s*:\s*"2\.0"\s*,)?\s*' + _ID)
_TAIL_ID = re.compile(_ID + rb"\s*\}\s*$")


@dataclass
class Oversized:
    """A line longer than the bound: its first and last bytes (to find the request id) and its length."""

    head: bytes
    tail: bytes = b""
    size: int = 0

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        self.tail = (self.tail + piece)[-512:]


@dataclass
class LineSplitter:
    """Bytes in, whole lines out, in time linear in the input; a line over ``limit`` comes out as ``Oversized``."""

    limit: int
    _buffer: bytearray = field(default_factory=bytearray)
    _over: Oversized | None = None

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        lines: list[bytes | Oversized] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if self._over is not None:
                self._over.add(piece)
            elif len(self._buffer) + len(piece) > self.limit:
                head = bytes(self._buffer[:4096]) + piece[: max(0, 4096 - len(self._buffer))]
                self._over = Oversized(head, bytes(self._buffer[-512:]), len(self._buffer))
                self._over.add(piece)
                self._buffer = bytearray()
            else:
                self._buffer += piece
            if end < 0:
                return lines
            lines.append(self._over if self._over is not None else bytes(self._buffer))
            self._buffer, self._over = bytearray(), None
            start = end + 1


def parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mt.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def too_large(over: Oversized, limit: int) -> SessionMessage | Exception:
    """The error answer to the request an over-long line answered (found by its ``id``), or a parse error."""
    found = _HEAD_ID.search(over.head) or _TAIL_ID.search(over.tail)
    message = (
        f"the MCP server sent a message of {over.size / 2**20:.1f} MB, over the {limit >> 20} MB Threadline reads "
        "from one result; it was not read (ask the tool for less)"
    )
    if found is None:
        return ValueError(message)
    error = mt.ErrorData(code=TOO_LARGE, message=message)
    return SessionMessage(mt.JSONRPCError(jsonrpc="2.0", id=json.loads(found.group(1)), error=error))


@contextlib.asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters,
    errlog: IO[str],
    limit: int = MAX_MESSAGE_BYTES,
    confine: Confine | None = None,
    contain: Contain | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """``stdio_client``'s streams (``ClientSession(read, write)``) over the server's process, started confined by
    ``confine`` (None: unconfined) and inside the namespace ``contain`` joins."""
    process = await start(
        [server.command, *server.args],
        confine=confine,
        contain=contain,
        env=get_default_environment() | (server.env or {}),
        stdin=asyncio.subprocess.PIPE,
        stderr=errlog,
        cwd=server.cwd,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_out() -> None:
        assert process.stdout is not None
        splitter = LineSplitter(limit)
        async with read_writer:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                while chunk := await process.stdout.read(_READ_CHUNK):
                    for line in splitter.feed(chunk):
                        await read_writer.send(await _message(line, limit))

    async def write_in() -> None:
        assert process.stdin is not None
        async with write_reader:
            try:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    process.stdin.write(data.encode())
                    await process.stdin.drain()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await read_writer.aclose()  # the session sees the connection end rather than waiting forever

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_out)
        tg.start_soon(write_in)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # the process must not outlive a cancelled caller
                await _stop(process)
            tg.cancel_scope.cancel()


async def _message(line: bytes | Oversized, limit: int) -> SessionMessage | Exception:
    if isinstance(line, Oversized):
        return too_large(line, limit)
    if len(line) > OFF_LOOP_BYTES:
        return await anyio.to_thread.run_sync(parse, line)
    return parse(line)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Close stdin, give the server ``STOP_GRACE_S`` to exit, then end its whole process group."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    with anyio.move_on_after(STOP_GRACE_S):
        await process.wait()
    if process.returncode is None:
        await terminate_posix_process_tree(process, STOP_GRACE_S)  # type: ignore[arg-type]  # reads pid, returncode
        with anyio.move_on_after(STOP_GRACE_S):
            await process.wait()
