"""Safe tail selection (R-TAIL-1, R-TAIL-2, R-TAIL-3, B-TAIL-4)."""

from __future__ import annotations

from server.context import estimate_message_tokens, safe_tail_start

from .helpers import assistant, call, sized, system, tool, user


def test_R_TAIL_1_selection_is_by_tokens_not_by_count():
    small = [sized(user(""), 100) if i % 2 == 0 else sized(assistant(""), 100) for i in range(30)]
    assert safe_tail_start(small, 1000) == 20  # ten messages of 100
    big = [sized(user(""), 100), sized(assistant(""), 900), sized(user(""), 900)]
    assert safe_tail_start(big, 1000) == 2  # one message, though two would be "few"


def test_R_TAIL_1_uses_given_token_counts():
    msgs = [user("a"), assistant("b"), user("c")]
    assert safe_tail_start(msgs, 10, token_counts=[5, 5, 5]) == 1
    assert safe_tail_start(msgs, 10, token_counts=[1, 1, 20]) == 2


def test_R_TAIL_2_last_message_alone_over_budget_is_kept():
    msgs = [sized(user(""), 50), sized(assistant(""), 50_000)]
    assert safe_tail_start(msgs, 8_000) == 1


def test_R_TAIL_3_tail_starting_at_a_tool_result_extends_to_its_call():
    msgs = [
        sized(user(""), 100),
        sized(assistant(None, call("a")), 3_000),
        sized(tool("a", ""), 900),
        sized(assistant(""), 100),
    ]
    start = safe_tail_start(msgs, 1_000)
    assert start == 1  # the assistant holding call "a", over budget
    assert sum(estimate_message_tokens(m) for m in msgs[start:]) > 1_000


def test_B_TAIL_4_start_inside_a_run_of_parallel_results_takes_the_whole_unit():
    calls = [call(f"c{i}") for i in range(5)]
    msgs = [sized(user(""), 100), sized(assistant(None, *calls), 400)]
    msgs += [sized(tool(f"c{i}", ""), 400) for i in range(5)]
    msgs.append(sized(assistant(""), 100))
    start = safe_tail_start(msgs, 1_000)  # the budget ends inside the run of results
    assert start == 1
    assert all(m["role"] == "tool" for m in msgs[2:7])


def test_R_TAIL_3_tool_result_whose_call_is_far_back():
    calls = [call(f"c{i}") for i in range(40)]
    msgs = [sized(user(""), 100), sized(assistant(None, *calls), 3_000)]
    msgs += [sized(tool(f"c{i}", ""), 2_000) for i in range(40)]
    start = safe_tail_start(msgs, 8_000)
    assert start == 1  # 80,000 tokens back, still one unit
    assert msgs[start]["role"] == "assistant"


def test_R_TAIL_1_system_messages_are_not_part_of_the_walk():
    msgs = [system("s" * 40_000), sized(user(""), 100), system("mid " * 10_000), sized(assistant(""), 100)]
    start = safe_tail_start(msgs, 500)
    assert start == 1 and msgs[start]["role"] == "user"


def test_R_TAIL_2_empty_conversation():
    assert safe_tail_start([], 8_000) == 0
    assert safe_tail_start([system("s")], 8_000) == 1
