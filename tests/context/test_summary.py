"""Structured summary (R-SUM-1..6, B-SUM-7)."""

from __future__ import annotations

import json
import re

import pytest

from server.context import (
    WRITE_TOOLS,
    SummaryState,
    ViewSettings,
    build_request_view,
    render_summary,
    summarize,
    summary_feed,
    write_paths,
)
from tests.conftest import TRAJECTORIES
from tests.harness import REPO

from .helpers import assistant, call, sized, system, text_of_tokens, tool, user
from .protocol_check import is_protocol_valid


def _history():
    return [
        user("Fix the SQLite FTS test in CI"),
        assistant("Looking.", call("1", "edit_file", path="packages/storage/src/sqlite.ts", old="a", new="b")),
        tool("1", "ok"),
        assistant(None, call("2", "bash", command="npm test")),
        tool("2", "Tool failed: no such module: fts5"),
        assistant("FTS index implemented, verifying on Node 22."),
    ]


def test_R_SUM_2_header_and_four_sections_in_order():
    text = summarize(_history())
    assert text.startswith("[compressed conversation context]\nOlder transcript messages were summarized.\n")
    assert text == "\n".join(
        [
            "[compressed conversation context]",
            "Older transcript messages were summarized.",
            "Goals:",
            "- Fix the SQLite FTS test in CI",
            "Files and tools touched:",
            "- packages/storage/src/sqlite.ts",
            "Failures to avoid:",
            "- bash(npm test): Tool failed: no such module: fts5",
            "Last useful assistant state:",
            "- FTS index implemented, verifying on Node 22.",
        ]
    )


def test_R_SUM_2_empty_sections_say_none_recorded():
    text = summarize([])
    assert text.count("- None recorded") == 4


def _goals(text: str) -> list[str]:
    match = re.search(r"Goals:\n(.*?)\nFiles", text, re.S)
    assert match, text
    return match.group(1).splitlines()


def test_B_SUM_7_every_goal_in_order_latest_four_within_240_older_within_80():
    msgs = [user(f"goal {i} " + "x" * 500) for i in range(7)]
    goals = _goals(summarize(msgs))
    assert [g.split()[2] for g in goals] == ["0", "1", "2", "3", "4", "5", "6"]
    assert all(len(g) - 2 <= 80 and g.endswith("…") for g in goals[:3])
    assert all(80 < len(g) - 2 <= 240 and g.endswith("…") for g in goals[3:])


def test_B_SUM_7_oldest_goals_are_dropped_only_past_the_budget_and_counted():
    msgs = [user(f"goal {i} " + "x" * 500) for i in range(300)]
    small = _goals(summarize(msgs))  # the default budget: 600 tokens
    assert small[0].startswith("- (and ") and small[-1].split()[2] == "299"
    dropped = int(small[0].split()[2])
    assert [g.split()[2] for g in small[1:]] == [str(i) for i in range(dropped, 300)]  # the newest, in order
    wide = _goals(summarize(msgs, budget_tokens=50_000))  # a big window's 5%: all of them
    assert len(wide) == 300 and wide[0].split()[2] == "0"
    # The budget scales with the window: max(600, 5%)
    assert ViewSettings(8_000).section_budget_tokens == 600 and ViewSettings(200_000).section_budget_tokens == 10_000


def test_B_SUM_7_a_view_over_a_long_session_keeps_its_first_goal():
    msgs = [system("rules"), *_long_session(60)]
    view = build_request_view(msgs, ViewSettings(context_window_tokens=32_000, keep_recent_tokens=2_000))
    assert view.mode == "summarized" and view.summary is not None
    assert "- goal 0 " in view.summary and "- goal 1 " in view.summary


def _failures(text: str) -> list[str]:
    match = re.search(r"Failures to avoid:\n(.*?)\nLast useful", text, re.S)
    assert match, text
    return match.group(1).splitlines()


