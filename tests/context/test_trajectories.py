"""Real recorded sessions (shared/data/trajectories) through the pipeline at several windows.

Every file is used; a missing folder fails loudly. Variants (crash mid-call, orphan results, reasoning and
seq keys) are derived in code: the files themselves are read-only.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path

import pytest

from server.context import ViewSettings, build_request_view, estimate_message_tokens

from .protocol_check import is_protocol_valid
from .test_properties import check_view

TRAJECTORIES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "trajectories"
WINDOWS = [8_000, 16_000, 32_000, 128_000]


def _files() -> list[Path]:
    if not TRAJECTORIES.is_dir():
        raise FileNotFoundError(f"trajectory folder missing: {TRAJECTORIES}")
    files = sorted(TRAJECTORIES.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no trajectories in {TRAJECTORIES}")
    return files


@lru_cache(maxsize=None)
def _load(name: str) -> tuple:
    data = json.loads((TRAJECTORIES / name).read_text(encoding="utf-8"))
    msgs = data if isinstance(data, list) else data.get("messages")  # a list, or an object holding one
    assert isinstance(msgs, list) and msgs, f"{name}: no message list"
    return tuple(msgs)


def _messages(name: str) -> list[dict]:
    return copy.deepcopy(list(_load(name)))


NAMES = [p.name for p in _files()]


@pytest.mark.parametrize("name", NAMES)
def test_trajectory_files_are_valid_openai_transcripts(name):
    assert is_protocol_valid(_messages(name)) == []


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("name", NAMES)
def test_trajectory_views_hold_every_property(name, window):
    msgs = _messages(name)
    before = copy.deepcopy(msgs)
    cfg = ViewSettings(context_window_tokens=window)
    counts = [estimate_message_tokens(m) for m in msgs]
    view = build_request_view(msgs, cfg, token_counts=counts)
    check_view(msgs, cfg, view)
    assert msgs == before
    if window < 128_000:
        assert view.mode != "full"


def _crashed_variant(msgs: list[dict]) -> list[dict]:
    """The process died mid-call, results came back late or twice, and stored keys were added."""
    out = [{**m, "seq": 10 * i, "reasoning": "thinking"} if m["role"] == "assistant" else {**m, "seq": 10 * i} for i, m in enumerate(msgs)]
    tools = [i for i, m in enumerate(out) if m["role"] == "tool"]
    late = out.pop(tools[len(tools) // 2])  # a result removed from its run ...
    out.insert(len(out) // 4 * 3, {**late})  # ... shows up later, after other messages: an orphan
    out.append(copy.deepcopy(out[tools[0]]))  # a duplicate far from its call
    last_call = max(i for i, m in enumerate(out) if m.get("tool_calls"))
    return out[: last_call + 1]  # crashed before the last call's results


@pytest.mark.parametrize("window", [8_000, 32_000])
@pytest.mark.parametrize("name", NAMES)
def test_trajectory_crashed_variants_are_repaired(name, window):
    msgs = _crashed_variant(_messages(name))
    assert is_protocol_valid(msgs) != []
    cfg = ViewSettings(context_window_tokens=window)
    check_view(msgs, cfg, build_request_view(msgs, cfg))


@pytest.mark.parametrize("name", NAMES)
def test_trajectory_R_SUM_4_anchors_within_a_turn(name):
    msgs = _messages(name)
    cfg = ViewSettings(context_window_tokens=32_000)
    cut = len(msgs) * 2 // 3
    while msgs[cut - 1].get("tool_calls") or msgs[cut].get("role") == "tool":
        cut += 1  # a view is built between model calls: never with a call waiting for its results
    first = build_request_view(msgs[:cut], cfg)
    second = build_request_view(msgs, cfg, anchors=first.anchors)
    check_view(msgs, cfg, second)
    if first.mode == "summarized" and second.mode == "summarized":
        assert second.anchors[0] == first.anchors[0]
        assert {"role": "system", "content": first.anchors[0].text} in second.messages


def test_R_SUM_4_a_long_turn_keeps_its_summaries_fixed_then_merges_them_instead_of_falling_back():
    """mini-swe-agent is one user message and 189 model calls: one long turn. Carrying the anchors as the loop
    does, each call may add a summary of the newly older history (R-SUM-4); the earlier ones stay byte-identical
    until there are MAX_TURN_SUMMARIES of them or they no longer fit, and then they are merged into one summary
    recomputed from the transcript. The view never drops to the fallback window for that reason."""
    from server.context.view import MAX_TURN_SUMMARIES

    messages = json.loads((TRAJECTORIES / "mini-swe-agent-pr816__deepseek_chat_dev_rerun__pylint-dev__astroid-1333.json")
                          .read_text(encoding="utf-8"))
    settings = ViewSettings(16_000)
    anchors: tuple = ()
    kept_fixed = merged = 0
    for end, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        view = build_request_view(messages[:end], settings, anchors=anchors)
        assert view.mode != "fallback", f"call before message {end} fell back"
        texts = [a.text for a in view.anchors]
        assert len(texts) <= MAX_TURN_SUMMARIES
        if anchors and texts[: len(anchors)] == [a.text for a in anchors]:
            kept_fixed += 1
        elif anchors:
            merged += 1
            assert len(texts) == 1, "a merge leaves one summary"
        anchors = view.anchors
    assert kept_fixed > 100 and merged >= 5, (kept_fixed, merged)
