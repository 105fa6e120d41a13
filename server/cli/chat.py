"""``threadline chat [--cwd DIR] [--policy ask|autoEdit|auto] [TASK]``: a terminal client of the server.

Prints streamed text, tool calls and their results (folded to a few lines), a context meter after each model call
(B-METER-1: the last request's size, with the share of its input the provider served from its prompt cache when it
says, B-CACHE-5) and compaction notices (R-OBS-1), and asks approvals at the prompt. With no
TASK it reads tasks line by line until EOF; ``/compact [focus]`` compacts the session now (``compactSession``),
``--sandbox MODE`` sets how its commands are confined (the line after the session's id says the mode, and whether it
is enforced); an approval for a command that would run outside the sandbox says so first. ``/rewind`` lists the turns and ``/rewind N [dry] [force]`` puts back the files they changed (``rewindFiles``).
Approvals of file edits show the change as a diff; an edit applied without asking (``--policy autoEdit``) prints
its diff after the fact, and ``/undo`` rewinds the last applied edit (``rewindFiles`` with its ``toolCallId``).
At a terminal, a line typed while a turn runs steers it (``steerTurn``: the model reads it after the tool running
now) and ``/queue TEXT`` runs TEXT as a turn right after it (``submitTurn {queue: true}``); piped input is read as
one task after another.
Like every other command it is a JSON-RPC client of a server it starts.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import sys
from pathlib import Path
from typing import Any, TextIO

from protocol.artifacts import ListCheckpointsResult, RewindFilesResult
from protocol.mcp import ListMcpServersResult, McpServerInfo
from protocol.sessions import CreateSessionResult, SandboxStatus
from protocol.turns import CompactSessionResult
from server.cli.client import Client
from server.cli.turns import TurnInput, read_line, run_steerable, run_turn

RESULT_LINES = 4
DIFF_LINES = 40  # an applied edit's diff, printed after the fact, is cut after this many lines
DECISIONS = {"y": "allowOnce", "a": "allowAlways", "n": "reject"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chat = sub.add_parser("chat", help="run agent turns in a session from the terminal")
    chat.add_argument("task", nargs="?", help="the task; without it, tasks are read line by line until EOF")
    chat.add_argument("--cwd", default=".", help="the session folder (default: the current folder)")
    chat.add_argument("--policy", choices=("ask", "autoEdit", "auto"), help="approval policy for this session")
    chat.add_argument(
        "--sandbox",
        choices=("workspace-write", "read-only", "off"),
        help="how commands are confined (default: the configured mode; docs/SANDBOX.md)",
    )
    chat.set_defaults(run=lambda args: asyncio.run(chat_main(args)))


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
            share, cost = cached_share(u), money(u)
            self.write(
                f"context {tokens(u.get('contextTokens'))}/{tokens(u.get('contextWindowTokens'))} tokens"
                + (f" · {share}" if share else "")
                + (f" · {cost}" if cost else "")
            )
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


def server_lines(servers: list[McpServerInfo]) -> list[str]:
    """``threadline chat``'s start: each MCP server with its transport, origin, state and tools."""
    lines = []
    for s in servers:
        tools = f", {len(s.tools)} tools" if s.tools else ""
        reason = f" ({s.reason})" if s.reason else ""
        lines.append(f"mcp {s.name} [{s.transport}, {s.origin}]: {s.state}{tools}{reason}")
    return lines


SANDBOX_MODES = {
    "workspace-write": "commands write only in this folder (not .git/) and $TMPDIR",
    "read-only": "commands write only in $TMPDIR",
    "off": "commands run with all your rights",
}


def sandbox_line(status: SandboxStatus | None, policy: str | None) -> str:
    """The session's sandbox beside its policy (B-SBX-1/2), in words: what commands may do, and who is asked."""
    policy = policy or "the default policy"
    if status is None:
        return f"policy {policy}; the server reported no sandbox"
    mode = status.mode
    if mode != "off" and not status.enforced:
        return (
            f"policy {policy}; sandbox {mode} is NOT enforced here ({status.reason}): every command asks before it runs"
        )
    net = "" if mode == "off" else ", network on" if status.network else ", no network"
    asks = " (confined commands run without asking)" if policy == "autoEdit" and mode != "off" else ""
    return f"policy {policy}{asks}; sandbox {mode}: {SANDBOX_MODES.get(mode, mode)}{net}"


def printable(text: str) -> str:
    """``text`` with terminal control characters made visible (``\\x1b``), so an escape sequence in a command
    cannot rewrite the prompt the user is answering."""
    return "".join(
        c if c == "\n" or c == "\t" or (c.isprintable()) else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
        for c in text
    )


async def ask_approval(printer: Printer, params: dict[str, Any], turn_input: TurnInput | None = None) -> dict[str, str]:
    """The whole request, nothing cut and nothing raw: what the user approves is exactly what they read."""
    if params.get("diff"):
        printer.asked.add(str(params.get("toolCallId")))
    if params.get("outsideSandbox"):  # B-SBX-3: said before anything else
        printer.write("!! this command would run OUTSIDE the sandbox, with all your rights")
    printer.write(f"approval needed: {printable(str(params.get('title') or params.get('tool')))}")
    for row in printable(str(params.get("detail") or "")).splitlines() or [""]:
        printer.write(f"  | {row}")
    if not sys.stdin.isatty():
        printer.write("  stdin is not a terminal, so this is rejected (use --policy to allow without asking)")
        return {"decision": "reject"}
    while True:
        prompt = "allow? [y] once, [a] always, [n] reject: "
        answer = await (turn_input.read(prompt) if turn_input else read_line(prompt))
        if answer is None:
            return {"decision": "reject"}
        decision = DECISIONS.get(answer.strip().lower()[:1])
        if decision:
            return {"decision": decision}


