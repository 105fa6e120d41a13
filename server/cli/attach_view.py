"""What ``threadline chat --attach`` shows besides the live updates (docs/DAEMON.md): a finished session's last turn
(its request, each tool call on one line with how it ended, its final answer), the sessions to choose from when
none is named and none runs, and the approval another client answered (the prompt here is withdrawn, saying so).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from protocol.messages import ListSessionsResult, SessionInfo
from protocol.transcript import ReadTranscriptResult, TranscriptItem
from server.cli.client import Client
from server.cli.printer import Printer, fold, printable

TAIL = 200  # transcript items read to find the last turn
ANSWER_LINES = 40  # the final answer is shown up to this many lines
OFFERED = 5  # sessions offered when none is named and none runs
WIDTH = 100


def _one_line(text: str, width: int = WIDTH) -> str:
    flat = " ".join(printable(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def call_line(name: str, arguments: str, status: str | None) -> str:
    """``→ run_command: pytest -q  (ok)``: the call's most telling argument, how it ended."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        args = {}
    said = ""
    if isinstance(args, dict):
        for key in ("command", "path", "pattern", "query", "url", "task", "description"):
            if isinstance(args.get(key), str):
                said = args[key]
                break
    line = f"→ {name}" + (f": {_one_line(said, WIDTH - len(name))}" if said else "")
    return line + (f"  ({status})" if status else "")


def last_turn_lines(items: list[TranscriptItem]) -> list[str]:
    """The last turn of ``items`` (from the last request on): request, tool calls, final answer."""
    start = next((n for n in range(len(items) - 1, -1, -1) if items[n].role == "user"), None)
    if start is None:
        return []
    turn = items[start:]
    ended = {i.tool_call_id: i.tool_status or "ok" for i in turn if i.role == "tool" and i.tool_call_id}
    lines = [f"last turn: {_one_line(turn[0].typed or turn[0].content or '')}"]
    for item in turn[1:]:
        for call in item.tool_calls or []:
            lines.append(call_line(call.function.name, call.function.arguments, ended.get(call.id)))
    answer = next((i for i in reversed(turn) if i.role == "assistant" and i.content), None)
    if answer is not None:
        lines.append("final answer:")
        lines.extend(printable(row) for row in fold(answer.content or "", ANSWER_LINES, 1000))
        if answer.status == "interrupted":
            lines.append("  (interrupted)")
    return lines


async def show_last_turn(client: Client, printer: Printer, info: SessionInfo | None, sid: str) -> None:
    """A session with no turn running: what its last turn did, from the stored transcript."""
    count = info.message_count if info is not None else 0
    params = {"sessionId": sid, "afterSeq": max(0, count - TAIL), "limit": TAIL}
    items = (await client.call("readTranscript", params, ReadTranscriptResult)).items
    lines = last_turn_lines(items)
    for line in lines or ["(no turn yet)"]:
        printer.write(line)


async def session_info(client: Client, sid: str) -> SessionInfo | None:
    sessions = (await client.call("listSessions", {"limit": 500}, ListSessionsResult)).sessions
    return next((s for s in sessions if s.session_id == sid), None)


async def pick_session(client: Client, ask: Any) -> SessionInfo | None:
    """The session to attach to when none is named: the most recent one waiting for an approval, else running,
    else one of the most recent ones, offered (at a terminal the user picks; piped, they are listed)."""
    sessions = (await client.call("listSessions", {"limit": 200}, ListSessionsResult)).sessions
    chosen = [s for s in sessions if s.waiting_for_approval] or [s for s in sessions if s.running]
    if chosen:
        return chosen[0]
    recent = sessions[:OFFERED]
    if not recent:
        print("threadline: no session yet: start one with threadline exec --detach TASK", file=sys.stderr)
        return None
    out = sys.stdout if sys.stdin.isatty() else sys.stderr
    print("no session is running; the most recent ones:", file=out)
    for n, s in enumerate(recent, 1):
        print(f"  {n}. {s.session_id}  {s.updated_at[:19]}  {s.message_count} msgs  {_one_line(s.title, 60)}", file=out)
    if not sys.stdin.isatty():
        print("threadline: name one: threadline chat --attach SESSION", file=sys.stderr)
        return None
    choices = f"1-{len(recent)}, " if len(recent) > 1 else ""
    answer = await ask(f"attach to which? [{choices}Enter: 1]: ")
    if answer is None:
        return None
    picked = answer.strip() or "1"
    if picked.isdigit() and 1 <= int(picked) <= len(recent):
        return recent[int(picked) - 1]
    return next((s for s in recent if s.session_id == picked), None)


class Withdrawn:
    """Approvals asked here and withdrawn because another client answered: the prompt says so, with the decision
    as the updates that follow tell it (``toolStarted``: allowed; a denied ``toolResult``: rejected)."""

    def __init__(self, printer: Printer) -> None:
        self.printer = printer
        self.waiting: set[str] = set()  # tool calls whose prompt was withdrawn, decision not yet seen
        self.decided: dict[str, str] = {}  # tool call -> what was decided, seen before the withdrawal

    def withdrawn(self, params: dict[str, Any]) -> None:
        if self.printer.out.isatty():  # the prompt's line was left open for the answer: close it
            self.printer.out.write("\n")
            self.printer.out.flush()
        call = str(params.get("toolCallId"))
        if call in self.decided:
            self._say(self.decided.pop(call))
        else:
            self.waiting.add(call)

    def update(self, u: dict[str, Any]) -> None:
        kind, call = u.get("kind"), str(u.get("toolCallId"))
        decision = "allowed" if kind == "toolStarted" else "rejected" if u.get("status") == "denied" else None
        if kind == "turnCompleted" and self.waiting:
            self.waiting.clear()
            self.printer.write("— the approval was withdrawn: the turn ended")
        if decision is None or kind not in ("toolStarted", "toolResult"):
            return
        if call in self.waiting:
            self.waiting.discard(call)
            self._say(decision)
        elif kind == "toolStarted" or decision == "rejected":
            self.decided[call] = decision
            if len(self.decided) > 64:
                self.decided.pop(next(iter(self.decided)))

    def _say(self, decision: str) -> None:
        self.printer.write(f"— answered in another client: {decision}")
