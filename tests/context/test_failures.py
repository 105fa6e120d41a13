"""What counts as a failure and what its summary line says (SPEC B-SUM-10, B-SUM-8, R-MICRO-2), over
real tool outputs from the recorded sessions (tests/conftest.py's TRAJECTORIES)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from server.context import SummaryState, render_summary, summary_feed
from server.context.failures import call_label, failure_telling, fit_failure, is_failure, telling_line
from tests.conftest import KIMI, MINI_SWE, TRAJECTORIES, load_trajectory

SPOTTER = TRAJECTORIES / "spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.json"
PI = TRAJECTORIES / "pi-mono__before-compaction.json"


def _results(path) -> list[tuple[str, str, str]]:
    """(tool name, arguments, output) of every tool result in a recorded session, in order."""
    calls: dict[str, tuple[str, str]] = {}
    out = []
    for msg in load_trajectory(path):
        for c in msg.get("tool_calls") or ():
            calls[c["id"]] = (c["function"]["name"], c["function"]["arguments"])
        if msg["role"] == "tool":
            name, args = calls.get(msg["tool_call_id"], ("tool", "{}"))
            out.append((name, args, msg["content"]))
    return out


def _find(path, pred: Callable[[str, str, str], bool]) -> tuple[str, str, str]:
    found = next((r for r in _results(path) if pred(*r)), None)
    assert found is not None, f"no such output in {path.name}"
    return found


# --- what counts ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SPOTTER, KIMI], ids=["spotter", "kimi"])
def test_B_SUM_10_a_successful_read_search_or_report_mentioning_errors_is_not_a_failure(path):
    """Reads of code full of `{:error, reason}`, a Grep whose hits say "error", sub-agent reports that discuss
    error handling: all succeeded (each was read as a failure before)."""
    mentions = re.compile(r"error|invalid|permission denied|not found|fail", re.I)
    quiet = [
        r
        for r in _results(path)
        if r[0] in ("Read", "Grep", "Glob", "Task", "Agent", "TaskOutput") and mentions.search(r[2])
    ]
    assert len(quiet) >= 10
    assert [r[2][:60] for r in quiet if is_failure(r[2], r[0])] == []


def test_B_SUM_10_exit_codes_in_every_recorded_format():
    claude = _find(SPOTTER, lambda n, a, t: t.startswith("Exit code 128\nfatal: The current branch"))
    swe_failed = _find(MINI_SWE, lambda n, a, t: t.startswith("<returncode>127</returncode>"))
    swe_ok = _find(MINI_SWE, lambda n, a, t: t.startswith("<returncode>0</returncode>") and "Error" in t)
    pi = _find(PI, lambda n, a, t: t.rstrip().endswith("Command exited with code 2"))
    pi_ok = _find(PI, lambda n, a, t: n == "bash" and "npm error" not in t and "Command exited" not in t)
    assert is_failure(claude[2], "Bash") and is_failure(swe_failed[2], "bash") and is_failure(pi[2], "bash")
    assert not is_failure(swe_ok[2], "bash")  # returncode 0: a success whatever the output mentions
    assert not is_failure(pi_ok[2], "bash")
    # ours: a failed run_command is "Tool failed: command exited with code N" (status error); success ends in
    # "[exit code 0]"
    assert is_failure("Tool failed: command exited with code 3\nboom", "run_command")
    assert is_failure("boom\n[exit code 1]", "run_command")
    assert not is_failure("Traceback mentioned in a log line\n[exit code 0]", "run_command")


def test_B_SUM_10_error_markers_at_the_start_and_the_stored_status():
    pi_edit = _find(PI, lambda n, a, t: n == "edit" and t.startswith("Could not find the exact text"))
    assert is_failure(pi_edit[2], "edit")
    assert is_failure("<tool_use_error>String to replace not found in file.</tool_use_error>", "Edit")
    assert is_failure("fatal: not a git repository", "Bash") and is_failure("Error: ENOENT", "write")
    assert is_failure('Traceback (most recent call last):\n  File "a.py"\nKeyError: 1', "bash")
    assert is_failure("[no tool result recorded: call aborted]", "read")  # the call never completed
    assert is_failure("The user doesn't want to proceed with this tool use.", "ExitPlanMode")
    # the stored status decides whatever the text says; "ok" from a quiet tool is never overridden by its text
    assert is_failure("ordinary text", "mcp__x__y", status="error") and is_failure("x", "Bash", status="denied")
    assert not is_failure("Error: this file documents errors", "read_file", status="ok")


# --- what the line says ---------------------------------------------------------------------------------------


def test_B_SUM_10_a_failing_test_log_yields_its_assertion_not_its_first_characters():
    _, _, log = _find(SPOTTER, lambda n, a, t: t.startswith("Exit code 2\nGetting extensions") and "Assertion" in t)
    assert log.index("Assertion with == failed") > 500  # deep in the log, not at its start
    telling = failure_telling(log)
    assert telling.startswith("Assertion with == failed code: assert length(db_messages)")
    assert "Getting extensions" not in telling


def test_B_SUM_10_a_traceback_yields_its_last_line():
    _, _, out = _find(MINI_SWE, lambda n, a, t: "ModuleNotFoundError: No module named 'wrapt'" in t)
    assert out.index("Traceback") < 40
    assert telling_line(out) == "ModuleNotFoundError: No module named 'wrapt'"


def test_B_SUM_10_an_error_message_wherever_it_stands():
    _, _, node = _find(PI, lambda n, a, t: "Error: Cannot find module './packages" in t)
    assert telling_line(node).startswith("Error: Cannot find module './packages/coding-agent/src/utils/config.js'")
    _, _, tsc = _find(PI, lambda n, a, t: "error TS2305" in t and t.rstrip().endswith("code 2"))
    assert "error TS2305: Module" in telling_line(tsc)
    _, _, git = _find(SPOTTER, lambda n, a, t: t.startswith("Exit code 1\nThe following paths are ignored"))
    assert failure_telling(git) == "exit 1: The following paths are ignored by one of your .gitignore files:"


def test_B_SUM_10_the_call_is_named_by_tool_and_key_argument():
    assert call_label("Bash", '{"command": "mix test test/a_test.exs 2>&1", "description": "Run"}') == (
        "Bash(mix test test/a_test.exs 2>&1)"
    )
    assert call_label("bash", {"command": "cd /testbed && python -m pytest -x"}) == "bash(python -m pytest -x)"
    assert call_label("edit", '{"path": "src/a.ts", "oldText": "x"}') == "edit(src/a.ts)"
    assert call_label("ExitPlanMode", "{}") == "ExitPlanMode" and call_label("x", "{broken") == "x"


def test_B_SUM_8_B_SUM_10_both_the_call_and_the_error_survive_the_cut():
    call = "bash(python -c " + '"' + "import os; " * 30 + '")'
    telling = "ImportError: cannot import name 'formatargspec' from 'inspect' (/opt/miniconda3/lib/python3.11)"
    for limit in (80, 240):
        line = fit_failure(call, telling, limit)
        assert len(line) <= limit
        assert line.startswith("bash(python -c ") and "ImportError: cannot import" in line
    assert fit_failure("Bash(ls)", "exit 1", 80) == "Bash(ls): exit 1"


# --- in the summary -----------------------------------------------------------------------------------------------


def _fold(msgs: list[dict[str, Any]]) -> SummaryState:
    state = SummaryState()
    for msg in msgs:
        state = summary_feed(state, msg)
    return state


@pytest.mark.parametrize("path", [SPOTTER, KIMI, MINI_SWE, PI], ids=["spotter", "kimi", "mini-swe", "pi"])
def test_B_SUM_10_every_failure_line_of_a_recorded_session_names_a_failed_call(path):
    failed_labels = {call_label(n, a) for n, a, t in _results(path) if is_failure(t, n)}
    state = _fold(load_trajectory(path))
    assert state.failures
    assert {call for call, _, _ in state.failures} <= failed_labels
    assert all(telling for _, telling, _ in state.failures)
    lines = render_summary(state, 50_000).split("Failures to avoid:\n")[1].split("\nLast useful")[0].splitlines()
    assert len(set(lines)) == len(lines) <= len(state.failures)  # identical failures are one line
    assert all(re.match(r"- [\w.]+(\(.*\))?: \S", line) for line in lines), lines


def test_B_SUM_10_identical_failures_are_one_line():
    msgs: list[dict[str, Any]] = []
    for i in range(3):
        msgs += [
            {"role": "assistant", "content": None, "tool_calls": [_call(f"c{i}", "Bash", command="mix test")]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "Exit code 2\nAssertion with == failed"},
        ]
    assert len(_fold(msgs).failures) == 1


def _call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    import json

    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def test_B_SUM_10_a_rejected_call_says_so_with_the_users_reason():
    name, _args, text = _find(KIMI, lambda n, a, t: n == "ExitPlanMode" and t.startswith("The user doesn't want"))
    assert is_failure(text, name)
    telling = failure_telling(text)
    assert telling.startswith("rejected by the user: ") and telling_line(text) in text.replace("\n", " ")
