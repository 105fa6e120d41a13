"""Oversized messages shortened in the view so a fallback fits the window (beyond the article: R-FALL-1 keeps
six messages verbatim, which cannot help when one of them is larger than the window)."""

from __future__ import annotations

import copy
from typing import Any

from server.context import (
    ViewSettings,
    build_request_view,
    clip_to_budget,
    estimate_messages_tokens,
    fit_to_window,
)
from server.context.clip import MIN_KEEP_TOKENS
from tests.context.protocol_check import is_protocol_valid

HUGE = "".join(f"log line {i}: something happened here\n" for i in range(4000))  # ~150k chars


def transcript() -> list[dict]:
    return [
        {"role": "system", "content": "system prompt"},
        {"role": "user", "content": "look at this log:\n" + HUGE},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "short result"},
        {"role": "assistant", "content": "what should I do with it?"},
    ]


def test_under_budget_nothing_changes():
    msgs = transcript()[2:]
    out, clipped = clip_to_budget(msgs, 10_000)
    assert out == msgs and clipped == 0


def test_R_SRC_2_the_largest_message_is_cut_in_the_view_only():
    msgs = transcript()
    before = copy.deepcopy(msgs)
    out, clipped = clip_to_budget(msgs, 3_000)
    assert msgs == before, "the input (the transcript's messages) is never modified"
    assert clipped == 1 and estimate_messages_tokens(out) <= 3_000
    user = out[1]["content"]
    assert user.startswith("look at this log:\nlog line 0") and user.rstrip().endswith(
        "log line 3999: something happened here"
    )
    assert "characters of this message omitted to fit the context window" in user
    assert out[0] == msgs[0] and out[2:] == msgs[2:]
    assert is_protocol_valid(out) == []


def test_the_text_of_a_message_with_an_image_is_cut_and_the_image_kept():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "what is wrong here?\n" + HUGE}, image]},
        {"role": "assistant", "content": "let me look"},
    ]
    before = copy.deepcopy(msgs)
    out, clipped = clip_to_budget(msgs, 5_000)
    assert clipped == 1 and estimate_messages_tokens(out) <= 5_000 and msgs == before
    text, kept = out[0]["content"]
    assert kept == image and text["type"] == "text" and text["text"].startswith("what is wrong here?")
    assert "omitted to fit the context window" in text["text"] and out[1] == msgs[1]


def test_system_messages_and_unparseable_arguments_are_never_cut():
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": HUGE},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": HUGE}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    out, clipped = clip_to_budget(msgs, 1_000)
    assert clipped == 0 and out == msgs


def test_long_tool_call_arguments_are_cut_and_stay_valid_json():
    import json

    args = {"path": "big.txt", "content": HUGE}
    msgs: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": json.dumps(args)}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Created big.txt"},
    ]
    out, clipped = clip_to_budget(msgs, 2_000)
    assert clipped == 1 and estimate_messages_tokens(out) <= 2_000
    sent = json.loads(out[0]["tool_calls"][0]["function"]["arguments"])
    assert sent["path"] == "big.txt" and "omitted to fit the context window" in sent["content"]
    assert out[0]["tool_calls"][0]["id"] == "c1" and out[1] == msgs[1]


def test_a_clipped_message_keeps_a_minimum_and_it_is_deterministic():
    out1, _ = clip_to_budget(transcript(), 10)
    out2, _ = clip_to_budget(transcript(), 10)
    assert out1 == out2
    assert estimate_messages_tokens([out1[1]]) >= MIN_KEEP_TOKENS


def _broken(_msgs):
    raise RuntimeError("compressor down")


def test_fit_to_window_only_touches_a_fallback_view_over_the_window():
    settings = ViewSettings(context_window_tokens=4_000, keep_recent_tokens=500)
    pasted = [*transcript()[2:], {"role": "user", "content": "and this one:\n" + HUGE}]  # the last message is huge
    view = build_request_view(pasted, settings, summarizer=_broken)  # R-FALL-1: the compressor raised
    assert view.mode == "fallback" and view.estimated_tokens > settings.context_window_tokens
    fitted = fit_to_window(view)
    assert fitted.clipped_messages == 1 and fitted.estimated_tokens <= settings.threshold_tokens
    assert is_protocol_valid(fitted.messages) == []
    small = build_request_view(transcript()[2:], settings)
    assert fit_to_window(small) is small
