"""The whole pipeline (R-PIPE-1..3, R-OBS-1, B-LOOP-1) and the SPEC section 12 worked example."""

from __future__ import annotations

import copy

import pytest

from server.context import (
    FALLBACK_SUMMARY,
    Compaction,
    RequestView,
    ViewSettings,
    build_request_view,
    estimate_message_tokens,
    estimate_messages_tokens,
    repair_tool_pairing,
)

from .helpers import assistant, call, sized, system, tool, user
from .protocol_check import is_protocol_valid

SPEC_SETTINGS = ViewSettings(context_window_tokens=64_000, threshold_ratio=0.8, keep_recent_tokens=8_000)


def _worked_example(older_conversation: int) -> tuple[list[dict], list[dict]]:
    """SPEC section 12: system 10k, old replaceable tool output 20k, older conversation, tail 7k.

    Returns (transcript, tail). Ten rounds of assistant call (1,000) + tool output (2,000, successful) +
    assistant text; the assistant texts absorb the older-conversation total (besides the 1,000 first goal).
    """
    text_tokens = (older_conversation - 1_000 - 10 * 1_000) // 10
    msgs = [sized(system("You are Threadline. "), 6_000), sized(system("Project rules: "), 4_000)]
    msgs.append(sized(user("Refactor the storage layer. "), 1_000))
    for i in range(10):
        msgs += [
            sized(assistant(f"Reading module {i}. ", call(f"r{i}", "read_file", path=f"src/m{i}.py")), 1_000),
            sized(tool(f"r{i}", f"module {i} source: "), 2_000),
            sized(assistant(f"Module {i} understood. "), text_tokens),
        ]
    tail = [
        sized(user("Now write the migration. "), 3_000),
        sized(assistant(None, call("w1", "edit_file", path="src/migrate.py")), 1_000),
        sized(tool("w1", "edited: "), 2_000),
        sized(assistant("Migration written. "), 1_000),
    ]
    return msgs + tail, tail


def test_SPEC_12_worked_example_numbers_are_as_the_spec_says():
    msgs, tail = _worked_example(35_000)
    assert estimate_messages_tokens(msgs) == 72_000
    assert estimate_messages_tokens(msgs[:2]) == 10_000
    assert estimate_messages_tokens(tail) == 7_000
    assert sum(estimate_message_tokens(m) for m in msgs if m["role"] == "tool" and m not in tail) == 20_000
    assert SPEC_SETTINGS.threshold_tokens == 51_200


def test_SPEC_12_worked_example_35k_older_conversation_is_summarized():
    msgs, tail = _worked_example(35_000)
    view = build_request_view(msgs, SPEC_SETTINGS)
    # Placeholders alone leave ~52,000 (> 51,200), so the summary path is taken.
    assert view.mode == "summarized"
    assert view.before_tokens == 72_000
    assert view.messages[:2] == msgs[:2]
    assert view.messages[2] == {"role": "system", "content": view.summary}
    assert view.messages[3:] == tail
    assert view.estimated_tokens < 18_000
    assert view.summary is not None
    assert "- Refactor the storage layer." in view.summary
    assert is_protocol_valid(view.messages) == []


def test_SPEC_12_worked_example_25k_older_conversation_is_microcompacted():
    msgs, _ = _worked_example(25_000)
    assert estimate_messages_tokens(msgs) == 62_000
    view = build_request_view(msgs, SPEC_SETTINGS)
    assert view.mode == "microcompacted"
    assert view.compacted_tool_outputs == 10
    assert len(view.messages) == len(msgs)
    for got, original in zip(view.messages, msgs):
        if got["content"] != original["content"]:
            assert (
                got["role"] == "tool"
                and got["content"] == f"[old tool output compacted: {len(original['content'])} characters]"
            )
            assert got["tool_call_id"] == original["tool_call_id"]
        else:
            assert got == original
    assert 42_000 <= view.estimated_tokens <= SPEC_SETTINGS.threshold_tokens
    assert view.summary is None
    assert view.event_summary == "[microcompaction] 10 old tool outputs replaced with placeholders"


