"""Fallback window (R-FALL-1) and the prompt-too-long retry view (R-PTL-1)."""

from __future__ import annotations

import copy

from server.context import (
    FALLBACK_SUMMARY,
    ViewSettings,
    build_request_view,
    fallback_request_view,
    fallback_window,
)

from .helpers import assistant, call, sized, system, tool, user
from .protocol_check import is_protocol_valid


def _session():
    msgs = [system("one"), system("two"), system("three")]
    for i in range(12):
        msgs += [
            sized(user(f"u{i} "), 800),
            assistant(None, call(f"c{i}")),
            sized(tool(f"c{i}", ""), 800),
            sized(assistant(f"a{i} "), 800),
        ]
    return msgs


def test_R_FALL_1_summarizer_raising_gives_the_fallback_window():
    def broken(_msgs):
        raise RuntimeError("compressor failed")

    msgs = _session()
    before = copy.deepcopy(msgs)
    view = build_request_view(
        msgs, ViewSettings(context_window_tokens=16_000, keep_recent_tokens=2_000), summarizer=broken
    )
    assert view.mode == "fallback"
    assert view.messages[:3] == [system("one"), system("two"), {"role": "system", "content": FALLBACK_SUMMARY}]
    # The last six start at a tool result, so the window starts one earlier, at the call's assistant.
    assert view.messages[3:] == msgs[-7:]
    assert view.summary == view.event_summary == FALLBACK_SUMMARY
    assert FALLBACK_SUMMARY.startswith("[compressed conversation context]") and "search_transcript" in FALLBACK_SUMMARY
    assert is_protocol_valid(view.messages) == []
    assert msgs == before


def test_R_FALL_1_at_most_two_system_messages_and_six_conversation_messages():
    msgs = _session()[:-1]  # the last six then start at a user message
    out = fallback_window(msgs)
    assert [m["role"] for m in out[:3]] == ["system"] * 3
    assert out[3:] == msgs[-6:]


def test_R_FALL_1_start_moved_back_off_a_tool_result():
    msgs = [user("go"), assistant(None, call("a"), call("b"), call("c"), call("d"))]
    msgs += [tool(x, "out " + x) for x in "abcd"] + [assistant("done"), user("next")]
    out = fallback_window(msgs)  # the last six start at tool "b"
    assert out[1]["role"] == "assistant" and len(out[1]["tool_calls"]) == 4
    assert out[1:] == msgs[1:]
    assert is_protocol_valid(out) == []


def test_R_FALL_1_repairs_what_it_is_given():
    out = fallback_window([tool("ghost", "x"), user("hi"), assistant(None, call("a"))])
    assert is_protocol_valid(out) == []
    assert out[0] == {"role": "system", "content": FALLBACK_SUMMARY}


def test_R_PTL_1_fallback_request_view_for_the_single_retry():
    msgs = _session()
    view = fallback_request_view(msgs, ViewSettings(context_window_tokens=200_000))
    assert view.mode == "fallback" and view.messages == fallback_window(msgs)
    assert view.before_tokens > view.estimated_tokens
    assert view.transcript_messages == len(msgs)
