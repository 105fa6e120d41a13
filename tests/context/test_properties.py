"""Property tests: any transcript, any settings -> a protocol-valid, bounded, deterministic view.

Covers R-REP-1, R-REP-2, R-SRC-2, R-SRC-3, R-PIPE-1, R-SUM-5, R-TAIL-2, R-FALL-1 and B-LOOP-1 on random
interleavings: parallel calls, missing, duplicated, reordered and orphan results, failures, CJK text, images,
huge outputs and non-sent keys.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.context import (
    FALLBACK_SUMMARY,
    Compaction,
    ViewSettings,
    build_request_view,
    estimate_message_tokens,
    estimate_messages_tokens,
    repair_tool_pairing,
)

from .protocol_check import is_protocol_valid

PROFILE = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)  # bounded by count (issue 50)

_WORDS = st.sampled_from(["build", "ok", "the", "file", "上下文", "压缩", "Error:", "Traceback", "data", "x1f9a"])
_TEXT = st.builds(lambda words, n: " ".join(words) * n, st.lists(_WORDS, min_size=0, max_size=8), st.integers(1, 60))
_HUGE = st.builds(lambda n: "log line 0123456789abcdef\n" * n, st.integers(100, 600))
_IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def _content(draw) -> Any:
    kind = draw(st.sampled_from(["text", "text", "huge", "parts", "none"]))
    if kind == "huge":
        return draw(_HUGE)
    if kind == "parts":
        return [{"type": "text", "text": draw(_TEXT)}] + [_IMAGE] * draw(st.integers(0, 2))
    if kind == "none":
        return None
    return draw(_TEXT)


def _extras(draw) -> dict[str, Any]:
    extra = {}
    if draw(st.booleans()):
        extra["reasoning"] = "thinking " * draw(st.integers(1, 50))
    if draw(st.integers(0, 9)) == 0:
        extra["status"] = "interrupted"
    return extra


def _call_group(draw, counter: list[int]) -> list[dict[str, Any]]:
    """An assistant message with 1-4 calls and a messy run of results."""
    ids = []
    for _ in range(draw(st.integers(1, 4))):
        counter[0] += 1
        ids.append(f"call_{counter[0]}")
    name = draw(st.sampled_from(["read_file", "bash", "edit_file", "write_file", "update_plan"]))
    # update_plan: the summary shows the transcript's latest plan (B-SUM-9), wherever in the history it was set
    args = (
        '{{"plan": [{{"step": "{}", "status": "in_progress"}}]}}'
        if name == "update_plan"
        else '{{"path": "src/{}.py"}}'
    )
    calls = [{"id": i, "type": "function", "function": {"name": name, "arguments": args.format(i)}} for i in ids]
    group = [{"role": "assistant", "content": draw(st.one_of(st.none(), _TEXT)), "tool_calls": calls, **_extras(draw)}]
    answered = draw(st.lists(st.sampled_from(ids), max_size=6)) if draw(st.booleans()) else list(ids)
    for call_id in answered:
        failed = draw(st.integers(0, 4)) == 0
        text = "Tool failed: Permission denied\n" if failed else ""
        group.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": text + (draw(_HUGE) if draw(st.booleans()) else draw(_TEXT)),
            }
        )
    return group


@st.composite
def transcripts(draw, max_items: int = 25) -> list[dict[str, Any]]:
    """A messy transcript of 1..``max_items`` items (a message or a call group of up to 4 calls and 6 results), each
    text at most ~15 KB: bounded in size, so an example costs the same on a loaded machine as on an idle one."""
    msgs = [{"role": "system", "content": draw(_TEXT)} for _ in range(draw(st.integers(0, 3)))]
    counter = [0]
    for _ in range(draw(st.integers(1, max_items))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "calls", "orphan", "system"]))
        if kind == "calls":
            msgs += _call_group(draw, counter)
        elif kind == "orphan":
            msgs.append(
                {
                    "role": "tool",
                    "tool_call_id": draw(st.sampled_from(["ghost", "call_1", "call_2"])),
                    "content": draw(_TEXT),
                }
            )
        elif kind == "system" and draw(st.integers(0, 3)) == 0:
            msgs.append({"role": "system", "content": draw(_TEXT)})
        else:
            role = "assistant" if kind == "assistant" else "user"
            msgs.append({"role": role, "content": _content(draw), **_extras(draw)})
    if draw(st.booleans()):  # stored messages carry increasing seq numbers, all or none
        offset = draw(st.integers(0, 1_000))
        msgs = [{**m, "seq": offset + 3 * i} for i, m in enumerate(msgs)]
    return msgs


view_settings = st.builds(
    ViewSettings,
    context_window_tokens=st.sampled_from([2_000, 4_000, 8_000, 16_000, 64_000]),
    threshold_ratio=st.sampled_from([0.5, 0.8, 0.9]),
    keep_recent_tokens=st.sampled_from([500, 2_000, 8_000]),
    compact_target_ratio=st.sampled_from([0.3, 0.5, 0.7]),
)


def _last_conversation(msgs):
    return next((m for m in reversed(msgs) if m["role"] != "system"), None)


def _is_cut_from(cut: dict[str, Any] | None, original: dict[str, Any] | None) -> bool:
    """``cut`` is ``original`` shortened by ``clip.clip_to_budget``: same role and ids, a head of its text kept
    and the marker saying where the rest is."""
    if (
        cut is None
        or original is None
        or {k: v for k, v in cut.items() if k not in ("content", "tool_calls")}
        != {k: v for k, v in original.items() if k not in ("content", "tool_calls")}
    ):
        return False
    text, full = json.dumps(cut, ensure_ascii=False), json.dumps(original, ensure_ascii=False)
    marker = "omitted to fit the context window"
    if isinstance(cut.get("content"), str) and isinstance(original.get("content"), str) and marker in cut["content"]:
        head = cut["content"].split("\n[... ", 1)[0]
        if not original["content"].startswith(head):
            return False
    return marker in text and marker not in full


def check_view(msgs: list[dict[str, Any]], view_settings_: ViewSettings, view) -> None:
    """The properties every view must have; shared with test_trajectories."""
    repaired = repair_tool_pairing(msgs)
    systems = [m for m in repaired if m["role"] == "system"]
    assert is_protocol_valid(view.messages) == []
    assert all("reasoning" not in m and "seq" not in m for m in view.messages)
    if view.mode != "fallback":
        assert view.estimated_tokens <= view_settings_.threshold_tokens
    if view.mode in ("full", "microcompacted"):
        assert [m for m in view.messages if m["role"] == "system"] == systems
        assert len(view.messages) == len(repaired)
    elif view.mode == "summarized":
        # R-SUM-5: all of them, those the compaction saw first, then the summary; later ones in place (B-CACHE-1)
        at = view.messages.index({"role": "system", "content": view.summary})
        assert view.messages[:at] == systems[:at]
        assert [m for i, m in enumerate(view.messages) if m["role"] == "system" and i != at] == systems
        assert view.summary.startswith("[compressed conversation context]")
    else:
        n = min(2, len(systems))
        assert view.messages[:n] == systems[:n]
        assert view.messages[n] == {"role": "system", "content": FALLBACK_SUMMARY}
    # The view ends with the repaired transcript's last conversation message, verbatim: when the input ends
    # with an orphan result, that is the message before it; with an unanswered call, its interrupted result.
    # Only a view that says it clipped may hold it shortened (a last exchange no summary view fits, B-CACHE-4).
    last, original = _last_conversation(view.messages), _last_conversation(repaired)
    if last != original:
        assert view.clipped_messages and _is_cut_from(last, original), (last, original)
    assert view.estimated_tokens == estimate_messages_tokens(view.messages)


@PROFILE
@given(transcripts(), view_settings)
def test_properties_every_view_is_valid_bounded_and_keeps_system_and_last_message(msgs, cfg):
    before = copy.deepcopy(msgs)
    view = build_request_view(msgs, cfg)
    assert msgs == before  # R-SRC-2
    check_view(msgs, cfg, view)
    assert build_request_view(msgs, cfg) == view  # deterministic (R-SUM-3)


@PROFILE
@given(transcripts(), view_settings)
def test_properties_precomputed_token_counts_give_the_same_view(msgs, cfg):
    counts = [estimate_message_tokens(m) for m in msgs]
    assert build_request_view(msgs, cfg, token_counts=counts) == build_request_view(msgs, cfg)


def _grown(first_part: list[dict[str, Any]], more: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``first_part`` then ``more``'s messages appended as a store would: seqs continuing, all or none."""
    extra = [{k: v for k, v in m.items() if k != "seq"} for m in more]
    if first_part and "seq" in first_part[0]:
        last = max(m["seq"] for m in first_part)
        extra = [{**m, "seq": last + 1 + i} for i, m in enumerate(extra)]
    return first_part + extra