def test_B_CACHE_2_the_worked_example_summary_comes_out_under_the_target_with_the_tail_kept():
    msgs, _tail = _worked_example(35_000)
    view = build_request_view(msgs, SPEC_SETTINGS)
    assert SPEC_SETTINGS.target_tokens == 32_000
    assert view.estimated_tokens <= SPEC_SETTINGS.target_tokens
    assert view.compaction is not None
    assert view.compaction.mode == "summarized" and not view.sticky  # made now: announced and stored once


def test_B_CACHE_2_the_tail_shrinks_to_the_target_but_never_below_the_last_message_and_its_call():
    settings = ViewSettings(context_window_tokens=20_000, keep_recent_tokens=8_000)  # threshold 16k, target 10k
    msgs = [sized(system("rules "), 4_000), sized(user("goal "), 500)]
    for i in range(12):
        msgs += [
            sized(assistant(f"step {i} ", call(f"c{i}", "run_command", command="make")), 300),
            tool(f"c{i}", "Tool failed: exit code 2 " * 40),
            sized(assistant(f"noted {i} "), 600),
        ]
    view = build_request_view(msgs, settings)
    assert view.mode == "summarized"
    assert view.estimated_tokens <= settings.target_tokens < settings.threshold_tokens
    assert view.messages[-1] == msgs[-1]
    # A last exchange bigger than the target is still kept whole (R-TAIL-2/3): the view only has to fit.
    big = [
        *msgs,
        sized(assistant(None, call("z", "read_file", path="big.txt")), 200),
        sized(tool("z", "Tool failed: huge error "), 9000),
    ]
    view = build_request_view(big, settings)
    assert view.mode == "summarized" and view.messages[-2:] == big[-2:]
    assert settings.target_tokens < view.estimated_tokens <= settings.threshold_tokens
    assert is_protocol_valid(view.messages) == []


def test_B_TAIL_5_B_CACHE_2_a_summary_view_keeps_a_tail_of_at_most_a_quarter_of_the_target():
    """A small window's compaction keeps a short verbatim tail, so the view it makes (re-read by every later call)
    starts small; from 64k tokens on the configured 8,000 is kept."""
    assert ViewSettings(32_000).tail_budget_tokens == 4_000 == ViewSettings(32_000).target_tokens // 4
    assert ViewSettings(64_000).tail_budget_tokens == 8_000 == ViewSettings(200_000).tail_budget_tokens
    assert ViewSettings(200_000, keep_recent_tokens=3_000).tail_budget_tokens == 3_000
    settings = ViewSettings(context_window_tokens=32_000)  # threshold 25.6k, target 16k, tail 4k
    msgs = [sized(system("rules "), 1_000), sized(user("goal "), 500)]
    for i in range(60):
        msgs += [
            sized(assistant(f"step {i} ", call(f"c{i}", "read_file", path=f"f{i}.py")), 200),
            sized(tool(f"c{i}", f"Tool failed: exit code {i} "), 400),  # never a placeholder
        ]
    view = build_request_view(msgs, settings)
    assert view.mode == "summarized" and view.compaction is not None
    tail = view.messages[2:]
    assert tail[-1] == msgs[-1] and tail[0]["role"] == "assistant"
    assert 3_000 < estimate_messages_tokens(tail) <= 4_000 + 200  # + the call of a result it starts at (R-TAIL-3)
    assert view.estimated_tokens < settings.target_tokens // 2


