"""B-BUDGET-1 on small hand-made transcripts: old tool outputs are cleared when keeping them costs more than the cache
break, in batches, sticky, never the task, a call, a failure or a running process; and the hysteresis of B-CACHE-2
(a compaction once made is not undone by a moving estimate)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from protocol.wire_text import PLACEHOLDER_PREFIX
from server.context import ViewSettings, build_request_view
from server.context.budget import ANTHROPIC_PRICES, Budget
from server.context.budget_view import budgeted
from server.context.processes import started_line
from tests.context.helpers import assistant, call, system, text_of_tokens, tool, user

TASK = "read every file in the folder, one at a time"


def _seq(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(m, seq=i + 1) for i, m in enumerate(msgs)]


def _run(
    steps: list[list[dict[str, Any]]],
    window: int = 128_000,
    budget: Budget | None = None,
    start: list[dict[str, Any]] | None = None,
):
    """Requests as the loop makes them: after each step's messages are appended, one view, its new clearings kept."""
    settings = ViewSettings(window, budget=budget or Budget())
    msgs = list(start or [system("sys"), user(TASK)])
    cleared: dict[str, str] = {}
    views = []
    for step in steps:
        msgs += step
        view = budgeted(build_request_view(_seq(msgs), settings), settings, cleared)
        cleared.update(view.newly_cleared)
        views.append(view)
    return views


def _reads(n: int, tokens: int = 1_100) -> list[list[dict[str, Any]]]:
    return [[assistant(None, call(f"c{k}", path=f"f{k}.txt")), tool(f"c{k}", text_of_tokens(tokens))] for k in range(n)]


def _verbatim(view) -> list[str]:
    return [m["tool_call_id"] for m in view.messages if m["role"] == "tool" and not m["content"].startswith("[old")]


def test_B_BUDGET_1_an_old_output_is_cleared_once_rereading_it_costs_more_than_the_break():
    views = _run(_reads(12, tokens=4_400))
    # one output is read, then kept verbatim in the next request only: the next one clears it (rent 440 > break)
    assert _verbatim(views[0]) == ["c0"]
    for k, view in enumerate(views[1:], 1):
        assert _verbatim(view) == [f"c{k}"], k
    assert all(view.mode == "full" for view in views)  # far under the window: no compaction of its own


def test_B_BUDGET_1_between_batches_each_request_is_the_previous_plus_what_was_appended():
    views = _run(_reads(30, tokens=300))
    batches = 0
    for before, after in itertools.pairwise(views):
        if after.newly_cleared:
            batches += 1
        else:
            assert after.messages[: len(before.messages)] == before.messages
    assert 0 < batches < 10  # small outputs are cleared in batches of at least clear_at_least, not one per call
    for view in views:
        if view.newly_cleared:
            freed = sum(c.tokens for c in view.cleared if c.key in view.newly_cleared)
            assert freed >= Budget().clear_at_least


def test_B_BUDGET_1_the_task_the_calls_failures_and_running_processes_are_never_cleared():
    steps = _reads(6, tokens=2_000)
    steps.insert(1, [assistant(None, call("bad", path="nope.txt")), tool("bad", "Tool failed: " + "x" * 9_000)])
    steps.insert(
        2,
        [
            assistant(None, call("srv", name="run_command", command="serve", background=True)),
            tool("srv", started_line("p1", 42, "serve") + "\n" + "log line\n" * 1_000),
        ],
    )
    last = _run(steps)[-1]
    assert last.messages[1] == user(TASK)
    contents = {m.get("tool_call_id"): m.get("content") for m in last.messages if m["role"] == "tool"}
    assert contents["bad"].startswith("Tool failed")
    assert contents["srv"].startswith("Started background process p1")
    calls = [c["id"] for m in last.messages for c in m.get("tool_calls") or ()]
    assert calls == ["c0", "bad", "srv", "c1", "c2", "c3", "c4", "c5"]  # every call, with its arguments
    assert all(contents[f"c{k}"].startswith(PLACEHOLDER_PREFIX) for k in (1, 2, 3))


def test_B_BUDGET_1_a_cleared_output_says_how_to_get_it_back():
    steps = _reads(3, tokens=3_000)
    steps.insert(
        1,
        [
            assistant(None, call("big", name="run_command", command="make")),
            tool("big", "[artifact artifact-7f3a] The full output (90000 bytes) is stored. " + "y" * 12_000),
        ],
    )
    last = _run(steps)[-1]
    contents = {m.get("tool_call_id"): m.get("content") for m in last.messages if m["role"] == "tool"}
    assert contents["c0"].endswith('to see it again: read_file {"path": "f0.txt"}')
    assert contents["big"].endswith('to see it again: read_artifact {"id": "artifact-7f3a"}')
    reasons = {c.tool_call_id: c.reason for c in last.cleared}
    assert "cache write" in reasons["c0"]


