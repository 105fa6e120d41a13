"""``threadline serve`` on stdio: one client, one server, whose turns end with it.

stdin is read by a thread (it may be a pipe, a file or a terminal) with a bound on what it reads ahead; nothing but
protocol frames reaches the real stdout.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from server.config import Settings

STDIN_HIGH_WATER = 1 << 20  # bytes read ahead of the framing; beyond this the pump waits


def stdin_reader(
    loop: asyncio.AbstractEventLoop, fd: int = 0, limit: int = 1 << 16, read: Callable[[int], bytes] | None = None
) -> asyncio.StreamReader:
    """A StreamReader fed by a thread, so stdin may be a pipe, a file or a terminal alike.

    The thread waits while the reader holds more than ``STDIN_HIGH_WATER`` unread bytes, so a client writing
    faster than we frame (or one huge message being discarded) never fills memory. ``read``: how a chunk is read
    (default ``os.read(fd, n)``; ``threadline acp`` reads through what answered its ``initialize``).
    """
    take = read or (lambda size: os.read(fd, size))
    reader = asyncio.StreamReader(limit=limit)
    in_flight = [0]  # bytes handed to the loop but not yet in the reader (a busy loop may lag behind the thread)
    lock = threading.Lock()

    def feed(chunk: bytes) -> None:
        reader.feed_data(chunk)
        with lock:
            in_flight[0] -= len(chunk)

    def pump() -> None:
        try:
            while True:
                try:
                    chunk = take(1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    loop.call_soon_threadsafe(reader.feed_eof)
                    return
                with lock:
                    in_flight[0] += len(chunk)
                loop.call_soon_threadsafe(feed, chunk)
                # StreamReader has no flow control for a thread feeding it; reading its buffer's length is safe.
                # Queued callbacks count too: on a loaded machine they, not the buffer, would hold the bytes.
                while in_flight[0] + len(reader._buffer) > STDIN_HIGH_WATER and not loop.is_closed():  # type: ignore[attr-defined]
                    time.sleep(0.002)
        except RuntimeError:  # the loop closed under us (the server is exiting): nothing left to feed
            return

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return reader


class Coalesced:
    """stdout as the event loop writes it: the frames of one pass of the loop go out in one ``write`` and one
    flush at its end, not one system call (and one wake-up of the client) each. Under load a pass sends dozens of
    updates; written one by one they cost the loop more than making them did (issue 50). Order is kept (one
    buffer, written whole); nothing waits longer than the pass it was made in. A closed stdout (the client is
    gone) drops what is left and ends the server, as EOF on stdin does."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._pending = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.on_closed: Callable[[], None] = lambda: None
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        if self._loop is None:  # outside a loop (before it runs, after it closed): at once
            self._pending += data
            self.flush()
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending += data

    def attach(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.flush()
        self._loop = loop

    def flush(self) -> None:
        if not self._pending or self.closed:
            return
        data, self._pending = bytes(self._pending), bytearray()
        try:
            self._out.write(data)
            self._out.flush()
        except (BrokenPipeError, ValueError):  # the client closed its end (ValueError: our stdout was closed)
            self.closed = True
            self.on_closed()


def serve_stdio(settings: Settings) -> int:
    from server.edge.app import ThreadlineServer  # here: ``threadline acp`` reads stdin as this does, without pygls

    out = Coalesced(sys.stdout.buffer)
    sys.stdout = sys.stderr  # nothing but protocol frames may reach the real stdout

    async def main() -> int:
        app = ThreadlineServer(settings)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGHUP):  # end as `exit` does: turns cancelled, commands' groups killed
            loop.add_signal_handler(signum, app.request_exit, 128 + signum)
        out.attach(loop)
        out.on_closed = lambda: app.request_exit(0)
        try:
            return await app.serve(stdin_reader(loop), out.write)
        finally:
            out.attach(None)  # what the pass that ended serving wrote, then later frames at once

    try:
        return asyncio.run(main())
    except BrokenPipeError:
        return 0
    finally:
        out.flush()
