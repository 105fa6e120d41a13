"""Real recorded sessions (data/trajectories) through the pipeline at several windows.

Every file is used; a missing folder fails loudly. Variants (crash mid-call, orphan results, reasoning and
seq keys) are derived in code: the files themselves are read-only.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from server.context import ViewSettings, build_request_view, estimate_message_tokens
from tests.conftest import TRAJECTORIES

from .protocol_check import is_protocol_valid
from .test_properties import check_view

WINDOWS = [8_000, 16_000, 32_000, 128_000]


def _files() -> list[Path]:
    if not TRAJECTORIES.is_dir():
        raise FileNotFoundError(f"trajectory folder missing: {TRAJECTORIES}")
    files = sorted(TRAJECTORIES.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no trajectories in {TRAJECTORIES}")
    return files


@cache
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
    out = [
        {**m, "seq": 10 * i, "reasoning": "thinking"} if m["role"] == "assistant" else {**m, "seq": 10 * i}
        for i, m in enumerate(msgs)
    ]
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


def _calls(msgs: list[dict]):
    """Each model call of a recorded session: the transcript before each assistant message."""
    for end, msg in enumerate(msgs):
        if msg.get("role") == "assistant" and end:
            yield msgs[:end]


@pytest.mark.parametrize("window", [16_000, 32_000])
@pytest.mark.parametrize("name", NAMES)
def test_trajectory_B_CACHE_1_each_request_extends_the_previous_one_until_a_compaction(name, window):
    """The loop's sequence of requests over a real session, the compaction carried from call to call: a sticky
    request is the previous request plus what was appended, byte for byte (B-CACHE-1); every view stays under the
    threshold or is the fallback (B-CACHE-4); it equals the full-rebuild reference (one pipeline); and compactions
    are batches that leave room for several calls, not one per call (B-CACHE-2)."""
    from server.context.incremental import IncrementalView

    from .reference import reference_view

    msgs = [{**m, "seq": i + 1} for i, m in enumerate(_messages(name))]
    cfg = ViewSettings(context_window_tokens=window)
    state = IncrementalView()  # as the loop keeps it: fed what was stored since the last call
    compaction, calls, compactions = None, 0, 0
    previous: list[dict[str, Any]] | None = None
    every = max(1, len(msgs) // 60)  # the reference re-reads everything: checked at ~30 calls per session
    for n, transcript in enumerate(_calls(msgs)):
        state.feed(transcript[state.fed :])
        view = state.view(cfg, compaction)
        if n % every == 0:
            ref = reference_view(transcript, cfg, compaction=compaction)
            assert (view.messages, view.mode, view.compaction, view.sticky) == (
                ref.messages,
                ref.mode,
                ref.compaction,
                ref.sticky,
            )
        assert view.mode == "fallback" or view.estimated_tokens <= cfg.threshold_tokens
        if view.sticky:
            assert previous is not None  # a sticky view repeats an earlier one
            assert view.messages[: len(previous)] == previous
        elif view.new_compaction is not None:
            compactions += 1
        calls += 1
        compaction = view.compaction or compaction
        previous = view.messages
    assert compactions <= max(1, calls // 3), (compactions, calls)


def test_B_CACHE_2_a_long_turn_compacts_in_batches_and_never_falls_back():
    """mini-swe-agent is one user message and 189 model calls: one long turn. Carrying the compaction as the
    loop does, a new summary is made only when the repeated view would cross the threshold, each comes out at or
    under the target, and the view never drops to the fallback window."""
    messages = json.loads(
        (TRAJECTORIES / "mini-swe-agent-pr816__deepseek_chat_dev_rerun__pylint-dev__astroid-1333.json").read_text(
            encoding="utf-8"
        )
    )
    from server.context.incremental import IncrementalView

    settings = ViewSettings(16_000)
    state = IncrementalView()
    compaction, sticky, made = None, 0, []
    for end, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        state.feed(messages[state.fed : end])
        view = state.view(settings, compaction)
        assert view.mode != "fallback", f"call before message {end} fell back"
        if view.sticky:
            sticky += 1
        elif view.new_compaction is not None:
            made.append(view)
        compaction = view.compaction or compaction
    summaries = [v for v in made if v.mode == "summarized"]
    assert summaries and all(v.estimated_tokens <= settings.target_tokens for v in summaries)
    assert sticky >= 4 * len(made), (sticky, len(made))
