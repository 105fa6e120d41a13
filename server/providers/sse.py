"""Server-sent events from a byte stream, with limits: no line and no body may grow without bound.

httpx-sse buffers a whole line before it yields anything, so one 200 MB ``data:`` line from a broken or hostile
server would be held in memory whole. Here bytes are split into lines as they arrive and a line or a body over
its cap raises ``TooLarge`` at once, before more is read. Only ``data`` fields matter to Chat Completions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator


class TooLarge(Exception):
    """The stream passed a cap; the message says which."""


async def sse_data(chunks: AsyncIterator[bytes], *, max_line_bytes: int, max_body_bytes: int) -> AsyncIterator[str]:
    """The ``data`` of each event in ``chunks`` (multi-line data joined with ``\\n``), in order."""
    buffer = bytearray()
    data: list[str] = []
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > max_body_bytes:
            raise TooLarge(f"the response passed {max_body_bytes} bytes")
        buffer += chunk
        for line in _complete_lines(buffer):
            event = _take_line(line, data)
            if event is not None:
                yield event
        if len(buffer) > max_line_bytes:
            raise TooLarge(f"one line of the event stream passed {max_line_bytes} bytes")
    # An event not ended by a blank line was cut off: it is not dispatched (as httpx-sse and browsers do).


def _complete_lines(buffer: bytearray) -> list[bytes]:
    """Remove and return the complete lines (ended by CRLF, LF or CR) at the front of ``buffer``."""
    lines: list[bytes] = []
    start = 0
    while True:
        lf, cr = buffer.find(b"\n", start), buffer.find(b"\r", start)
        ends = [i for i in (lf, cr) if i >= 0]
        if not ends:
            break
        end = min(ends)
        if buffer[end] == ord("\r"):
            if end + 1 == len(buffer):
                break  # a CR at the very end may be the first half of a CRLF: wait for the next chunk
            width = 2 if buffer[end + 1] == ord("\n") else 1
        else:
            width = 1
        lines.append(bytes(buffer[start:end]))
        start = end + width
    del buffer[:start]
    return lines


def _take_line(line: bytes, data: list[str]) -> str | None:
    """Fold one line into the event being built; returns the event's data when a blank line ends it."""
    if not line:
        if not data:
            return None
        event = "\n".join(data)
        data.clear()
        return event
    if line.startswith(b":"):
        return None  # a comment (keep-alive)
    name, _, value = line.partition(b":")
    if name == b"data":
        data.append((value[1:] if value.startswith(b" ") else value).decode("utf-8", "replace"))
    return None