def test_B_CACHE_4_a_last_exchange_no_summary_view_fits_is_cut_in_a_summary_view_that_stays_sticky():
    settings = ViewSettings(context_window_tokens=20_000, keep_recent_tokens=8_000)  # threshold 16k, target 10k
    msgs = [sized(system("rules "), 4_000), sized(user("goal: ship the parser "), 500)]
    for i in range(12):
        msgs += [
            sized(assistant(f"step {i} ", call(f"c{i}", "edit_file", path=f"src/p{i}.py")), 300),
            sized(tool(f"c{i}", "edited "), 300),
        ]
    huge = [
        *msgs,
        sized(assistant(None, call("z", "read_file", path="big.txt")), 200),
        sized(tool("z", "contents of big.txt: "), 14_000),  # with system and summary, over the 16k threshold
    ]
    before = copy.deepcopy(huge)
    view = build_request_view(huge, settings)
    # Not the fallback window (which drops every goal and path): the summary, and the result cut to fit the target.
    assert view.mode == "summarized" and view.clipped_messages == 1
    assert view.estimated_tokens == estimate_messages_tokens(view.messages) <= settings.target_tokens
    assert view.summary is not None and view.compaction is not None
    assert "goal: ship the parser" in view.summary and "src/p11.py" in view.summary
    assert view.messages[-2] == huge[-2]
    cut = view.messages[-1]
    assert cut["tool_call_id"] == "z" and cut["content"].startswith("contents of big.txt: ")
    assert "omitted to fit the context window" in cut["content"] and len(cut["content"]) < len(huge[-1]["content"])
    assert huge == before, "the transcript keeps the result whole (R-SRC-2)"
    stored = Compaction.from_json(view.compaction.to_json())  # as the store keeps it (B-CACHE-3)
    assert stored is not None and stored == view.compaction
    assert stored.clip_tokens == view.compaction.clip_tokens is not None
    # B-CACHE-1: the next requests are this one, cut the same way, plus what was appended.
    grown = [*huge, sized(assistant("read it "), 300), sized(user("next "), 200)]
    again = build_request_view(grown, settings, compaction=stored)
    assert again.sticky and again.clipped_messages == 1
    assert again.messages == [*view.messages, *grown[-2:]]
    assert again.estimated_tokens == view.estimated_tokens + 500


def test_B_CACHE_3_a_stored_compaction_with_a_bad_clip_budget_is_not_used():
    good = {"mode": "summarized", "tailSeq": 4, "throughSeq": 9, "summary": "[compressed conversation context]"}
    made = Compaction.from_json({**good, "clipTokens": 900})
    assert made is not None and made.clip_tokens == 900
    for bad in (0, -5, "900", 1.5, True):
        assert Compaction.from_json({**good, "clipTokens": bad}) is None
    assert Compaction.from_json({**good, "mode": "microcompacted", "clipTokens": 900}) is None


def test_B_CACHE_2_placeholders_advance_in_a_batch_at_the_next_compaction_not_per_call():
    msgs, _ = _worked_example(25_000)
    first = build_request_view(msgs, SPEC_SETTINGS)
    assert first.mode == "microcompacted" and first.compacted_tool_outputs == 10
    grown = msgs
    for i in range(3):  # more successful outputs, each then older than the tail: still not replaced
        grown = [
            *grown,
            sized(assistant(None, call(f"n{i}", "read_file", path="x")), 300),
            sized(tool(f"n{i}", "more source: "), 1500),
        ]
        view = build_request_view(grown, SPEC_SETTINGS, compaction=first.compaction)
        assert view.sticky and view.compacted_tool_outputs == 10
        assert view.messages[: len(first.messages)] == first.messages


def test_B_CACHE_4_a_fallback_is_never_sticky():
    settings = ViewSettings(context_window_tokens=4_000)
    msgs = [sized(system("rules "), 3_500), sized(user("goal "), 400), sized(assistant("ok "), 400)]
    view = build_request_view(msgs, settings)
    assert view.mode == "fallback" and view.compaction is None and view.new_compaction is None


def test_R_PIPE_1_under_threshold_the_array_is_returned_unchanged():
    msgs = [system("s"), user("hi"), assistant(None, call("a")), tool("a", "out"), assistant("done")]
    before = copy.deepcopy(msgs)
    view = build_request_view(msgs, ViewSettings(context_window_tokens=100_000))
    assert view.mode == "full" and view.messages == msgs and msgs == before
    assert view.summary is None and view.event_summary is None and view.compacted_tool_outputs == 0
    assert view.estimated_tokens == view.before_tokens == estimate_messages_tokens(msgs)
    assert view.compaction is None and not view.sticky


def test_R_PIPE_1_full_view_is_still_repaired_and_stripped():
    msgs = [
        user(
            "hi",
        ),
        {"role": "assistant", "content": "x", "reasoning": "secret", "seq": 4},
        tool("ghost", "x"),
    ]
    view = build_request_view(msgs, ViewSettings(context_window_tokens=100_000))
    assert view.messages == [user("hi"), {"role": "assistant", "content": "x"}]


