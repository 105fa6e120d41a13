"""``threadline chat``'s output as plain text: each ``sessionUpdate`` as a line or a few (streamed text, tool calls
and their folded results, the context meter of B-METER-1 with the cached share of B-CACHE-5 and the cost,
compaction notices of R-OBS-1, applied diffs), approvals and the end of each turn. This is what a pipe or a log
gets, with no escape codes; ``server.cli.terminal`` renders the same for a person at a terminal.
"""

from __future__ import annotations

import difflib
from typing import Any, TextIO

from server.cli.words import hint

RESULT_LINES = 4
DIFF_LINES = 40  # an applied edit's diff, printed after the fact, is cut after this many lines


def tokens(n: int | None) -> str:
    """12345 -> '12.3k', 64000 -> '64k', 512 -> '512'."""
    if n is None:
        return "?"
    if n < 1000:
        return str(n)
    return f"{n / 1000:.1f}".rstrip("0").rstrip(".") + "k"


def cached_share(usage: dict[str, Any]) -> str | None:
    """B-CACHE-5: '42% cached' of the last request's input; None when the provider reports no cache figure."""
    cached, total = usage.get("cachedInputTokens"), usage.get("inputTokens")
    if not isinstance(cached, int) or not isinstance(total, int) or total <= 0:
        return None
    return f"{min(100, cached * 100 // total)}% cached"  # floor: 'all cached' only when it all was


def money(usage: dict[str, Any]) -> str | None:
    """'$0.0123 (session $0.4500)': the call's cost and the session's; None when no price is known."""
    call, session = usage.get("costUsd"), (usage.get("totals") or {}).get("costUsd")
    if not isinstance(call, (int, float)):
        return None
    return f"${call:.4f}" + (f" (session ${session:.4f})" if isinstance(session, (int, float)) else "")


def budget_text(u: dict[str, Any]) -> str | None:
    """B-BUDGET-1: 'budget auto' or 'budget 60k' (``[context] budget``); None when the server says none."""
    if u.get("budgetSource") == "config" and isinstance(u.get("budgetTokens"), int):
        return f"budget {tokens(u['budgetTokens'])}"
    return "budget auto" if u.get("budgetSource") == "auto" else None


def meter_line(u: dict[str, Any]) -> str:
    """B-METER-1: the last request's size against the window, its cached share and cost when known."""
    share, cost = cached_share(u), money(u)
    return (
        f"context {tokens(u.get('contextTokens'))}/{tokens(u.get('contextWindowTokens'))} tokens"
        + (f" · {budget}" if (budget := budget_text(u)) else "")
        + (f" · {share}" if share else "")
        + (f" · {cost}" if cost else "")
    )


def fold(text: str, lines: int = RESULT_LINES, width: int = 160) -> list[str]:
    rows = text.splitlines() or [""]
    shown = [r if len(r) <= width else r[: width - 1] + "…" for r in rows[:lines]]
    if len(rows) > lines:
        shown.append(f"… {len(rows) - lines} more lines")
    return shown


