"""``threadline chat [--cwd DIR] [--resume ID | --continue] [--model NAME] [--policy P] [--sandbox MODE] [TASK]``:
a terminal client of the server (docs/CHAT.md).

Shows streamed text, tool calls and their results (folded to a few lines), a context meter after each model call
(B-METER-1: the last request's size, with the share of its input the provider served from its prompt cache when it
says, B-CACHE-5) and compaction notices (R-OBS-1), and asks approvals at the prompt: rendered with a live status
line at a terminal (``server.cli.terminal``), plain text when piped (``server.cli.printer``). With no TASK it
reads tasks line by line until EOF, and the slash commands of ``server.cli.chat_commands`` (``/compact``,
``/rewind``, ``/undo``, ``/model``, ``/sessions``, ``/help``). Approvals of file edits show the change as a diff;
an edit applied without asking (``--policy autoEdit``) prints its diff after the fact. At a terminal, a line typed
while a turn runs steers it (``steerTurn``: the model reads it after the tool running now) and ``/queue TEXT``
runs TEXT as a turn right after it (``submitTurn {queue: true}``); piped input is read as one task after another.
The session flags are ``server.cli.session_flags``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import IO, Any, TextIO

import platformdirs

from protocol.mcp import ListMcpServersResult, McpServerInfo
from protocol.transcript import ReadTranscriptResult
from server.cli.chat_commands import QUIT, slash_command
from server.cli.client import Client, RpcError
from server.cli.flags import add_session_flags
from server.cli.printer import Printer, cached_share, printable, tokens
from server.cli.session_flags import OpenedSession, UsageError, open_session
from server.cli.turns import Quit, TurnInput, read_line, run_steerable, run_turn
from server.cli.words import startup_hint
from server.private_files import open_private

DECISIONS = {"y": "allowOnce", "a": "allowAlways", "n": "reject"}
CHOICES = {"allowOnce": "[y] once", "allowAlways": "[a] always", "reject": "[n] reject"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chat = sub.add_parser("chat", help="run agent turns in a session from the terminal")
    chat.add_argument("task", nargs="?", help="the task; without it, tasks are read line by line until EOF")
    add_session_flags(chat)
    chat.add_argument(
        "--attach",
        nargs="?",
        const="",
        metavar="SESSION",
        help="attach to a session running in the daemon (default: the one waiting or running most recently)",
    )
    chat.set_defaults(run=lambda args: asyncio.run(chat_main(args)))


def server_lines(servers: list[McpServerInfo]) -> list[str]:
    """``threadline chat``'s start: each MCP server with its transport, origin, state and tools."""
    lines = []
    for s in servers:
        tools = f", {len(s.tools)} tools" if s.tools else ""
        reason = f" ({s.reason})" if s.reason else ""
        lines.append(f"mcp {s.name} [{s.transport}, {s.origin}]: {s.state}{tools}{reason}")
    return lines


async def ask_approval(printer: Printer, params: dict[str, Any], turn_input: TurnInput | None = None) -> dict[str, str]:
    """The whole request, nothing cut and nothing raw: what the user approves is exactly what they read."""
    if params.get("diff"):
        printer.asked.add(str(params.get("toolCallId")))
    printer.approval(params)
    if not sys.stdin.isatty():
        printer.write("  stdin is not a terminal, so this is rejected (use --policy to allow without asking)")
        return {"decision": "reject"}
    decision = "reject"
    # Only what the request offers: "always" is left out where no scope could be remembered (the note says so)
    offered = [o for o in params.get("options") or list(CHOICES) if o in CHOICES] or list(CHOICES)
    prompt = f"allow? {', '.join(CHOICES[o] for o in offered)}: "
    try:
        while True:
            answer = await (turn_input.read(prompt) if turn_input else read_line(prompt))
            if answer is None:
                return {"decision": decision}
            chosen = DECISIONS.get(answer.strip().lower()[:1])
            if chosen is not None and chosen in offered:
                decision = chosen
                return {"decision": decision}
    finally:
        printer.answered(params, decision)


def make_printer(out: TextIO) -> Printer:
    """Rendered for a person at a terminal; plain text, no escape codes, when piped (logs and scripts)."""
    if out.isatty() and os.environ.get("TERM") != "dumb":
        from server.cli.terminal import TerminalPrinter  # rich's import is paid only here

        return TerminalPrinter(out)
    return Printer(out)


def open_log() -> tuple[Path, IO[bytes]]:
    """The server's log file for this chat (``$THREADLINE_HOME/logs/chat.log``, private, appended): its log lines
    (warnings included) belong there, not between the conversation's lines."""
    home = Path(os.environ.get("THREADLINE_HOME") or platformdirs.user_data_dir("threadline", appauthor=False))
    path = home.expanduser() / "logs" / "chat.log"
    return path, os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "ab")  # in folders made 0700 (on the way too)


async def chat_main(args: argparse.Namespace) -> int:
    log_path, log = open_log()
    try:
        if args.attach is not None:
            from server.cli.attach import chat_attached

            args.attach = args.attach or None
            return await chat_attached(args, log, make_printer(sys.stdout), ask_approval)
        if args.task is not None and not args.task.strip():
            print("threadline: the task is empty (leave it out to type tasks at the prompt)", file=sys.stderr)
            return 2
        return await _chat(args, log_path, log)
    except Quit:  # Ctrl-C twice: the turn was cancelled and the chat closed cleanly
        return 130
    finally:
        log.close()


