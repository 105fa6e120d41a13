"""``server.mcp.stdio``: lines split across any chunking, and an over-long line answered as an error for its id."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError

from server.mcp.stdio import LineSplitter, Oversized, too_large


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.binary(max_size=40).filter(lambda b: b"\n" not in b), max_size=8), cuts=st.data())
def test_lines_come_out_whole_however_the_bytes_are_chunked(lines, cuts):
    data = b"".join(line + b"\n" for line in lines)
    points = sorted(cuts.draw(st.lists(st.integers(0, len(data)), max_size=6)))
    splitter, out = LineSplitter(limit=30), []
    for start, end in zip([0, *points], [*points, len(data)], strict=True):
        out += splitter.feed(data[start:end])
    assert len(out) == len(lines)
    for got, want in zip(out, lines, strict=True):
        if len(want) > 30:
            assert isinstance(got, Oversized) and got.size == len(want)
        else:
            assert got == want


def test_an_over_long_result_becomes_an_error_answer_to_its_request():
    splitter = LineSplitter(limit=100)
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "x" * 500}]}})
    [over] = splitter.feed(body.encode() + b"\n")
    assert isinstance(over, Oversized)
    answer = too_large(over, 100)
    assert isinstance(answer, SessionMessage) and isinstance(answer.message, JSONRPCError)
    assert answer.message.id == 7 and "not read" in answer.message.error.message
    tail_id = json.dumps({"result": {"text": "y" * 500}, "jsonrpc": "2.0", "id": "r-9"})
    [over] = LineSplitter(limit=100).feed(tail_id.encode() + b"\n")
    assert isinstance(over, Oversized)
    answer = too_large(over, 100)
    assert isinstance(answer, SessionMessage) and isinstance(answer.message, JSONRPCError)
    assert answer.message.id == "r-9"
