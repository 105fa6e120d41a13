"""stdio's frames leave in one write per pass of the event loop (issue 50: one write and flush per update cost the
loop more under load than making the updates), in order, and a closed stdout ends the server instead of failing
whatever was sending."""

from __future__ import annotations

import asyncio
import os

from server.edge.stdio import Coalesced


class Pipe:
    """The real stdout's part: a pipe's write end, each write and flush recorded."""

    def __init__(self) -> None:
        self.read_fd, write_fd = os.pipe()
        self.file = os.fdopen(write_fd, "wb")
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.writes.append(data)
        return self.file.write(data)

    def flush(self) -> None:
        self.file.flush()

    def received(self) -> bytes:
        return os.read(self.read_fd, 1 << 16)


async def test_the_frames_of_one_loop_pass_go_out_in_one_write_in_order():
    pipe = Pipe()
    out = Coalesced(pipe)  # type: ignore[arg-type]
    out.attach(asyncio.get_running_loop())
    for n in range(50):
        out.write(f"frame {n};".encode())
    assert pipe.writes == []  # nothing until the pass ends
    await asyncio.sleep(0)
    assert pipe.writes == [b"".join(f"frame {n};".encode() for n in range(50))]
    assert pipe.received() == pipe.writes[0]
    out.write(b"next pass")
    await asyncio.sleep(0)
    assert pipe.writes[1:] == [b"next pass"]
    out.write(b"pending at the end")
    out.attach(None)  # serving ended: what is pending goes now, later frames at once
    out.write(b"after")
    assert pipe.writes[2:] == [b"pending at the end", b"after"]


async def test_a_closed_stdout_drops_what_is_left_and_asks_the_server_to_end():
    pipe = Pipe()
    os.close(pipe.read_fd)  # the client is gone
    ended: list[bool] = []
    out = Coalesced(pipe)  # type: ignore[arg-type]
    out.on_closed = lambda: ended.append(True)
    out.attach(asyncio.get_running_loop())
    out.write(b"x" * (1 << 17))  # more than the pipe would hold
    await asyncio.sleep(0)
    assert ended == [True] and out.closed
    out.write(b"more")  # dropped, no error
    await asyncio.sleep(0)
    assert ended == [True]
