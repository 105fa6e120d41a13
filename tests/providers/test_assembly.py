"""Chunk assembly is independent of how a server fragments its stream."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from server.providers.assembly import ChatAssembler


def pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=100, deadline=None)
@given(
    st.text(max_size=200),
    st.text(min_size=1, max_size=200),
    st.lists(st.integers(0, 200), max_size=30),
    st.lists(st.integers(0, 200), max_size=30),
    st.booleans(),
)
def test_any_fragmentation_of_text_and_interleaved_calls_assembles_the_same(content, args, cuts, arg_cuts, index):
    assembler = ChatAssembler()
    for piece in pieces(content, cuts):
        assembler.add_chunk({"choices": [{"delta": {"content": piece}}]})
    for slot, call_id in enumerate(["call_a", "call_b"]):
        first = {"id": call_id, "function": {"name": f"tool_{slot}", "arguments": ""}}
        assembler.add_chunk({"choices": [{"delta": {"tool_calls": [{"index": slot, **first} if index else first]}}]})
    for piece in pieces(args, arg_cuts):  # fragments of both calls interleave, joined by index
        for slot in (0, 1):
            assembler.add_chunk(
                {"choices": [{"delta": {"tool_calls": [{"index": slot, "function": {"arguments": piece}}]}}]}
            )
    assembler.add_chunk({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    result = assembler.result()
    assert result.content == content
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call_a", "tool_0", args if args.strip() else "{}"),
        ("call_b", "tool_1", args if args.strip() else "{}"),
    ]
    assert result.finish_reason == "tool_calls"