@settings(PROFILE, max_examples=20)  # two transcripts per example: the costliest property here, kept bounded
@given(transcripts(), transcripts(), view_settings)
def test_B_CACHE_1_properties_a_repeated_compaction_extends_the_previous_request(first_part, more, cfg):
    first = build_request_view(first_part, cfg)
    grown = _grown(first_part, more)
    second = build_request_view(grown, cfg, compaction=first.compaction)
    check_view(grown, cfg, second)
    if second.sticky:
        assert second.compaction == first.compaction
        assert second.messages[: len(first.messages)] == first.messages  # byte for byte, then what was appended
    assert second.mode == "fallback" or second.estimated_tokens <= cfg.threshold_tokens  # B-CACHE-4
    if second.mode == "fallback":
        assert second.compaction is None  # never sticky


def test_B_CACHE_1_a_compaction_past_the_end_is_stale_and_a_new_view_is_made():
    msgs = [{"role": "user", "content": "x" * 9_000}, {"role": "assistant", "content": "y" * 9_000}]
    stale = Compaction("summarized", 5, 99, "[compressed conversation context]\nold")
    view = build_request_view(msgs, ViewSettings(4_000), compaction=stale)
    check_view(msgs, ViewSettings(4_000), view)  # a compaction this transcript does not hold is ignored
    assert view.summary != stale.summary and not view.sticky