async def _chat(args: argparse.Namespace, log_path: Path, log: IO[bytes]) -> int:
    # rich's import (at a terminal) overlaps the server's start rather than delaying it
    making = asyncio.ensure_future(asyncio.to_thread(make_printer, sys.stdout))
    try:
        # the server in its own process group: a terminal's Ctrl-C reaches only the chat, which cancels the turn
        client = await Client.spawn(new_session=True, stderr=log)
    except (ConnectionError, OSError, RpcError) as exc:
        from server.cli.daemon_start import config_problem

        problem = config_problem()  # the usual cause, said in one line
        print(f"threadline: {problem or startup_hint(exc, log_path)}", file=sys.stderr)
        return 2 if problem else 1
    finally:
        printer = await making
    opened: OpenedSession | None = None
    try:
        try:
            opened = await open_session(client, args)  # no title: the server names it after its first prompt
        except UsageError as exc:
            print(f"threadline: {exc}", file=sys.stderr)
            return 2
        except RpcError as exc:
            print(f"threadline: {session_error(args, exc)}", file=sys.stderr)
            return 2
        sid = opened.id
        await introduce(client, printer, opened, log_path)
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
            if task.strip() in QUIT:
                break
            if await slash_command(client, printer, sid, task):
                continue
            if task.strip() and sys.stdin.isatty():
                code, ahead = await run_steerable(client, printer, sid, task, turn_input)
                if ahead is not None and not ahead.done():  # the read goes on: show that it waits for the next task
                    sys.stdout.write("> ")
                    sys.stdout.flush()
                status = max(status, code)
            elif task.strip():
                status = max(status, await run_turn(client, printer, sid, task))
        return status
    finally:
        printer.end_stream()
        if opened is not None and opened.resumed is None:
            await discard_if_empty(client, opened.id)
        await client.close()


async def discard_if_empty(client: Client, sid: str) -> None:
    """A session this chat created and nothing was said in (no task typed, stdin empty, or the first turn failed
    before storing anything, as with no provider) is deleted: ``sessions`` lists only conversations."""
    from server.cli.session_flags import find_session

    try:
        info = await find_session(client, sid)
        if info is not None and info.message_count == 0:
            await client.request("deleteSession", {"sessionId": sid})
    except (RpcError, ConnectionError):
        pass  # the server is gone or refused: the empty session stays, as before


def session_error(args: argparse.Namespace, exc: RpcError) -> str:
    """The server refused the session flags: what it said, and what to do."""
    code = (exc.data or {}).get("code") if isinstance(exc.data, dict) else None
    if code == "SessionNotFound":
        return f"{exc.message}: `threadline sessions` (or /sessions in a chat) lists them"
    if code == "ModelNotFound":
        return f"{exc.message} (--model takes a [models.NAME] of config.toml; /model in a chat lists them)"
    if args.sandbox and "sandbox" in exc.message.lower():
        return f"the server refused --sandbox {args.sandbox}: {exc.message}"
    return exc.message


RECALL_WIDTH = 100


def sandbox_words(sandbox: Any) -> str:
    """The session's sandbox as createSession/updateSession state it (its ``SandboxStatus``)."""
    if not isinstance(sandbox, dict):
        return f"sandbox {sandbox}"
    mode = sandbox.get("mode")
    if mode != "off" and sandbox.get("enforced") is False:
        return f"sandbox {mode} is NOT enforced here ({sandbox.get('reason')}): every command asks before it runs"
    net = "" if mode == "off" else ", network on" if sandbox.get("network") else ", no network"
    return f"sandbox {mode}{net}"


async def last_exchange(client: Client, sid: str, count: int) -> list[str]:
    """Where a resumed session stopped: its last request and answer, a line each."""
    params = {"sessionId": sid, "afterSeq": max(0, count - 8), "limit": 8}
    items = (await client.call("readTranscript", params, ReadTranscriptResult)).items
    lines = []
    for role, who in (("user", "you"), ("assistant", "agent")):
        said = next((i.content for i in reversed(items) if i.role == role and i.content), None)
        if said:
            flat = " ".join(printable(said).split())
            cut = flat if len(flat) <= RECALL_WIDTH else flat[: RECALL_WIDTH - 1] + "…"
            lines.append(f"  last {who}: {cut}")
    return lines


async def introduce(client: Client, printer: Printer, opened: OpenedSession, log_path: Path) -> None:
    """The chat's first lines: which session, in which folder, resumed or new, and its MCP servers."""
    if opened.resumed is not None:
        info = opened.resumed
        printer.write(f"resumed session {info.session_id} in {info.cwd}: {info.title} ({info.message_count} messages)")
        for line in await last_exchange(client, info.session_id, info.message_count):
            printer.write(line)
    else:
        printer.write(f"session {opened.id} in {opened.cwd} (server log: {log_path})")
    settings = opened.settings
    if settings.get("model"):
        printer.write(f"model {settings['model']}")
    if settings.get("sandbox"):
        printer.write(sandbox_words(settings["sandbox"]))
    servers = (await client.call("listMcpServers", {"sessionId": opened.id}, ListMcpServersResult)).servers
    for line in server_lines(servers):
        printer.write(line)


__all__ = ["Printer", "add_parser", "ask_approval", "cached_share", "chat_main", "server_lines", "tokens"]