def test_B_SUM_8_failures_latest_four_within_240_older_within_80_and_state_500():
    """R-SUM-2's latest 4 failures keep 240 characters; older ones stay listed, shortened to 80 (B-SUM-8), so a long
    session does not forget what already went wrong; each cut keeps both the call and the error (B-SUM-10)."""
    msgs = []
    for i in range(6):
        command = f"pytest tests/test_{i}.py " + "-k x " * 60
        msgs += [
            assistant(None, call(f"c{i}", "bash", command=command)),
            tool(f"c{i}", f"Permission denied {i} " + "y" * 400),
        ]
    msgs.append(assistant("z" * 2_000))
    state = SummaryState()
    for m in msgs:
        state = summary_feed(state, m)
    assert [telling.split()[2] for _, telling, _ in state.failures] == ["0", "1", "2", "3", "4", "5"]
    assert all(len(telling) <= 240 for _, telling, _ in state.failures)
    assert state.last_state is not None
    assert len(state.last_state) <= 500
    shown = _failures(render_summary(state))
    assert [f.split(": ")[1].split()[2] for f in shown] == ["0", "1", "2", "3", "4", "5"]
    assert all(f.startswith("- bash(pytest tests/test_") for f in shown)
    assert all(len(f) - 2 <= 80 and f.endswith("…") for f in shown[:2])
    assert all(80 < len(f) - 2 <= 240 and f.endswith("…") for f in shown[2:])


def test_R_SUM_2_oldest_failures_are_dropped_only_past_the_budget_and_counted():
    msgs = []
    for i in range(200):
        msgs += [
            assistant(None, call(f"c{i}", "bash", command="make")),
            tool(f"c{i}", f"Exit code 1\ncheck {i} failed " + "y" * 300),
        ]
    small = _failures(summarize(msgs))  # the default budget: 600 tokens
    assert small[0].startswith("- (and ") and small[-1].split()[3] == "199"
    dropped = int(small[0].split()[2])
    assert [f.split()[3] for f in small[1:]] == [str(i) for i in range(dropped, 200)]  # the newest, in order
    assert sum(len(line) for line in small) < 4 * 600
    wide = _failures(summarize(msgs, budget_tokens=50_000))
    assert len(wide) == 200 and wide[0].split()[3] == "0"


def test_R_SUM_2_failures_are_distinct():
    """A failure repeated word for word (the same check failing again) is listed once, at its latest place; so is
    an older failure that reads the same as a later one once shortened."""
    msgs = []
    for i, text in enumerate(
        [
            "Exit code 1 lint A",
            "Exit code 1 tests B",
            "Exit code 1 build C",
            "Exit code 1 tests B",
            "Exit code 1 deploy D",
            "Exit code 1 tests B",
            "Exit code 1 " + "x" * 100 + " E",
            "Exit code 1 " + "x" * 100 + " F",
            "Exit code 1 " + "x" * 100 + " G",
            "Exit code 1 " + "x" * 100 + " H",
            "Exit code 1 " + "x" * 100 + " I",
        ]
    ):
        msgs += [assistant(None, call(f"c{i}", "bash", command="make")), tool(f"c{i}", text)]
    state = SummaryState()
    for m in msgs:
        state = summary_feed(state, m)
    assert [telling.split()[-1] for _, telling, _ in state.failures] == ["A", "C", "D", "B", "E", "F", "G", "H", "I"]
    shown = _failures(summarize(msgs))
    assert summarize(msgs).count("tests B") == 1
    # E, shortened to 80 characters, reads as F-I's shortened lines would: but those are the latest four, whole.
    assert [f[-1] for f in shown] == ["A", "C", "D", "B", "…", "F", "G", "H", "I"]


def test_R_SUM_2_a_fold_stored_before_every_failure_was_kept_is_not_resumed_from():
    """A stored fold (compaction head, view snapshot) from before the Failures section listed older failures holds
    only the latest four: a state resumed from it would summarize differently from one that read everything, so
    it is not used (the history is read instead) and a restarted server still sends what a full read gives."""
    state = SummaryState()
    for i in range(6):
        state = summary_feed(state, assistant(None, call(f"c{i}", "bash", command="make")))
        state = summary_feed(state, tool(f"c{i}", f"Permission denied {i}"))
    stored = state.to_json()
    assert SummaryState.from_json(stored) == state
    old = {k: v for k, v in stored.items() if k != "v"}
    old["failures"] = old["failures"][-4:]
    assert SummaryState.from_json(old) is None


