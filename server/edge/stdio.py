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
from typing import TYPE_CHECKING

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


def serve_stdio(settings: Settings) -> int:
    from server.edge.app import ThreadlineServer  # here: ``threadline acp`` reads stdin as this does, without pygls

    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but protocol frames may reach the real stdout

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    async def main() -> int:
        app = ThreadlineServer(settings)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGHUP):  # end as `exit` does: turns cancelled, commands' groups killed
            loop.add_signal_handler(signum, app.request_exit, 128 + signum)
        return await app.serve(stdin_reader(loop), write)

    try:
        return asyncio.run(main())
    except BrokenPipeError:
        return 0
