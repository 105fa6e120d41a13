"""Microcompaction (R-MICRO-1, R-MICRO-2, R-MICRO-3)."""

from __future__ import annotations

import copy

import pytest

from server.context import ViewSettings, build_request_view, is_error_evidence, microcompact, placeholder

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
    "evidence",
    [
        "Tool failed: no such module: fts5",
        "Invalid arguments for edit_file",
        "bash: /etc/shadow: Permission denied",
        "Forbidden: command rm -rf / is not allowed",
        'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad',
        "Exit code 1\nnpm ERR! missing script",
        "<returncode>2</returncode>\n<output>\n",
        "src/a.ts(3,4): error TS2304: Cannot find name 'x'",
        "error: could not compile `app`",
        "ls: cannot access 'x': No such file or directory",
        "bash: foo: command not found",
        "FAILED tests/test_a.py::test_b - AssertionError",
        "3 failed, 10 passed in 2.1s",
        "Tool call interrupted: no result was recorded (the process stopped before the tool finished).",
    ],
)
def test_R_MICRO_2_error_evidence_is_never_compacted(evidence):
    text = evidence + "\n" + BIG
    assert is_error_evidence(text)
    out, count = microcompact([assistant(None, call("a")), tool("a", text)], tail_start=2)
    assert count == 0 and out[1]["content"] == text


def test_R_MICRO_2_evidence_at_the_end_of_a_long_output_counts():
    assert is_error_evidence(BIG * 5 + "\nE   AssertionError: 1 != 2\n1 failed in 0.3s")


def test_R_MICRO_2_success_reports_are_not_evidence():
    assert not is_error_evidence("10 passed, 0 failed in 1.2s\n" + BIG)
    assert not is_error_evidence(BIG + "\nreturn {:error, reason} in the middle of code\n" + BIG)


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