def test_R_SUM_2_paths_deduplicated_in_first_seen_order_and_total_bounded():
    msgs = []
    for i in range(100):
        msgs.append(assistant(None, call(f"c{i}", "write_file", path=f"src/f{i % 60}.py", content="x")))
        msgs.append(tool(f"c{i}", "written"))
    state = SummaryState()
    for m in msgs:
        state = summary_feed(state, m)
    assert state.files == tuple(f"src/f{i}.py" for i in range(60))
    text = render_summary(state)
    assert "(and 20 more paths)" in text
    assert len(summarize(msgs * 3 + [user("u" * 10_000)] * 5)) < 12_000


def test_R_SUM_3_deterministic_and_fold_equals_incremental():
    msgs = _history() * 5
    assert summarize(msgs) == summarize(list(msgs))
    snapshot = SummaryState()
    for m in msgs[:7]:
        snapshot = summary_feed(snapshot, m)
    resumed = snapshot
    for m in msgs[7:]:
        resumed = summary_feed(resumed, m)
    assert render_summary(resumed) == summarize(msgs)
    assert resumed.fed == len(msgs)


def test_R_SUM_3_state_is_immutable():
    state = SummaryState()
    summary_feed(state, user("goal"))
    assert state == SummaryState()
    with pytest.raises(AttributeError):
        # setattr: the write a frozen dataclass refuses is the point, so mypy must not reject it first
        setattr(state, "goals", ("x",))  # noqa: B010


def _long_session(rounds: int, start: int = 0):
    msgs = []
    for i in range(start, start + rounds):
        msgs += [
            sized(user(f"goal {i} "), 600),
            assistant(None, call(f"c{i}", "edit_file", path=f"src/m{i}.py")),
            tool(f"c{i}", "Error: " + text_of_tokens(600)),  # failures are never microcompacted
            sized(assistant(f"state {i} "), 600),
        ]
    return msgs


def test_R_SUM_1_view_is_system_plus_one_summary_plus_tail_verbatim():
    msgs = [system("rules"), *_long_session(20)]
    view = build_request_view(msgs, ViewSettings(context_window_tokens=16_000, keep_recent_tokens=2_000))
    assert view.mode == "summarized"
    assert view.messages[0] == system("rules")
    assert view.messages[1] == {"role": "system", "content": view.summary}
    assert view.summary is not None
    assert view.summary.startswith("[compressed conversation context]")
    tail = view.messages[2:]
    assert tail == msgs[len(msgs) - len(tail) :]
    assert is_protocol_valid(view.messages) == []


def test_B_CACHE_3_the_summary_is_kept_across_turns_and_recomputed_only_at_the_next_compaction():
    """R-SUM-4 as B-CACHE-3 amends it: the next user turn repeats the stored compaction (same summary, same place)
    while that fits; a new summary is made only when the repeated view would cross the threshold."""
    settings = ViewSettings(context_window_tokens=16_000, keep_recent_tokens=2_000)
    msgs = [system("rules"), *_long_session(20)]
    first = build_request_view(msgs, settings)
    assert first.compaction is not None
    assert first.mode == "summarized" and first.compaction.summary == first.summary and not first.sticky
    grown = [*msgs, user("goal 20: one more thing")]
    second = build_request_view(grown, settings, compaction=first.compaction)
    assert second.sticky and second.summary == first.summary
    assert second.messages == [*first.messages, user("goal 20: one more thing")]
    much = grown + _long_session(10, start=21)
    third = build_request_view(much, settings, compaction=first.compaction)
    assert not third.sticky and third.mode == "summarized" and third.summary != first.summary
    assert third.estimated_tokens <= settings.target_tokens  # B-CACHE-2
    assert third.summary is not None and first.summary is not None
    assert re.search(r"- goal 2\d ", third.summary) and not re.search(r"- goal 2\d ", first.summary)
    assert is_protocol_valid(third.messages) == []


