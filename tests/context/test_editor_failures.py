"""B-SUM-10: editor diagnostics an edit introduced count as failures for the summary while they persist.
A later write of the same file whose result says none remain (``CLEAN_NOTE``) drops them from the fold; a write
that resolves only some, or another file's clean write, keeps them."""

from __future__ import annotations

import json
from pathlib import Path

from protocol.editor import Diagnostic, Position, Range
from server.context.failures import clears_editor_failures, is_failure
from server.context.summary import render_summary, summarize
from server.context.summary_state import SummaryState, summary_feed
from server.grounding.edits import introduced, introduced_text, resolved_text


def diag(path: Path, line: int, message: str, severity: int = 1) -> Diagnostic:
    at = Range(start=Position(line=line, character=0), end=Position(line=line, character=1))
    return Diagnostic(uri=path.as_uri(), range=at, severity=severity, message=message)  # type: ignore[arg-type]


def write(cwd: Path, call_id: str, path: str, before: list[Diagnostic], after: list[Diagnostic]) -> list[dict]:
    """An edit_file call and its result, as the server's after-edit comparison writes it."""
    args = json.dumps({"path": path, "old_text": "a", "new_text": "b"})
    call = {"id": call_id, "type": "function", "function": {"name": "edit_file", "arguments": args}}
    text = f"Edited {path}" + introduced_text(cwd, introduced(before, after)) + resolved_text(cwd, before, after)
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": text, "tool_status": "ok"},
    ]


def failures_section(msgs: list[dict]) -> str:
    return summarize(msgs).split("Failures to avoid:\n", 1)[1].split("\nLast useful", 1)[0]


def test_B_SUM_10_introduced_then_resolved_is_no_longer_a_failure(tmp_path):
    m = tmp_path / "m.py"
    broken = [diag(m, 0, "undefined name 'y'")]
    msgs = [*write(tmp_path, "c1", "m.py", [], broken), *write(tmp_path, "c2", "m.py", broken, [])]
    assert is_failure(msgs[1]["content"], "edit_file", "ok") and not is_failure(msgs[3]["content"], "edit_file", "ok")
    assert clears_editor_failures(msgs[3]["content"])
    assert "undefined name" not in failures_section(msgs)
    assert failures_section(msgs) == "- None recorded"


def test_B_SUM_10_introduced_and_still_present_is_kept(tmp_path):
    m, o = tmp_path / "m.py", tmp_path / "o.py"
    y, z = diag(m, 0, "undefined name 'y'"), diag(m, 1, "undefined name 'z'")
    partly = [*write(tmp_path, "c1", "m.py", [], [y, z]), *write(tmp_path, "c2", "m.py", [y, z], [z])]
    assert "resolved by this edit" in partly[3]["content"] and not clears_editor_failures(partly[3]["content"])
    assert "undefined name 'y'" in failures_section(partly)  # z persists: the failure stays
    # another file's clean write does not clear m.py's failure
    other = [*write(tmp_path, "c1", "m.py", [], [y]), *write(tmp_path, "c2", "o.py", [diag(o, 0, "x")], [])]
    assert "undefined name 'y'" in failures_section(other)
    # a failure of another kind is never cleared by a clean write
    failed: list[dict] = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "t", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "t", "content": "Exit code 1\nboom", "tool_status": "ok"},
        *write(tmp_path, "c3", "m.py", [y], []),
    ]
    assert "boom" in failures_section(failed)


def test_B_SUM_10_the_fold_resumed_from_json_clears_alike(tmp_path):
    m = tmp_path / "m.py"
    broken = [diag(m, 0, "undefined name 'y'")]
    first, second = write(tmp_path, "c1", "m.py", [], broken), write(tmp_path, "c2", "m.py", broken, [])
    state = SummaryState()
    for msg in first:
        state = summary_feed(state, msg)
    resumed = SummaryState.from_json(json.loads(json.dumps(state.to_json())))
    assert resumed == state and resumed is not None
    for msg in second:
        resumed = summary_feed(resumed, msg)
    assert render_summary(resumed) == summarize([*first, *second])
    assert SummaryState.from_json({**state.to_json(), "v": 4}) is None  # an old fold is not built on
