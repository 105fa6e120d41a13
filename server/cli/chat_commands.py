"""``threadline chat``'s slash commands, typed at the prompt between turns: ``/compact [focus]``, ``/rewind
[N [dry] [force]]``, ``/undo``, ``/model [NAME]``, ``/sessions``, ``/processes``, ``/stop ID`` and ``/help``. Each is one or two requests to the
server; a line that is not one of them is a task for the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.artifacts import ListCheckpointsResult, RewindFilesResult
from protocol.processes import ListProcessesResult, StopProcessResult
from protocol.sessions import ListModelsResult, ListSessionsResult, UpdateSessionResult
from protocol.turns import CompactSessionResult
from server.cli.client import Client, RpcError

if TYPE_CHECKING:
    from server.cli.printer import Printer

HELP = """\
  /compact [focus]        compact the conversation now, keeping the focus verbatim in the summary
  /rewind                 list the turns and the files each changed
  /rewind N [dry] [force] put the files changed by turn N and later back as they were before it
  /undo                   put back the file the last applied edit changed
  /model                  list the configured models; /model NAME switches this session to one
  /sessions               the sessions in this folder (threadline chat --resume ID picks one up)
  /processes              the background processes the model started, running or ended
  /stop ID                stop a background process (TERM, then KILL)
  /queue TEXT             while a turn runs: run TEXT as a turn right after it
  /context                what fills the context window, part by part, and the compactions so far
  /plan [TASK]            switch this session to plan mode (read and plan only), then run TASK
  /NAME [ARGS]            a command of .threadline/commands or $THREADLINE_HOME/commands (the server expands it)
  /help                   this list
  /quit                   leave the chat (as Ctrl-D does; /exit too)
  While a turn runs, a line you type steers it (the model reads it after the tool running now).
  Ctrl-C cancels the turn; Ctrl-D (end of input) leaves the chat."""
SESSIONS_SHOWN = 10
QUIT = ("/quit", "/exit")


def chat_commands() -> list[str]:
    """Every command ``/help`` lists, by name (``/NAME``, the project's own, excepted)."""
    names = [row.split()[0] for row in HELP.splitlines() if row.strip().startswith("/")]
    return list(dict.fromkeys(n for n in names if n != "/NAME"))


def unknown_command(line: str, server_known: list[str]) -> str:
    """A mistyped command: all there are, the chat's and the server's (its built-ins and the project's)."""
    known = dict.fromkeys([*chat_commands(), *(f"/{k}" for k in server_known)])
    return f"unknown command {line.split()[0]}; commands: {', '.join(known)}"


async def slash_command(client: Client, printer: Printer, sid: str, line: str) -> bool:
    """Run ``line`` if it is one of the chat's commands; False when it is a task for the model."""
    word, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if word == "/compact":
        await compact(client, printer, sid, rest or None)
    elif word == "/rewind":
        await rewind(client, printer, sid, rest.split())
    elif word == "/undo" and not rest:
        await undo(client, printer, sid)
    elif word == "/model":
        await model(client, printer, sid, rest or None)
    elif word == "/sessions" and not rest:
        await sessions(client, printer, sid)
    elif word == "/processes" and not rest:
        await processes(client, printer, sid)
    elif word == "/stop" and rest and " " not in rest:
        await stop(client, printer, sid, rest)
    elif word == "/help" and not rest:
        for row in HELP.splitlines():
            printer.write(row)
    else:
        return False
    return True


async def processes(client: Client, printer: Printer, sid: str) -> None:
    """``/processes``: the session's background processes (``listProcesses``)."""
    found = (await client.call("listProcesses", {"sessionId": sid}, ListProcessesResult)).processes
    for p in found:
        state = p.status if p.exit_code is None else f"{p.status} ({p.exit_code})"
        printer.write(f"  {p.process_id}  pid {p.pid}  {state:<14} {p.command[:80]}")
    running = sum(1 for p in found if p.status == "running")
    printer.write(f"— {running} running" + (": /stop ID stops one" if running else ""))


async def stop(client: Client, printer: Printer, sid: str, process_id: str) -> None:
    """``/stop ID``: end a background process (``stopProcess``)."""
    try:
        done = await client.call("stopProcess", {"sessionId": sid, "processId": process_id}, StopProcessResult)
    except RpcError as exc:
        printer.write(f"— {exc.message}")
        return
    printer.write(f"— {done.process.process_id} {done.process.status} (exit code {done.process.exit_code})")


async def model(client: Client, printer: Printer, sid: str, name: str | None) -> None:
    """``/model``: the configured models, the session's marked; ``/model NAME``: switch (``updateSession``)."""
    models = await client.call("listModels", {}, ListModelsResult)
    if name is None:
        current = await current_model(client, sid)
        if not models.models:
            printer.write("— no [models.NAME] in config.toml: this session uses the [provider] model")
        for m in models.models:
            mark = "*" if m.name == current else " "
            printer.write(f"  {mark} {m.name}  {m.model} ({m.provider}, {m.context_window_tokens:,} tokens)")
        if models.default is not None:
            mark = "*" if current is None else " "
            printer.write(f"  {mark} (default)  {models.default.model} ({models.default.provider})")
        printer.write("— /model NAME switches this session from its next model call")
        return
    try:
        now = await client.call("updateSession", {"sessionId": sid, "model": name}, UpdateSessionResult)
    except RpcError as exc:
        names = ", ".join(str(m.name) for m in models.models) or "none configured"
        printer.write(f"— {exc.message} (configured: {names})")
        return
    chosen = next((m for m in models.models if m.name == now.model), None)
    detail = f": {chosen.model} ({chosen.provider})" if chosen else ""
    printer.write(f"— model {now.model}{detail}, a {now.context_window_tokens:,}-token window, from the next call")


async def current_model(client: Client, sid: str) -> str | None:
    found = (await client.call("listSessions", {}, ListSessionsResult)).sessions
    return next((s.model for s in found if s.session_id == sid), None)


async def sessions(client: Client, printer: Printer, sid: str) -> None:
    """``/sessions``: the most recent sessions of this one's folder."""
    found = (await client.call("listSessions", {}, ListSessionsResult)).sessions
    here = next((s.cwd for s in found if s.session_id == sid), None)
    mine = [s for s in found if s.cwd == here][:SESSIONS_SHOWN]
    for s in mine:
        mark = "*" if s.session_id == sid else " "
        printer.write(
            f"  {mark} {s.session_id}  {s.updated_at[:16].replace('T', ' ')}  {s.message_count:>4} msgs  {s.title}"
        )
    printer.write(f"— in {here}: threadline chat --resume ID picks one up, --continue the latest")


async def compact(client: Client, printer: Printer, sid: str, focus: str | None) -> None:
    """``/compact [focus]``: the next request starts from a fresh summary that keeps ``focus`` verbatim."""
    params: dict[str, Any] = {"sessionId": sid, **({"focus": focus} if focus else {})}
    printer.busy("compacting")
    try:
        result = await client.call("compactSession", params, CompactSessionResult)
    finally:
        printer.busy(None)
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