def test_B_CACHE_3_a_compaction_is_keyed_by_seq_when_messages_carry_one():
    msgs = [{**m, "seq": 100 + i} for i, m in enumerate([system("rules"), *_long_session(20)])]
    view = build_request_view(msgs, ViewSettings(context_window_tokens=16_000, keep_recent_tokens=2_000))
    tail_first_seq = msgs[len(msgs) - (len(view.messages) - 2)]["seq"]
    assert view.compaction is not None
    assert view.compaction.tail_key == tail_first_seq
    assert view.compaction.through_key == msgs[-1]["seq"]
    assert all("seq" not in m for m in view.messages)


def test_R_SUM_5_all_system_messages_are_kept_by_the_summary_path():
    systems = [system("prompt"), system("AGENTS.md rules"), system("skill index"), system("memory snapshot")]
    msgs = [*systems, *_long_session(20)]
    view = build_request_view(msgs, ViewSettings(context_window_tokens=16_000, keep_recent_tokens=2_000))
    assert view.mode == "summarized"
    assert view.messages[:4] == systems
    assert view.messages[4]["content"].startswith("[compressed conversation context]")


# --- B-SUM-6: the path extraction covers every write tool ------------------------------------------------

_EXAMPLE_ARGS = {
    "path": "src/a.py",
    "file_path": "src/a.py",
    "notebook_path": "src/a.py",
    "input": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** End Patch",
    "patch": "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\n",
}


@pytest.mark.parametrize("tool_name", sorted(WRITE_TOOLS))
def test_B_SUM_6_every_registered_write_tool_and_key_yields_its_path(tool_name):
    for key in WRITE_TOOLS[tool_name]:
        args = json.dumps({key: _EXAMPLE_ARGS[key]})
        assert write_paths(tool_name, args) == ["src/a.py"], (tool_name, key)
        summary = summarize([assistant(None, call("1", tool_name, **{key: _EXAMPLE_ARGS[key]})), tool("1", "ok")])
        assert "- src/a.py" in summary


def test_B_SUM_6_named_tools_of_the_article_and_trajectories_are_registered():
    for name in [
        "edit_file",
        "write_file",
        "save_memory",
        "apply_patch",
        "create_file",
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "Write",
        "Edit",
        "MultiEdit",
        "write",
        "edit",
    ]:
        assert write_paths(name, json.dumps({"path": "p", "file_path": "p", "input": "*** Add File: p\n"})) == ["p"], (
            name
        )


def test_B_SUM_6_read_only_commands_of_editor_tools_touch_nothing():
    assert write_paths("str_replace_editor", json.dumps({"command": "view", "path": "a"})) == []
    assert write_paths("read_file", json.dumps({"path": "a"})) == []
    assert write_paths("edit_file", "{not json") == []


_WRITE_ISH = re.compile(r"write|edit|patch|create_file|save_memory", re.I)


