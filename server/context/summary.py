"""Deterministic structured summary of older history (R-SUM-1..6, B-SUM-7), built as a left fold.

``summary_feed`` folds one message into an immutable, bounded ``SummaryState`` (``server.context.summary_state``);
``render_summary`` here writes a state as text, each section within its budget. No provider call, no clock: the
same messages give a byte-identical summary (R-SUM-3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from protocol.wire_text import SUMMARY_HEADER

from .failures import fit_failure
from .plan import Plan, plan_lines, plan_of_call
from .processes import PROCESS_CHARS
from .summary_state import FAILURE_CHARS, SummaryState, clip, summary_feed
from .tokens import estimate_text_tokens

NONE_RECORDED = "- None recorded"
RECENT_GOALS = 4  # B-SUM-7: the latest goals keep GOAL_CHARS; older ones OLD_GOAL_CHARS
OLD_GOAL_CHARS = 80
# Tokens the Goals section may take, and so may the Failures section (B-SUM-7: max(600, 5% of the usable window))
DEFAULT_SECTION_BUDGET = 600
# Failures as goals (B-SUM-7's rule applied to R-SUM-2's Failures section): the latest RECENT_FAILURES keep
# FAILURE_CHARS, older distinct ones are shortened to OLD_FAILURE_CHARS, the oldest dropped past the budget.
RECENT_FAILURES = 4
OLD_FAILURE_CHARS = 80
MAX_FILES = 40  # Shown paths; the rest are counted, so the summary stays bounded.
PATH_CHARS = 200


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
        return goals[i] if recent else clip(goals[i], OLD_GOAL_CHARS)

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
        return f"{process_id}: {clip(command, PROCESS_CHARS)}"

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
    files = [clip(path, PATH_CHARS) for path in state.files[:MAX_FILES]]
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
        text = clip(whole, limit) if limit > 0 else ""
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
