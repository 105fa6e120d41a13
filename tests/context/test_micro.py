"""Microcompaction (R-MICRO-1, R-MICRO-2, R-MICRO-3)."""

from __future__ import annotations

import copy

import pytest

from server.context import ViewSettings, build_request_view, microcompact, placeholder

from .helpers import assistant, call, sized, system, text_of_tokens, tool, user
from .protocol_check import is_protocol_valid

BIG = "line of a successful build log\n" * 200


def test_R_MICRO_1_old_successful_output_becomes_exact_placeholder():
    msgs = [
        user("go"),
        assistant(None, call("a")),
        tool("a", BIG),
        user("next"),
        assistant(None, call("b")),
        tool("b", BIG),
    ]
    before = copy.deepcopy(msgs)
    out, count = microcompact(msgs, tail_start=3)
    assert count == 1
    assert out[2] == {
        "role": "tool",
        "tool_call_id": "a",
        "content": f"[old tool output compacted: {len(BIG)} characters]",
    }
    assert out[2]["content"] == placeholder(len(BIG))
    assert out[5]["content"] == BIG  # inside the tail
    assert len(out) == len(msgs) and [m["role"] for m in out] == [m["role"] for m in msgs]
    assert msgs == before  # R-SRC-2
    assert is_protocol_valid(out) == []


def test_R_MICRO_1_counts_characters_not_bytes():
    text = "上下文" * 300
    out, _ = microcompact([assistant(None, call("a")), tool("a", text)], tail_start=2)
    assert out[1]["content"] == "[old tool output compacted: 900 characters]"


def test_R_MICRO_1_tiny_outputs_and_placeholders_are_left_alone():
    msgs = [assistant(None, call("a"), call("b")), tool("a", "(no output)"), tool("b", placeholder(5000))]
    out, count = microcompact(msgs, tail_start=3)
    assert count == 0 and out == msgs


@pytest.mark.parametrize(
    "failure",
    [
        "Tool failed: no such module: fts5",
        "Tool failed: command exited with code 2\nnpm ERR! missing script",
        "Permission denied: rm -rf / needs approval",
        "Forbidden: command rm -rf / is not allowed",
        'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad',
        "Exit code 1\nnpm ERR! missing script",
        "<returncode>2</returncode>\n<output>\n",
        "error: could not compile `app`",
        "fatal: not a git repository (or any of the parent directories): .git",
        "bash: foo: command not found",
        "<tool_use_error>String to replace not found in file.</tool_use_error>",
        "Tool call interrupted: no result was recorded (the process stopped before the tool finished).",
    ],
)
def test_R_MICRO_2_B_SUM_10_a_failed_call_is_never_compacted(failure):
    text = failure + "\n" + BIG
    out, count = microcompact([assistant(None, call("a", "run_command", command="x")), tool("a", text)], 2)
    assert count == 0 and out[1]["content"] == text


def test_R_MICRO_2_B_SUM_10_an_exit_code_at_the_end_of_a_long_output_counts():
    for end in ("\nCommand exited with code 1", "\n[exit code 1]"):
        text = BIG * 5 + "\nE   AssertionError: 1 != 2\n1 failed in 0.3s" + end
        _out, count = microcompact([assistant(None, call("a", "bash", command="pytest")), tool("a", text)], 2)
        assert count == 0


def test_R_MICRO_2_B_SUM_10_the_stored_status_counts_whatever_the_text():
    msgs = [assistant(None, call("a", "mcp_tool")), dict(tool("a", BIG), tool_status="error")]
    assert microcompact(msgs, 2)[1] == 0
    assert microcompact([msgs[0], tool("a", BIG)], 2, statuses=[None, "denied"])[1] == 0
    assert microcompact([msgs[0], tool("a", BIG)], 2)[1] == 1


def test_R_MICRO_2_B_SUM_10_successful_output_that_mentions_errors_is_compacted():
    """A read of code full of error handling, a search whose hits say "not found", a passing test run: each
    succeeded, so each is an old output like any other (it used to be kept, crowding the window)."""
    read = BIG + "\nraise ValueError('Invalid: Permission denied')\nreturn {:error, reason}\n" + BIG
    grep = "src/a.py:3: # not found -> error\n" + BIG
    passed = "10 passed, 0 failed in 1.2s\n" + BIG + "\n[exit code 0]"
    msgs = [
        assistant(None, call("r"), call("g", "Grep", pattern="error"), call("t", "run_command", command="pytest")),
        tool("r", read),
        tool("g", grep),
        tool("t", passed),
    ]
    assert microcompact(msgs, 4)[1] == 3


def test_R_MICRO_2_system_user_assistant_and_summaries_are_never_compacted():
    msgs = [system(BIG), user(BIG), assistant(BIG), system("[compressed conversation context]\n" + BIG)]
    out, count = microcompact(msgs, tail_start=4)
    assert count == 0 and out == msgs


def test_R_MICRO_3_under_threshold_after_placeholders_sends_all_messages():
    msgs = [sized(system(""), 1_000), sized(user(""), 500)]
    for i in range(6):
        msgs += [assistant(None, call(f"c{i}")), tool(f"c{i}", text_of_tokens(2_000))]
    msgs += [sized(user(""), 500)]
    view = build_request_view(msgs, ViewSettings(context_window_tokens=12_000, keep_recent_tokens=1_000))
    assert view.mode == "microcompacted"
    assert len(view.messages) == len(msgs)
    assert view.summary is None
    assert view.event_summary == "[microcompaction] 6 old tool outputs replaced with placeholders"
    assert view.estimated_tokens <= view.threshold_tokens < view.before_tokens
    assert is_protocol_valid(view.messages) == []