def test_B_SUM_6_every_write_tool_in_the_recorded_trajectories_is_covered():
    names = set()
    for path in sorted(TRAJECTORIES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for msg in data if isinstance(data, list) else data["messages"]:
            names |= {c["function"]["name"] for c in msg.get("tool_calls") or ()}
    write_tools = {n for n in names if _WRITE_ISH.search(n)}
    assert write_tools, "expected write tools in the trajectories"
    assert {n for n in write_tools if n.lower() not in WRITE_TOOLS} == set()


def test_B_SUM_6_every_write_tool_the_server_defines_is_covered():
    """Every server tool that writes (declares ``writes_paths`` or needs edit approval) is registered here,
    and each of its declared path keys is extracted. The pipeline itself never imports server.tools."""
    from server.tools import TOOLS

    writers = {name: tool for name, tool in TOOLS.items() if tool.writes_paths or tool.approval == "edit"}
    assert {"edit_file", "write_file"} <= set(writers)
    missing = sorted(name for name in writers if name.lower() not in WRITE_TOOLS)
    assert missing == [], "add these write tools to server/context/summary.py WRITE_TOOLS"
    for name, writer in writers.items():
        for key in writer.writes_paths:
            assert write_paths(name, json.dumps({key: "src/x.py"})) == ["src/x.py"], (name, key)


def test_B_SUM_6_no_tool_name_declared_in_server_source_escapes_the_registry():
    """Belt and braces for tools declared outside server.tools: `Tool("name", ...)` or `name="..."`."""
    declared = re.compile(r"""(?:\bTool\(\s*|["']?name["']?\s*[:=]\s*)["']([A-Za-z_][A-Za-z0-9_]*)["']""")
    missing = set()
    for path in sorted((REPO / "server").rglob("*.py")):
        if "context" in path.relative_to(REPO / "server").parts:
            continue
        for name in declared.findall(path.read_text(encoding="utf-8")):
            if _WRITE_ISH.search(name) and name.lower() not in WRITE_TOOLS:
                missing.add(f"{name} ({path.relative_to(REPO)})")
    assert missing == set(), "add these write tools to server/context/summary.py WRITE_TOOLS"


# --- B-SUM-9: the plan -------------------------------------------------------------------------------------


def _plan_call(call_id: str, *steps: tuple[str, str], explanation: str | None = None) -> dict:
    args: dict = {"plan": [{"step": s, "status": st} for s, st in steps]}
    if explanation:
        args["explanation"] = explanation
    return call(call_id, "update_plan", **args)


def test_B_SUM_9_the_latest_plan_is_verbatim_in_a_plan_section_before_goals():
    msgs = [
        user("port the lexer"),
        assistant(None, _plan_call("p1", ("read", "in_progress"), ("port", "pending"))),
        tool("p1", "Plan updated"),
        assistant(None, _plan_call("p2", ("read", "completed"), ("port  it: ß/λ", "in_progress"), explanation="e")),
        tool("p2", "Plan updated"),
        # An invalid plan (two steps in progress) is refused by the tool, and ignored by the summary alike
        assistant(None, _plan_call("p3", ("a", "in_progress"), ("b", "in_progress"))),
        tool("p3", "Tool failed: Invalid arguments: at most one step may be in_progress, not 2"),
    ]
    text = summarize(msgs)
    assert "\nPlan:\n- [completed] read\n- [in_progress] port  it: ß/λ\n- Explanation: e\nGoals:\n" in text
    assert "Plan:" not in summarize(msgs[:1]), "no plan, no section: summaries without a plan are unchanged"


def test_B_SUM_9_a_plan_set_after_the_summarized_history_is_the_one_shown():
    from server.context.summary import latest_plan

    older = [user("go"), assistant(None, _plan_call("p1", ("old step", "pending"))), tool("p1", "ok")]
    newer = [assistant(None, _plan_call("p2", ("new step", "in_progress"))), tool("p2", "ok")]
    text = summarize(older, plan=latest_plan(older + newer))
    assert "- [in_progress] new step" in text and "old step" not in text


def test_B_SUM_9_a_long_plan_stays_within_the_section_budget_keeping_what_is_left_to_do():
    steps = [(f"done step {i} " + "word " * 30, "completed") for i in range(40)]
    steps += [("now: the one running", "in_progress"), ("next: still to do", "pending")]
    msgs = [user("go"), assistant(None, _plan_call("p", *steps)), tool("p", "ok")]
    text = summarize(msgs, budget_tokens=200)
    section = text.split("Plan:\n", 1)[1].split("\nGoals:", 1)[0]
    assert "- (40 completed steps not shown)" in section
    assert "- [in_progress] now: the one running" in section and "- [pending] next: still to do" in section
    from server.context import estimate_text_tokens

    assert estimate_text_tokens(f"Plan:\n{section}\n") <= 200


def test_B_SUM_9_the_fold_keeps_the_plan_through_its_stored_form():
    msgs = [user("go"), assistant(None, _plan_call("p1", ("a", "in_progress"), explanation="x")), tool("p1", "ok")]
    state = SummaryState()
    for m in msgs:
        state = summary_feed(state, m)
    assert state.plan is not None
    again = SummaryState.from_json(json.loads(json.dumps(state.to_json())))
    assert again == state and render_summary(again) == render_summary(state)
    assert SummaryState.from_json({**state.to_json(), "v": 3}) is None, "a fold from before plans is not resumed"