async def chat_main(args: argparse.Namespace) -> int:
    cwd = Path(args.cwd).expanduser().resolve()
    printer = Printer(sys.stdout)
    client = await Client.spawn()
    try:
        params: dict[str, Any] = {"cwd": str(cwd), "title": (args.task or "chat")[:80]}
        if args.policy:
            params["approvalPolicy"] = args.policy
        if args.sandbox:
            params["sandbox"] = args.sandbox
        created = await client.call("createSession", params, CreateSessionResult)
        sid = created.session_id
        printer.write(f"session {sid} in {cwd}")
        printer.write(sandbox_line(created.sandbox, args.policy))
        servers = (await client.call("listMcpServers", {"sessionId": sid}, ListMcpServersResult)).servers
        for line in server_lines(servers):
            printer.write(line)
        client.on_notification = lambda method, p: (
            printer.update(p["update"], p.get("turnId"))
            if method == "sessionUpdate" and p.get("sessionId") == sid
            else None
        )
        if args.task:
            client.on_request = lambda method, p: ask_approval(printer, p)
            return await run_turn(client, printer, sid, args.task)
        turn_input = TurnInput()
        client.on_request = lambda method, p: ask_approval(printer, p, turn_input)
        status, ahead = 0, None  # ahead: a line already being read when the last turn ended
        while (task := await (ahead or read_line("> "))) is not None:
            ahead = None
            if task.strip() == "/compact" or task.startswith("/compact "):
                await compact(client, printer, sid, task[len("/compact") :].strip() or None)
            elif task.strip() == "/rewind" or task.startswith("/rewind "):
                await rewind(client, printer, sid, task.split()[1:])
            elif task.strip() == "/undo":
                await undo(client, printer, sid)
            elif task.strip() and sys.stdin.isatty():
                code, ahead = await run_steerable(client, printer, sid, task, turn_input)
                status = max(status, code)
            elif task.strip():
                status = max(status, await run_turn(client, printer, sid, task))
        return status
    finally:
        printer.end_stream()
        await client.close()


async def compact(client: Client, printer: Printer, sid: str, focus: str | None) -> None:
    """``/compact [focus]``: the next request starts from a fresh summary that keeps ``focus`` verbatim."""
    params: dict[str, Any] = {"sessionId": sid, **({"focus": focus} if focus else {})}
    result = await client.call("compactSession", params, CompactSessionResult)
    if not result.compacted:
        printer.write("— nothing to compact yet: the whole conversation is the recent tail")
    # A compaction is announced as a contextCompacted update, which the printer shows.


async def rewind(client: Client, printer: Printer, sid: str, words: list[str]) -> None:
    """``/rewind``: list the turns and the files each changed; ``/rewind N [dry] [force]``: put the files changed
    by turn N and later ones back as they were before it (``dry``: only say what would happen)."""
    turns = (await client.call("listCheckpoints", {"sessionId": sid}, ListCheckpointsResult)).turns
    numbers = [w for w in words if w.isdigit()]
    if not numbers:
        for i, t in enumerate(turns, 1):
            files = ", ".join(
                ("+" if f.change == "created" else "~") + f.path + ("" if f.restorable else " (not restorable)")
                for f in t.files
            )
            printer.write(f"  {i}. {t.created_at[:19].replace('T', ' ')}  {files or 'no file changes'}")
        printer.write("— /rewind N [dry] [force]: files back to before turn N (run_command changes cannot be rewound)")
        return
    n = int(numbers[0])
    if not 1 <= n <= len(turns):
        printer.write(f"— no turn {n}; /rewind lists them")
        return
    params = {"sessionId": sid, "toTurnId": turns[n - 1].turn_id, "dryRun": "dry" in words, "force": "force" in words}
    result = await client.call("rewindFiles", params, RewindFilesResult)
    rewound(printer, result)
    printer.write(f"— {'dry run: nothing changed. ' if result.dry_run else ''}{result.note}")


def rewound(printer: Printer, result: RewindFilesResult) -> None:
    for f in result.files:
        what = f.status if f.status != "restored" else (f.change or "restored")
        printer.write(f"  {f.path}: {what}" + (f" ({f.detail})" if f.detail else ""))


async def undo(client: Client, printer: Printer, sid: str) -> None:
    """``/undo``: put back the file the last applied edit changed (and any later edits), as before that edit."""
    if printer.last_edit is None:
        printer.write("— no edit to undo in this chat yet (/rewind lists the turns)")
        return
    turn_id, call_id, path = printer.last_edit
    params = {"sessionId": sid, "toTurnId": turn_id, "toolCallId": call_id}
    result = await client.call("rewindFiles", params, RewindFilesResult)
    rewound(printer, result)
    printer.write(f"— undid the edit of {path}. {result.note}")
    printer.last_edit = None
