"""Tool-protocol repair (R-REP-1, R-REP-2), key stripping (R-SRC-3) and no mutation (R-SRC-2)."""

from __future__ import annotations

import copy

from server.context import INTERRUPTED_RESULT, repair_tool_pairing

from .helpers import assistant, call, system, tool, user
from .protocol_check import is_protocol_valid


def test_R_REP_1_missing_result_gets_interrupted_result_after_the_run():
    msgs = [user("go"), assistant(None, call("a"), call("b")), tool("a", "A out"), user("next")]
    out = repair_tool_pairing(msgs)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "tool", "user"]
    assert out[3] == {"role": "tool", "tool_call_id": "b", "content": INTERRUPTED_RESULT}
    assert INTERRUPTED_RESULT.startswith("Tool call interrupted")
    assert is_protocol_valid(out) == []


def test_R_REP_1_call_at_the_very_end_without_result():
    out = repair_tool_pairing([user("go"), assistant("reading", call("x"))])
    assert out[-1]["tool_call_id"] == "x" and out[-1]["content"] == INTERRUPTED_RESULT


def test_R_REP_1_orphan_result_is_removed():
    msgs = [user("go"), tool("ghost", "no call"), assistant("hi")]
    assert repair_tool_pairing(msgs) == [user("go"), assistant("hi")]


def test_R_REP_2_result_not_directly_after_its_call_is_removed():
    msgs = [user("go"), assistant(None, call("a")), user("interjection"), tool("a", "late")]
    out = repair_tool_pairing(msgs)
    assert [m.get("content") for m in out] == ["go", None, INTERRUPTED_RESULT, "interjection"]
    assert is_protocol_valid(out) == []


def test_R_REP_2_results_reordered_to_call_order_and_duplicates_keep_first():
    msgs = [assistant(None, call("a"), call("b")), tool("b", "B1"), tool("a", "A1"), tool("b", "B2"), tool("z", "?")]
    out = repair_tool_pairing(msgs)
    assert [(m.get("tool_call_id"), m["content"]) for m in out[1:]] == [("a", "A1"), ("b", "B1")]


def test_R_REP_2_conversation_never_starts_with_a_tool_result():
    out = repair_tool_pairing([system("s"), tool("a", "x"), user("hi")])
    assert out == [system("s"), user("hi")]
    assert is_protocol_valid(out) == []


def test_R_REP_2_empty_tool_calls_list_is_dropped():
    out = repair_tool_pairing([{"role": "assistant", "content": "hi", "tool_calls": []}])
    assert out == [{"role": "assistant", "content": "hi"}]


def test_R_SRC_3_reasoning_and_bookkeeping_keys_are_stripped():
    msgs = [
        {
            "role": "assistant",
            "content": "ok",
            "reasoning": "think",
            "reasoning_content": "t",
            "seq": 3,
            "status": "interrupted",
        }
    ]
    assert repair_tool_pairing(msgs) == [{"role": "assistant", "content": "ok"}]


def test_R_SRC_2_input_is_never_mutated_and_output_shares_no_dicts():
    msgs = [
        user("go"),
        assistant(None, call("a"), call("b")),
        tool("b", "B"),
        tool("x", "X"),
        {"role": "user", "content": [{"type": "text", "text": "t"}]},
    ]
    before = copy.deepcopy(msgs)
    out = repair_tool_pairing(msgs)
    assert msgs == before
    out[1]["tool_calls"][0]["function"]["name"] = "changed"
    out[-1]["content"][0]["text"] = "changed"
    assert msgs == before


def test_R_REP_1_repair_is_idempotent():
    msgs = [tool("q", "orphan"), assistant(None, call("a"), call("b")), tool("b", "B"), user("u"), tool("a", "late")]
    once = repair_tool_pairing(msgs)
    assert repair_tool_pairing(once) == once