def test_B_BUDGET_1_an_output_quoted_or_named_later_is_kept_longer():
    quoted_text = "def parse_header(line):  # the one place the header is split into its fields\n" + text_of_tokens(
        3_000
    )
    quote = "As it says, def parse_header(line):  # the one place the header is split into its fields."
    steps = [
        [assistant(None, call("q", path="src/header.py")), tool("q", quoted_text)],
        [assistant(quote, call("n", path="src/named.py")), tool("n", text_of_tokens(3_000))],
        [assistant("Next to src/named.py:", call("p", path="src/plain.py")), tool("p", text_of_tokens(3_000))],
        *_reads(4, tokens=3_000),
    ]
    views = _run(steps)
    lifetime = {k: sum(k in _verbatim(v) for v in views) for k in ("q", "n", "p", "c0", "c1")}
    assert lifetime["p"] == lifetime["c0"] == lifetime["c1"] == 1  # never mentioned: seen once, then cleared
    assert lifetime["q"] >= 2 and lifetime["n"] >= 2  # quoted, named: kept longer


def test_B_BUDGET_1_a_budget_in_tokens_clears_only_when_the_view_is_over_it():
    views = _run(_reads(20, tokens=1_000), budget=Budget(tokens=12_000))
    first = next(i for i, v in enumerate(views) if v.newly_cleared)
    assert all(v.estimated_tokens <= 12_000 for v in views[:first])
    assert views[first - 1].estimated_tokens + 1_100 > 12_000  # the request that crossed it cleared
    assert views[-1].budget is not None and views[-1].budget.source == "config"


def test_B_BUDGET_1_the_budget_does_not_grow_with_the_window():
    small, large = _run(_reads(25, tokens=2_000), window=128_000), _run(_reads(25, tokens=2_000), window=1_000_000)
    assert [v.messages for v in small] == [v.messages for v in large]
    assert max(v.estimated_tokens for v in large) < 10_000
    report = large[-1].budget
    assert report is not None and report.source == "auto" and "openai" in report.reason


def test_B_BUDGET_1_auto_follows_the_cache_prices():
    """A dearer cache write (Anthropic 1.25x) makes a break dearer: clearing waits as long or longer."""
    steps = _reads(30, tokens=400)
    cheap = sum(bool(v.newly_cleared) for v in _run(steps))
    dear = sum(bool(v.newly_cleared) for v in _run(steps, budget=Budget(prices=ANTHROPIC_PRICES)))
    assert 0 < dear <= cheap


def test_B_BUDGET_1_cleared_stays_cleared_across_a_compaction_at_the_window():
    """The window is still the hard limit: at a small one the pipeline compacts too, and an output the budget
    cleared keeps its placeholder (the same bytes) in the compaction's view."""
    views = _run(_reads(20, tokens=2_500), window=16_000, budget=Budget(keep_recent_outputs=3))
    assert any(v.mode != "full" for v in views)
    for before, after in itertools.pairwise(views):
        was = {m["tool_call_id"]: m["content"] for m in before.messages if m["role"] == "tool"}
        for m in after.messages:
            if m["role"] == "tool" and "cleared to save context" in was.get(m["tool_call_id"], ""):
                assert m["content"] == was[m["tool_call_id"]]


def test_B_CACHE_2_a_compaction_once_made_is_not_undone_when_the_threshold_rises():
    """Chat kind, large windows: right after a compaction a small request lowered the learned calibration, the
    threshold rose ~3.5 % and the whole history fitted under it again; it was sent whole (+24 % of the run)."""
    msgs = [system("sys"), user(TASK)]
    for step in _reads(30, tokens=1_000):
        msgs += step
    window = int(build_request_view(_seq(msgs), ViewSettings(10**6)).before_tokens / 0.8 / 1.02)
    made = build_request_view(_seq(msgs), ViewSettings(window))
    assert made.new_compaction is not None
    msgs += [assistant("done")]
    higher = ViewSettings(int(window * 1.035))  # the same window, a lower factor: a threshold 3.5 % higher
    assert build_request_view(_seq(msgs), higher).mode == "full"  # without the compaction, all would fit
    again = build_request_view(_seq(msgs), higher, compaction=made.new_compaction)
    assert again.sticky and again.mode == made.mode
    assert again.messages[: len(made.messages)] == made.messages
    assert json.dumps(again.messages).count(PLACEHOLDER_PREFIX) == json.dumps(made.messages).count(PLACEHOLDER_PREFIX)


def test_B_BUDGET_1_a_large_window_summarizes_where_the_planning_window_would():
    """What clearing leaves (the conversation's own messages) is summarized as at a 128k window: the threshold and
    the compaction target do not grow past it, while the window stays the hard limit."""
    at_1m = ViewSettings(1_000_000, budget=Budget())
    at_128k = ViewSettings(128_000, budget=Budget())
    assert at_1m.threshold_tokens == at_128k.threshold_tokens == 102_400
    assert at_1m.target_tokens == at_128k.target_tokens
    assert ViewSettings(1_000_000).threshold_tokens == 800_000  # without a budget: the window's share, as before
    assert ViewSettings(32_000, budget=Budget()).threshold_tokens == 25_600  # a smaller window is its own limit
    msgs = [system("sys"), user(TASK)]
    for k in range(60):
        msgs += [user(f"question {k}: " + text_of_tokens(1_000)), assistant(text_of_tokens(1_000))]
    assert build_request_view(_seq(msgs), at_1m).mode == "summarized"
