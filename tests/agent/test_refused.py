"""Issue 50, pure: how large a request a full model server (llama-server's shared cache) leaves the turn."""

from __future__ import annotations

from typing import Any

from server.agent.refused import MIN_ROOM_TOKENS, SERVER_FULL_NOTE, ServerRoom, backoff, within
from server.context import FALLBACK_SUMMARY, RequestView, estimate_messages_tokens


def test_issue_50_a_refusal_halves_the_room_the_success_after_it_is_the_size_that_worked_and_later_ones_relax():
    room = ServerRoom()
    assert not room.over(10**9)  # nothing refused: no limit but the window
    assert room.refused(4000) == 2000
    assert room.over(2001) and not room.over(2000)
    room.succeeded(1500)  # the retry that worked
    assert room.cap == 1500
    room.succeeded(1500)
    assert room.cap == 1500 + max(1500 // 4, MIN_ROOM_TOKENS)  # relaxed, only after a success
    assert room.refused(100_000) == room.cap and room.cap <= 1500 + 375  # never above what it was
    assert ServerRoom().refused(100) == MIN_ROOM_TOKENS


def test_issue_50_the_back_off_is_short_and_jittered():
    waits = {round(backoff(1), 3) for _ in range(20)}
    assert len(waits) > 1 and all(0.25 <= w <= 0.75 for w in waits)
    assert all(0.75 <= backoff(3) <= 2.25 for _ in range(20))


def _view(messages: list[dict]) -> RequestView:
    tokens = estimate_messages_tokens(messages)
    return RequestView(
        messages=messages,
        mode="fallback",
        estimated_tokens=tokens,
        before_tokens=10 * tokens,
        threshold_tokens=8000,
        context_window_tokens=10000,
        keep_recent_tokens=8000,
        summary=FALLBACK_SUMMARY,
        compacted_tool_outputs=0,
        transcript_messages=40,
    )


def test_issue_50_within_the_room_the_note_says_the_server_was_full_and_the_request_is_put_back():
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    result = {"role": "tool", "tool_call_id": "c1", "content": "the file's text " * 400}
    tail: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": [call]}, result]
    view = _view([{"role": "system", "content": "rules"}, {"role": "system", "content": FALLBACK_SUMMARY}, *tail])
    kept = within(view, 600, SERVER_FULL_NOTE, "A: read a")
    roles = [m["role"] for m in kept.messages]
    assert roles == ["system", "system", "user", "assistant", "tool"]
    assert kept.messages[1]["content"] == SERVER_FULL_NOTE and kept.summary == SERVER_FULL_NOTE
    assert kept.messages[2]["content"] == "A: read a"
    assert kept.estimated_tokens <= 600 + 100 and kept.clipped_messages == 1
    assert "compaction failed" not in str(kept.messages)
