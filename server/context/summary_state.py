"""The summary's memory (R-SUM-1..6, B-SUM-7..11): ``summary_feed`` folds one message into an immutable
``SummaryState``, bounded, so a store can snapshot it and feed only new messages later (B-INC-1) with the same
result as a full rebuild. How a state is written as text is ``server.context.summary``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from protocol.tool_facts import WRITTEN_PATH_KEYS, named

from .failures import (
    FAILED_STATUSES,
    call_label,
    clears_editor_failures,
    editor_failure,
    failure_telling,
    is_failure,
)
from .micro import content_text
from .plan import Plan, plan_of_call
from .processes import processes_after

GOAL_CHARS = 240  # a goal as stored (B-SUM-7: the latest are shown so; older ones shorter)
MAX_STORED_GOALS = 4096  # the fold's memory; far more than any budget shows
FAILURE_CHARS = 240  # a failure as stored, and shown among the latest (B-SUM-8)
MAX_STORED_FAILURES = 1024  # the fold's memory of distinct failures; more than any budget shows
# A stored fold of another version is not resumed from (its summary would not show alike): before 2 it kept only
# the latest 4 failures; before 3 (B-SUM-10) its failures were text excerpts of any output mentioning an error;
# before 4 it had no plan (B-SUM-9); before 5 its failures and open calls had no path, so an editor-diagnostics
# failure stayed after a later write of its file left no error there (B-SUM-10); before 6 it did not
# know which background processes run (B-SUM-11).
FOLD_VERSION = 6
STATE_CHARS = 500
ELLIPSIS = "…"

# Write tools -> argument keys that hold the written path (B-SUM-6). Keys are lower-case tool names; the
# lookup lower-cases the called name, so `Edit` (Claude Code) and `edit` (pi) share an entry. A value that
# is a multi-line patch is parsed for its file headers instead. Our own write tools declare it (``protocol.tool_facts``,
# kind "write"); add every other agent's write tool here: a test fails for any write tool a trajectory or the
# server defines that this registry does not cover.
WRITE_TOOLS: Mapping[str, tuple[str, ...]] = {
    **{name: WRITTEN_PATH_KEYS for name in sorted(named(kind="write"))},
    "create_file": ("path", "file_path"),
    "apply_patch": ("input", "patch", "path"),
    "str_replace_editor": ("path",),
    "str_replace_based_edit_tool": ("path",),
    "write": ("file_path", "path"),
    "edit": ("file_path", "path"),
    "multiedit": ("file_path", "path"),
    "notebookedit": ("notebook_path",),
}
# str_replace_editor-style tools also read: their "view" command writes nothing.
_READ_ONLY_COMMANDS = frozenset({"view"})
_PATCH_HEADER = re.compile(
    r"^(?:\*\*\* (?:Add|Update|Delete) File: |\*\*\* Move to: |\+\+\+ (?:b/)?)(?P<path>\S.*?)\s*$", re.M
)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class SummaryState:
    """What the summary remembers so far (immutable; every feed returns a new state)."""

    goals: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    # (call, telling line, path) per distinct failure (B-SUM-10); path: the written file of an editor-diagnostics
    # failure (dropped once a later write leaves that file without errors), else ""
    failures: tuple[tuple[str, str, str], ...] = ()
    last_state: str | None = None
    # (call id, tool name, call label, first written path or "") of the latest calling assistant
    open_calls: tuple[tuple[str, str, str, str], ...] = ()
    fed: int = 0
    plan: Plan | None = None  # the latest valid update_plan call's plan (B-SUM-9)
    processes: tuple[tuple[str, str], ...] = ()  # (id, command start) of background processes running (B-SUM-11)

    def to_json(self) -> dict[str, Any]:
        return {
            "v": FOLD_VERSION,
            "goals": list(self.goals),
            "files": list(self.files),
            "failures": [list(f) for f in self.failures],
            "lastState": self.last_state,
            "openCalls": [list(c) for c in self.open_calls],
            "fed": self.fed,
            "plan": self.plan.to_json() if self.plan else None,
            "processes": [list(p) for p in self.processes],
        }

    @classmethod
    def from_json(cls, data: Any) -> SummaryState | None:
        """The state a stored fold describes, or None when it is not one (a damaged or foreign record, or one
        stored before FOLD_VERSION, whose failures a new summary would not show alike)."""
        try:
            if data.get("v") != FOLD_VERSION:
                return None
            last = data.get("lastState")
            calls = tuple((str(a), str(b), str(c), str(d)) for a, b, c, d in data.get("openCalls", ()))
            failures = tuple((str(a), str(b), str(c)) for a, b, c in data.get("failures", ()))
            fed = data.get("fed", 0)
            if (last is not None and not isinstance(last, str)) or not isinstance(fed, int):
                return None
            goals = tuple(str(x) for x in data.get("goals", ()))
            files = tuple(str(x) for x in data.get("files", ()))
            plan = Plan.from_json(data["plan"]) if data.get("plan") is not None else None
            if data.get("plan") is not None and plan is None:
                return None
            processes = tuple((str(a), str(b)) for a, b in data.get("processes", ()))
            return cls(goals, files, failures, last, calls, fed, plan, processes)
        except (AttributeError, TypeError, ValueError):
            return None


def one_line(text: str, clip: int | None = None) -> str:
    """``text`` on one line. With ``clip``, only what ``clip(..., clip)`` keeps of it is exact (a long text's
    tail is not rewritten): a prefix longer than ``clip + 1`` characters is a prefix of the whole line."""
    if clip is not None and len(text) > 2 * clip:
        head = _SPACE.sub(" ", text[: 2 * clip]).lstrip()
        if len(head) > clip + 1:
            return head
    return _SPACE.sub(" ", text).strip()


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters; a cut text ends with an ellipsis inside the bound."""
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)].rstrip() + ELLIPSIS