def test_R_PIPE_2_each_call_rechecks_a_growing_transcript():
    settings = ViewSettings(context_window_tokens=10_000, keep_recent_tokens=1_000)
    msgs = [system("s"), sized(user("go "), 500)]
    modes = []
    for i in range(12):
        msgs = [*msgs, assistant(None, call(f"c{i}")), sized(tool(f"c{i}", ""), 1000)]
        modes.append(build_request_view(msgs, settings).mode)
    assert modes[0] == "full" and modes[-1] != "full"


def test_R_PIPE_3_threshold_is_floor_of_window_times_ratio():
    assert ViewSettings(64_000).threshold_tokens == 51_200
    assert ViewSettings(10_001).threshold_tokens == 8_000
    assert ViewSettings(1_000, threshold_ratio=0.5).threshold_tokens == 500
    msgs = [sized(user(""), 800)]
    assert build_request_view(msgs, ViewSettings(1_000)).mode == "full"  # exactly at the threshold
    assert build_request_view(msgs, ViewSettings(999)).mode != "full"


def test_R_PIPE_3_token_counts_from_the_store_are_used():
    msgs = [user("x" * 40_000), assistant("y" * 40_000)]
    view = build_request_view(msgs, ViewSettings(1_000), token_counts=[10, 10])
    assert view.mode == "full" and view.before_tokens == 20


def test_R_SRC_2_building_a_view_never_mutates_the_transcript():
    msgs, _ = _worked_example(35_000)
    msgs[3] = {**msgs[3], "reasoning": "r", "seq": 9}
    before = copy.deepcopy(msgs)
    view = build_request_view(msgs, SPEC_SETTINGS)
    for m in view.messages:
        m["content"] = "edited by a caller"
    assert msgs == before


def test_R_OBS_1_event_summary_prefixes_and_token_numbers():
    micro = build_request_view(_worked_example(25_000)[0], SPEC_SETTINGS)
    summarized = build_request_view(_worked_example(35_000)[0], SPEC_SETTINGS)
    assert micro.event_summary is not None and summarized.event_summary is not None
    assert micro.event_summary.startswith("[microcompaction] ")
    assert summarized.event_summary.startswith(
        "[compressed conversation context]\nOlder transcript messages were summarized."
    )
    for view in (micro, summarized):
        assert view.estimated_tokens == estimate_messages_tokens(view.messages)
        assert view.before_tokens > view.estimated_tokens
        assert view.transcript_messages == len(_worked_example(25_000)[0])
    one = RequestView([], "microcompacted", 0, 0, 0, 0, 0, None, 1, 0)
    assert one.event_summary == "[microcompaction] 1 old tool output replaced with a placeholder"


def test_B_LOOP_1_summary_that_cannot_get_under_the_threshold_falls_back():
    msgs = [sized(system("huge system prompt "), 9_000), sized(user("go "), 3_000), sized(assistant("ok "), 3_000)]
    view = build_request_view(msgs, ViewSettings(context_window_tokens=10_000, keep_recent_tokens=1_000))
    assert view.mode == "fallback"
    assert view.event_summary == FALLBACK_SUMMARY
    assert is_protocol_valid(view.messages) == []


def test_B_LOOP_1_summary_that_frees_under_ten_percent_falls_back():
    msgs = [sized(system("rules "), 3_000), sized(user("go "), 600), sized(assistant("a long answer "), 4_700)]
    settings = ViewSettings(context_window_tokens=10_000, keep_recent_tokens=4_000)
    assert estimate_messages_tokens(msgs) == 8_300 > settings.threshold_tokens
    view = build_request_view(msgs, settings)
    # system + summary + the 4,700-token tail would fit but free only ~6%: it would compact again next call.
    assert view.mode == "fallback"


def test_B_LOOP_1_a_good_summary_frees_at_least_ten_percent():
    view = build_request_view(_worked_example(35_000)[0], SPEC_SETTINGS)
    assert view.before_tokens - view.estimated_tokens >= 0.1 * view.before_tokens


@pytest.mark.parametrize("window", [4_000, 8_000, 64_000])
def test_R_REP_2_every_mode_is_protocol_valid(window):
    msgs, _ = _worked_example(35_000)
    msgs = repair_tool_pairing(msgs[:-2])  # ends on a call whose result is missing: repaired
    view = build_request_view(msgs, ViewSettings(window))
    assert is_protocol_valid(view.messages) == []
