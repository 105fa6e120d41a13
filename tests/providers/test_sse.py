"""The bounded SSE reader: line endings split across chunks, comments, multi-line data, and its caps."""

from __future__ import annotations

import pytest

from server.providers.sse import TooLarge, sse_data


async def collect(chunks: list[bytes], **caps: int) -> list[str]:
    async def source():
        for chunk in chunks:
            yield chunk

    limits = {"max_line_bytes": 1 << 20, "max_body_bytes": 1 << 24, **caps}
    return [event async for event in sse_data(source(), **limits)]


async def test_events_survive_any_chunking_and_every_line_ending():
    stream = b": keep-alive\r\ndata: one\r\n\r\ndata:two\rdata: lines\r\rdata: three\n\ndata: cut"
    expected = ["one", "two\nlines", "three"]
    assert await collect([stream]) == expected
    assert await collect([bytes([b]) for b in stream]) == expected  # an event not ended by a blank line is dropped


async def test_a_line_or_a_body_over_its_cap_stops_the_stream():
    with pytest.raises(TooLarge, match="one line"):
        await collect([b"data: " + b"x" * 100 for _ in range(20)], max_line_bytes=1000)
    with pytest.raises(TooLarge, match="response passed"):
        await collect([b"data: x\n\n" * 100 for _ in range(20)], max_body_bytes=5000)