class Printer:
    """Turns ``sessionUpdate`` notifications into terminal lines."""

    def __init__(self, out: TextIO):
        self.out = out
        self.streaming = False  # inside streamed assistant text (no newline yet)
        self.streamed = False  # this answer's text already arrived as deltas
        self.asked: set[str] = set()  # tool calls whose approval (with its diff) was shown at the prompt
        self.last_edit: tuple[str, str, str] | None = None  # (turnId, toolCallId, path) of the last applied edit

    def write(self, line: str) -> None:
        self.end_stream()
        self.out.write(line + "\n")
        self.out.flush()

    def end_stream(self) -> None:
        if self.streaming:
            self.out.write("\n")
            self.streaming = False

    def update(self, u: dict[str, Any], turn_id: str | None = None) -> None:
        kind = u.get("kind")
        if kind == "assistantDelta":
            self.out.write(u["text"])
            self.out.flush()
            self.streaming = self.streamed = True
        elif kind == "assistantMessage":
            if not self.streamed and u.get("content"):  # a provider that did not stream
                self.write(u["content"])
            if u.get("interrupted"):
                self.write("  (interrupted)")
            self.end_stream()
            self.streamed = False
        elif kind == "toolCall":
            self.write(f"→ {u.get('title') or u['tool']}")
        elif kind == "toolResult":
            status = str(u.get("status"))
            mark = {"ok": "✓", "denied": "✗ denied", "error": "✗"}.get(status, status)
            for n, row in enumerate(fold(u.get("content") or "")):
                self.write(f"  {mark if n == 0 else ' ' * len(mark)} {row}")
            diff = u.get("diff")
            if status == "ok" and isinstance(diff, dict) and turn_id:
                self.applied(turn_id, u["toolCallId"], diff)
        elif kind == "artifactCreated":
            self.write(f"  [artifact {u['artifactId']}: {u['totalBytes']} bytes, {u['totalLines']} lines]")
        elif kind == "usage":
            self.write(meter_line(u))
        elif kind == "contextCompacted":
            self.write(
                f"context compacted ({u['mode']}): {tokens(u['beforeTokens'])} -> {tokens(u['afterTokens'])} tokens"
            )
        elif kind == "notice":
            self.write(f"[{u.get('level', 'info')}] {u.get('message', '')}")
        elif kind == "mcpServerStatus":
            tools = f", {len(u['tools'])} tools" if u.get("tools") is not None else ""
            self.write(f"mcp {u['name']}: {u['state']}{tools}" + (f" ({u['reason']})" if u.get("reason") else ""))
        elif kind == "hookRun":
            self.write(hook_line(u))
        elif kind == "plan":  # the agent's checklist, whole each time it changes
            for line in plan_lines(u):
                self.write(line)

    def busy(self, activity: str | None) -> None:
        """What is being waited for (``/compact``'s compaction); plain output has no live status line."""

    def typed(self, line: str) -> None:
        """A line the user typed while a turn runs (a terminal already shows it)."""

    def approval(self, params: dict[str, Any]) -> None:
        """The whole request, nothing cut and nothing raw: what the user approves is exactly what they read."""
        if params.get("outsideSandbox"):  # B-SBX-3: said before anything else
            self.write("!! this command would run OUTSIDE the sandbox, with all your rights")
        self.write(f"approval needed: {printable(str(params.get('title') or params.get('tool')))}")
        for row in printable(str(params.get("detail") or "")).splitlines() or [""]:
            self.write(f"  | {row}")

    def answered(self, params: dict[str, Any], decision: str) -> None:
        """The user answered the approval ``params`` asked."""

    def ended(self, result: dict[str, Any]) -> None:
        """A turn's end as scripts read it (a stable line), then what to do about a failure."""
        error = result.get("error")
        self.write(f"— turn ended: {result['stopReason']}" + (f": {error['message']}" if error else ""))
        said = hint(result)
        if said:
            self.write(f"  → {said}")

    def applied(self, turn_id: str, call_id: str, diff: dict[str, Any]) -> None:
        """An applied edit: its diff when no approval showed it first, and how to undo it."""
        self.last_edit = (turn_id, call_id, str(diff.get("path")))
        if call_id not in self.asked:
            for row in diff_lines(diff):
                self.write(f"    {printable(row)}")
        self.write("    (/undo rewinds this edit)")


def hook_line(u: dict[str, Any]) -> str:
    """A hook run in one line: what it decided (a blocked call, a failure) and its note, shortened."""
    said = u.get("failure") or u.get("decision") or "ok"
    note = u.get("reason") or u.get("additionalContext") or ""
    line = f"hook {u['event']}{' ' + u['tool'] if u.get('tool') else ''}: {said} ({u['command'][:60]})"
    return line + (f": {' '.join(note.split())[:200]}" if note else "")


def diff_lines(diff: dict[str, Any], limit: int = DIFF_LINES) -> list[str]:
    rows = list(
        difflib.unified_diff(
            str(diff.get("oldText", "")).splitlines(),
            str(diff.get("newText", "")).splitlines(),
            f"a/{diff.get('path')}",
            f"b/{diff.get('path')}",
            lineterm="",
        )
    )
    return rows if len(rows) <= limit else [*rows[:limit], f"… {len(rows) - limit} more diff lines"]


def printable(text: str) -> str:
    """``text`` with terminal control characters made visible (``\\x1b``), so an escape sequence in a command
    cannot rewrite the prompt the user is answering."""
    return "".join(
        c if c == "\n" or c == "\t" or (c.isprintable()) else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
        for c in text
    )


PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def plan_lines(u: dict[str, Any]) -> list[str]:
    """A ``plan`` update as a checklist: ``plan: 1 of 3 done`` then one ``[x]``/``[>]``/``[ ]`` line a step."""
    entries = u.get("entries") or []
    done = sum(1 for e in entries if e.get("status") == "completed")
    return [f"plan: {done} of {len(entries)} done"] + [
        f"  {PLAN_MARKS.get(e.get('status'), '[ ]')} {e.get('step', '')}" for e in entries
    ]
