"""Deterministic structured summary of older history (R-SUM-1..6, B-SUM-7), built as a left fold.

``summary_feed`` folds one message into an immutable ``SummaryState``; ``render_summary`` turns a state into
text. The state is bounded (every goal up to ``MAX_STORED_GOALS``, every distinct failure up to
``MAX_STORED_FAILURES``, the de-duplicated paths),
so a store can snapshot it and feed only new messages later (B-INC-1) with the same result as a full rebuild. No provider
call, no clock: the same messages give a byte-identical summary (R-SUM-3).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from protocol.wire_text import SUMMARY_HEADER

from .failures import (
    FAILED_STATUSES,
    call_label,
    clears_editor_failures,
    editor_failure,
    failure_telling,
    fit_failure,
    is_failure,
)
from .micro import content_text
from .plan import Plan, plan_lines, plan_of_call
from .processes import PROCESS_CHARS, processes_after
from .tokens import estimate_text_tokens

__all__ = [
    "SUMMARY_HEADER",
    "WRITE_TOOLS",
    "SummaryState",
    "latest_plan",
    "render_summary",
    "summarize",
    "summary_feed",
    "with_focus",
    "with_hook_notes",
    "write_paths",
]

NONE_RECORDED = "- None recorded"
RECENT_GOALS = 4  # B-SUM-7: the latest goals keep GOAL_CHARS; older ones OLD_GOAL_CHARS
GOAL_CHARS = 240
OLD_GOAL_CHARS = 80
# Tokens the Goals section may take, and so may the Failures section (B-SUM-7: max(600, 5% of the usable window))
DEFAULT_SECTION_BUDGET = 600
MAX_STORED_GOALS = 4096  # the fold's memory; far more than any budget shows
# Failures as goals (B-SUM-7's rule applied to R-SUM-2's Failures section): the latest RECENT_FAILURES keep
# FAILURE_CHARS, older distinct ones are shortened to OLD_FAILURE_CHARS, the oldest dropped past the budget.
RECENT_FAILURES = 4
FAILURE_CHARS = 240
OLD_FAILURE_CHARS = 80
MAX_STORED_FAILURES = 1024  # the fold's memory of distinct failures; more than any budget shows
# A stored fold of another version is not resumed from (its summary would not show alike): before 2 it kept only
# the latest 4 failures; before 3 (B-SUM-10) its failures were text excerpts of any output mentioning an error;
# before 4 it had no plan (B-SUM-9); before 5 its failures and open calls had no path, so an editor-diagnostics
# failure stayed after a later write of its file left no error there (B-SUM-10); before 6 it did not
# know which background processes run (B-SUM-11).
FOLD_VERSION = 6
STATE_CHARS = 500
MAX_FILES = 40  # Shown paths; the rest are counted, so the summary stays bounded.
PATH_CHARS = 200
ELLIPSIS = "…"

# Write tools -> argument keys that hold the written path (B-SUM-6). Keys are lower-case tool names; the
# lookup lower-cases the called name, so `Edit` (Claude Code) and `edit` (pi) share an entry. A value that
# is a multi-line patch is parsed for its file headers instead. Add every new write tool here: a test fails
# for any write tool a trajectory or the server defines that this registry does not cover.
WRITE_TOOLS: Mapping[str, tuple[str, ...]] = {
    "edit_file": ("path", "file_path"),
    "write_file": ("path", "file_path"),
    "save_memory": ("path", "file_path"),
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


def _one_line(text: str, clip: int | None = None) -> str:
    """``text`` on one line. With ``clip``, only what ``_clip(..., clip)`` keeps of it is exact (a long text's
    tail is not rewritten): a prefix longer than ``clip + 1`` characters is a prefix of the whole line."""
    if clip is not None and len(text) > 2 * clip:
        head = _SPACE.sub(" ", text[: 2 * clip]).lstrip()
        if len(head) > clip + 1:
            return head
    return _SPACE.sub(" ", text).strip()


def _clip(text: str, limit: int) -> str:
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
    text = _one_line(content_text(msg.get("content")), STATE_CHARS)
    return SummaryState(
        state.goals,
        files,
        state.failures,
        _clip(text, STATE_CHARS) if text else state.last_state,
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
    failure = (label, _clip(failure_telling(text), FAILURE_CHARS), where)  # shown only within FAILURE_CHARS
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
        text = _one_line(content_text(msg.get("content")), GOAL_CHARS)
        if text:
            return SummaryState(
                ((*state.goals, _clip(text, GOAL_CHARS)))[-MAX_STORED_GOALS:],
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


def _section(title: str, lines: Iterable[str]) -> list[str]:
    body = [f"- {line}" for line in lines]
    return [title, *(body or [NONE_RECORDED])]


def _bounded_lines(
    count: int,
    line: Callable[[int, bool], str],
    recent: int,
    budget_tokens: int,
    title: str,
    noun: str,
    distinct: bool,
) -> list[str]:
    """Every item in order (B-SUM-7): ``line(i, recent)`` is item ``i`` as shown, whole when among the latest
    ``recent``, else shortened; the oldest are dropped (and counted) only while the section would exceed
    ``budget_tokens``. With ``distinct``, an older line equal to a later one once cut is shown once, at its latest
    place. Walks from the newest, so a session with thousands of items costs what is shown (plus, with
    ``distinct``, one pass to count what is dropped)."""
    first_recent = count - recent
    total = estimate_text_tokens(f"{title}\n")
    shown: list[str] = []
    seen: set[str] = set()
    dropped = 0
    for i in range(count - 1, -1, -1):
        text = line(i, i >= first_recent)
        if distinct and text in seen:
            continue
        cost = estimate_text_tokens(f"- {text}\n")
        if shown and total + cost > budget_tokens:
            older = (line(j, j >= first_recent) for j in range(i + 1))
            dropped = len(set(older) - seen) if distinct else i + 1
            break  # the newest item is always shown
        total += cost
        shown.append(text)
        seen.add(text)
    shown.reverse()
    return [f"(and {dropped} earlier {noun})", *shown] if dropped else shown


def _goal_lines(goals: tuple[str, ...], budget_tokens: int) -> list[str]:
    """Every goal (B-SUM-7): the latest RECENT_GOALS as stored, older ones cut to OLD_GOAL_CHARS."""

    def line(i: int, recent: bool) -> str:
        return goals[i] if recent else _clip(goals[i], OLD_GOAL_CHARS)

    return _bounded_lines(len(goals), line, RECENT_GOALS, budget_tokens, "Goals:", "goals", distinct=False)


def _failure_lines(failures: tuple[tuple[str, str, str], ...], budget_tokens: int) -> list[str]:
    """Every distinct failure (B-SUM-8): the latest RECENT_FAILURES within FAILURE_CHARS, older ones within
    OLD_FAILURE_CHARS, each cut so both its call and its telling line survive (B-SUM-10); the oldest dropped past
    ``budget_tokens``."""

    def line(i: int, recent: bool) -> str:
        call, telling, _path = failures[i]
        return fit_failure(call, telling, FAILURE_CHARS if recent else OLD_FAILURE_CHARS)

    return _bounded_lines(
        len(failures), line, RECENT_FAILURES, budget_tokens, "Failures to avoid:", "failures", distinct=True
    )


def _process_lines(processes: tuple[tuple[str, str], ...], budget_tokens: int) -> list[str]:
    """B-SUM-11: every process still running, ``id: command start``; the oldest dropped only past the budget."""

    def line(i: int, _recent: bool) -> str:
        process_id, command = processes[i]
        return f"{process_id}: {_clip(command, PROCESS_CHARS)}"

    return _bounded_lines(
        len(processes), line, len(processes), budget_tokens, "Running processes:", "processes", distinct=False
    )


def render_summary(
    state: SummaryState,
    budget_tokens: int = DEFAULT_SECTION_BUDGET,
    plan: Plan | None = None,
    processes: tuple[tuple[str, str], ...] | None = None,
) -> str:
    """The summary text (R-SUM-2, B-SUM-7, B-SUM-9): header, then the Plan (only when there is one), Goals, Files
    and tools touched, Failures to avoid, Last state. ``budget_tokens`` bounds the Plan section, the Goals section
    and the Failures section alike. ``plan`` is the transcript's latest plan when it is newer than the summarized
    history's own (an ``update_plan`` call in the verbatim tail), else the state's is shown. ``processes``: the
    background processes the whole transcript leaves running (B-SUM-11), else the state's; a ``Running
    processes:`` section follows the Plan when any runs, bounded by the same budget."""
    plan = plan or state.plan
    running = state.processes if processes is None else processes
    files = [_clip(path, PATH_CHARS) for path in state.files[:MAX_FILES]]
    if len(state.files) > MAX_FILES:
        files.append(f"(and {len(state.files) - MAX_FILES} more paths)")
    lines = [
        SUMMARY_HEADER,
        *(_section("Plan:", plan_lines(plan, budget_tokens)) if plan else []),
        *(_section("Running processes:", _process_lines(running, budget_tokens)) if running else []),
        *_section("Goals:", _goal_lines(state.goals, budget_tokens)),
        *_section("Files and tools touched:", files),
        *_section("Failures to avoid:", _failure_lines(state.failures, budget_tokens)),
        *_section("Last useful assistant state:", [state.last_state] if state.last_state else []),
    ]
    return "\n".join(lines)


def with_focus(summary: str, focus: str | None) -> str:
    """The summary with a ``Focus:`` section right after its header: what the user asked a compaction made on
    request to keep (``compactSession``), verbatim. Kept until the next compaction replaces the summary."""
    if not focus or not focus.strip():
        return summary
    head, sep, rest = summary.partition(SUMMARY_HEADER)
    section = f"Focus:\n{focus.strip()}"
    if not sep:
        return f"{summary}\n{section}"
    return f"{head}{SUMMARY_HEADER}\n{section}{rest}"


HOOK_NOTES_TITLE = "Hook notes:"


def with_hook_notes(summary: str, notes: str | None, budget_tokens: int = DEFAULT_SECTION_BUDGET) -> str:
    """The summary with a ``Hook notes:`` section at its end: what ``PreCompact`` hooks asked to keep,
    passed in as data so the summary stays pure (R-SUM-3). The section is cut to the section budget, the same way
    every time; it lasts until the next compaction makes a new summary."""
    if not notes or not notes.strip():
        return summary
    whole = notes.strip()
    room = budget_tokens - estimate_text_tokens(f"{HOOK_NOTES_TITLE}\n")
    limit, text = len(whole), whole
    while text and estimate_text_tokens(text) > room:
        # A strictly smaller limit each step, in proportion to the excess: bounded, and the same cut every time.
        limit = min(limit - 1, limit * max(room, 0) // estimate_text_tokens(text))
        text = _clip(whole, limit) if limit > 0 else ""
    return f"{summary}\n{HOOK_NOTES_TITLE}\n{text or NONE_RECORDED}"


def summarize(
    msgs: Iterable[Mapping[str, Any]], budget_tokens: int = DEFAULT_SECTION_BUDGET, plan: Plan | None = None
) -> str:
    """Summary of ``msgs`` (R-SUM-2, R-SUM-3): a left fold of ``summary_feed`` then ``render_summary``; ``plan``
    as ``render_summary``'s (B-SUM-9)."""
    state = SummaryState()
    for msg in msgs:
        state = summary_feed(state, msg)
    return render_summary(state, budget_tokens, plan)


def latest_plan(msgs: Iterable[Mapping[str, Any]]) -> Plan | None:
    """The plan of the last valid ``update_plan`` call in ``msgs`` (B-SUM-9), or None."""
    plan = None
    for msg in msgs:
        if msg.get("role") == "assistant":
            for call in msg.get("tool_calls") or ():
                function = call.get("function") or {}
                plan = plan_of_call(str(function.get("name", "")), function.get("arguments")) or plan
    return plan