def _patch_paths(patch: str) -> list[str]:
    return [m.group("path") for m in _PATCH_HEADER.finditer(patch) if m.group("path") != "/dev/null"]


def write_paths(tool_name: str, arguments: Any) -> list[str]:
    """Paths a write-tool call touches, from its JSON ``arguments`` (B-SUM-6); [] for other tools."""
    keys = WRITE_TOOLS.get(tool_name.lower())
    if keys is None:
        return []
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return []
    if not isinstance(args, Mapping) or args.get("command") in _READ_ONLY_COMMANDS:
        return []
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return _patch_paths(value) if "\n" in value else [value.strip()]
    return []


def _feed_assistant(state: SummaryState, msg: Mapping[str, Any]) -> SummaryState:
    files, plan = state.files, state.plan
    calls = []
    for call in msg.get("tool_calls") or ():
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        written = write_paths(name, function.get("arguments"))
        label = call_label(name, function.get("arguments"))
        calls.append((str(call.get("id", "")), name, label, written[0] if written else ""))
        plan = plan_of_call(name, function.get("arguments")) or plan
        for path in written:
            if path not in files:
                files = (*files, path)
    text = one_line(content_text(msg.get("content")), STATE_CHARS)
    return SummaryState(
        state.goals,
        files,
        state.failures,
        clip(text, STATE_CHARS) if text else state.last_state,
        tuple(calls) if calls else state.open_calls,
        state.fed + 1,
        plan,
        state.processes,
    )


def _feed_tool(state: SummaryState, msg: Mapping[str, Any], status: str | None) -> SummaryState:
    text = content_text(msg.get("content"))
    call_id = str(msg.get("tool_call_id"))
    fallback = str(msg.get("name") or "tool")
    name, label, path = next(((n, lb, p) for i, n, lb, p in state.open_calls if i == call_id), (fallback, fallback, ""))
    state = _feed_processes(state, name, text)
    failed = is_failure(text, name, status)
    if path and not failed and clears_editor_failures(text):
        # B-SUM-10: editor diagnostics count while they persist; this write left the file clean
        kept = tuple(f for f in state.failures if f[2] != path)
        return replace(state, failures=kept, fed=state.fed + 1)
    if not failed:  # B-SUM-10: only a call that failed
        return summary_skip(state)
    where = path if path and status not in FAILED_STATUSES and editor_failure(text) else ""
    failure = (label, clip(failure_telling(text), FAILURE_CHARS), where)  # shown only within FAILURE_CHARS
    # Every distinct failure, in order (R-SUM-2, B-SUM-8): a failure repeated word for word (the same test run
    # failing again) is one failure to avoid; it moves to its latest place instead of taking a second slot.
    earlier = tuple(f for f in state.failures if f != failure)
    return SummaryState(
        state.goals,
        state.files,
        ((*earlier, failure))[-MAX_STORED_FAILURES:],
        state.last_state,
        state.open_calls,
        state.fed + 1,
        state.plan,
        state.processes,
    )


def _feed_processes(state: SummaryState, name: str, text: str) -> SummaryState:
    running = processes_after(state.processes, name, text)
    return state if running is state.processes else replace(state, processes=running)


def summary_feed(state: SummaryState, msg: Mapping[str, Any], status: str | None = None) -> SummaryState:
    """Fold one transcript message into the state (R-SUM-2). System messages are not history: skipped. Each
    step builds the next state once (with the count of messages fed), not once per changed field. ``status``: a
    tool message's stored status (``ok``/``error``/``denied``) when the message itself no longer carries it (a
    repaired message keeps only the keys a provider is sent); else its ``tool_status`` is read."""
    role = msg.get("role")
    if role == "user":
        text = one_line(content_text(msg.get("content")), GOAL_CHARS)
        if text:
            return SummaryState(
                ((*state.goals, clip(text, GOAL_CHARS)))[-MAX_STORED_GOALS:],
                state.files,
                state.failures,
                state.last_state,
                state.open_calls,
                state.fed + 1,
                state.plan,
                state.processes,
            )
    elif role == "assistant":
        return _feed_assistant(state, msg)
    elif role == "tool":
        return _feed_tool(state, msg, status or msg.get("tool_status"))
    return summary_skip(state)


def summary_skip(state: SummaryState, msg: Mapping[str, Any] | None = None) -> SummaryState:
    """``summary_feed`` of a tool output known not to be a failure (a microcompactable one, R-MICRO-2):
    it records no failure, so its text need not be searched again; only its first line is read for what it says
    of a background process (B-SUM-11), which a microcompacted output still told."""
    if msg is not None and msg.get("role") == "tool":
        call_id = str(msg.get("tool_call_id"))
        name = next((n for i, n, _lb, _p in state.open_calls if i == call_id), str(msg.get("name") or ""))
        state = _feed_processes(state, name, content_text(msg.get("content")))
    return replace(state, fed=state.fed + 1)
