"""The summary of a replayed recorded session, end to end (SPEC B-SUM-10, B-SUM-8): the real server
replays the spotter session (Claude Code) at a 16k window, and every ``Failures to avoid:`` line of every summary it
sent names a call that failed in the recording and quotes what went wrong."""

from __future__ import annotations

import json
import subprocess

from protocol.wire_text import SUMMARY_HEADER
from server.context.failures import call_label
from tests.conftest import TRAJECTORIES, load_trajectory
from tests.harness import REPO, server_env

THREADLINE = REPO / ".venv" / "bin" / "threadline"
SPOTTER = TRAJECTORIES / "spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.json"


def _failed_calls(path) -> dict[str, str]:
    """Call label -> output of every call the recording's own format says failed (Claude Code writes a failed
    Bash result as ``Exit code N``, a refused edit as ``<tool_use_error>``, a rejected call as "The user doesn't
    want to proceed"): an oracle written apart from ``is_failure``."""
    calls: dict[str, tuple[str, str]] = {}
    failed = {}
    for msg in load_trajectory(path):
        for c in msg.get("tool_calls") or ():
            calls[c["id"]] = (c["function"]["name"], c["function"]["arguments"])
        if msg["role"] == "tool":
            text = msg["content"]
            if text.startswith(("Exit code ", "<tool_use_error>", "The user doesn't want", "[no tool result")):
                failed[call_label(*calls[msg["tool_call_id"]])] = text
    return failed


def _failure_lines(summary: str) -> list[str]:
    section = summary.split("Failures to avoid:\n", 1)[1].split("\nLast useful assistant state:", 1)[0]
    return [line[2:] for line in section.splitlines() if line != "- None recorded" and not line.startswith("- (and ")]


def test_B_SUM_10_every_failure_line_of_a_replayed_session_names_a_failed_call_and_its_error(tmp_path):
    out = tmp_path / "requests.jsonl"
    result = subprocess.run(
        [str(THREADLINE), "replay", str(SPOTTER), "--context-window", "16000", "--json", "--requests-out", str(out)],
        env=server_env(tmp_path / "home"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr + result.stdout[-2000:]
    summaries = {
        m["content"]
        for line in out.read_text(encoding="utf-8").splitlines()
        for m in json.loads(line)["messages"]
        if m["role"] == "system" and m["content"].startswith(SUMMARY_HEADER)
    }
    assert len(summaries) >= 5
    failed = _failed_calls(SPOTTER)
    lines = {line for summary in summaries for line in _failure_lines(summary)}
    assert len(lines) >= 5
    for line in lines:
        call, _, telling = line.partition("): ") if "(" in line.partition(": ")[0] else line.partition(": ")
        assert telling, line  # the call, then what went wrong: Tool(argument): ...
        name, _, argument = call.partition("(")
        assert any(label.startswith(f"{name}({argument.removesuffix('…')}" if argument else name) for label in failed)
        assert len(line) <= 240
    # the failing test log is quoted by its assertion, not by its first characters
    assert any("Assertion with == failed" in line and line.startswith("Bash(mix test ") for line in lines), lines
    assert not any("Getting extensions in current project" in line for line in lines), lines
    assert any(line.startswith("Bash(git push 2>&1): fatal: The current branch") for line in lines), lines
