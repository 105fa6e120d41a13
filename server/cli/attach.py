"""The terminal's side of the daemon (B-DAEMON-1, docs/DAEMON.md): ``threadline exec --detach PROMPT`` starts a turn
in the daemon and leaves at once; ``threadline chat --attach [SESSION]`` shows what the running turn did, then its
live updates, and answers its approvals at a terminal. Ctrl-C (or ``/detach``) detaches without cancelling;
``/cancel`` cancels the turn; any other line steers the running turn, or starts a new one when none runs. Piped,
it watches the running turn to its end and answers nothing (another client may).

Both speak to the daemon through ``threadline connect`` (``DAEMON_ARGS``), which starts it when none runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from protocol.messages import ListSessionsResult, SessionInfo
from server.cli.client import Client, RpcError
from server.cli.printer import Printer
from server.cli.session_flags import UsageError, worktree_params

DAEMON_ARGS = [sys.executable, "-m", "server", "connect"]
START_TIMEOUT = 60.0  # seconds for the turn to start in the daemon


async def spawn_attached(stderr: Any = None) -> Client:
    """A client of the per-user daemon (started when none runs), in its own process group so a terminal's
    Ctrl-C reaches only us."""
    return await Client.spawn(args=DAEMON_ARGS, new_session=True, stderr=stderr)


# --- exec --detach -----------------------------------------------------------------------------------------


async def exec_detached(args: argparse.Namespace) -> int:
    """Create (or resume) the session, submit the turn, wait only until the daemon has started it, print the
    session id. The turn goes on in the daemon; its approvals wait for a client to attach."""
    task = sys.stdin.read() if args.task == "-" else args.task
    client = await spawn_attached()
    try:
        sid = await _session_for(client, args, task)
        started = asyncio.get_running_loop().create_future()

        def seen(method: str, params: Any) -> None:
            ours = method == "sessionUpdate" and params.get("sessionId") == sid and not started.done()
            if ours and params["update"]["kind"] in ("turnStarted", "turnCompleted"):
                started.set_result(None)

        client.on_notification = seen
        _, turn = client.start_request("submitTurn", {"sessionId": sid, "text": task, "queue": True})
        # The answer comes when the turn ends, long after this exits: closing fails it, and that is expected
        turn.add_done_callback(lambda f: f.cancelled() or f.exception())
        done, _ = await asyncio.wait({started, turn}, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        if turn in done and turn.exception() is not None:
            raise turn.exception()  # type: ignore[misc]
        if not done:
            print(f"threadline exec: the daemon did not start the turn within {START_TIMEOUT:.0f} s", file=sys.stderr)
            return 1
        print(sid, flush=True)
        return 0
    finally:
        await client.close()


async def _session_for(client: Client, args: argparse.Namespace, task: str) -> str:
    changes = {
        k: v for k, v in (("approvalPolicy", args.policy), ("model", args.model), ("sandbox", args.sandbox)) if v
    }
    if args.resume or args.continue_:
        sid = args.resume or await _latest(client, str(Path(args.cwd).resolve()))
        if changes:
            await client.request("updateSession", {"sessionId": sid, **changes})
        return str(sid)
    title = " ".join(task.split())[:60] or "detached task"
    cwd = str(Path(args.cwd).expanduser().resolve())
    try:
        worktree = worktree_params(args)
    except UsageError as exc:
        raise RpcError(-32602, str(exc)) from None
    params = {"cwd": cwd, "title": title, **changes, **worktree}
    return str((await client.request("createSession", params))["sessionId"])


async def _latest(client: Client, cwd: str) -> str:
    sessions = (await client.call("listSessions", {"cwd": cwd, "limit": 1}, ListSessionsResult)).sessions
    if not sessions:
        raise RpcError(-32602, f"no session in {cwd} to continue")
    return sessions[0].session_id


# --- chat --attach -----------------------------------------------------------------------------------------


async def pick_running(client: Client) -> SessionInfo | None:
    """The session to attach to when none is named: the most recent one waiting for an approval, else running."""
    sessions = (await client.call("listSessions", {"limit": 200}, ListSessionsResult)).sessions
    waiting = [s for s in sessions if s.waiting_for_approval]
    running = [s for s in sessions if s.running]
    chosen = waiting or running
    return chosen[0] if chosen else None


Ask = Callable[..., Awaitable[dict[str, str]]]


async def chat_attached(args: argparse.Namespace, log: Any, printer: Printer, ask_approval: Ask) -> int:
    """``chat --attach``: ``printer`` and ``ask_approval`` are the chat's own (``server.cli.chat``)."""
    from server.cli.turns import TurnInput, read_line

    detach = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, _settle, detach)  # before anything is shown
    client = await spawn_attached(stderr=log)
    try:
        sid = args.attach
        if sid is None:
            info = await pick_running(client)
            if info is None:
                print(
                    "threadline: no session is running in the daemon; name one: chat --attach SESSION", file=sys.stderr
                )
                return 2
            sid = info.session_id
        idle = asyncio.Event()
        at_terminal = sys.stdin.isatty()
        turn_input = TurnInput()

        early: list[dict[str, Any]] | None = []  # the replay arrives before attachSession's answer: after its line

        def on_update(method: str, p: Any) -> None:
            if method != "sessionUpdate" or p.get("sessionId") != sid:
                return
            if early is not None:
                early.append(p)
            else:
                printer.update(p["update"], p.get("turnId"))
            kind = p["update"]["kind"]
            if kind == "turnCompleted":
                idle.set()
            elif kind == "turnStarted":
                idle.clear()

        client.on_notification = on_update
        if at_terminal:
            client.on_request = lambda method, p: ask_approval(printer, p, turn_input)
        else:  # nobody here to answer: the question stays open for another client
            client.on_request = _leave_open
        try:
            state = await client.request("attachSession", {"sessionId": sid})
        except RpcError as exc:
            print(f"threadline: {exc.message}", file=sys.stderr)
            return 2
        printer.write(_attached_line(sid, state))
        replayed, early = early or [], None
        for p in replayed:
            printer.update(p["update"], p.get("turnId"))
        if not state["running"]:
            idle.set()
        if not at_terminal:  # watch the running turn to its end, or until Ctrl-C
            ended = asyncio.ensure_future(idle.wait())
            await asyncio.wait({detach, ended}, return_when=asyncio.FIRST_COMPLETED)
            ended.cancel()
        while (
            at_terminal and not detach.done()
        ):  # one reader: a line answers the approval asked, if any, else is a command
            line_read = asyncio.ensure_future(read_line())
            await asyncio.wait({detach, line_read}, return_when=asyncio.FIRST_COMPLETED)
            if detach.done():
                line_read.cancel()
                break
            line = line_read.result()
            if turn_input.take(line):
                continue
            if line is None or line.strip() == "/detach":
                break
            await _typed(client, sid, line.strip(), idle)
        with contextlib.suppress(RpcError, ConnectionError):
            await client.request("detachSession", {"sessionId": sid})
        if not idle.is_set():
            printer.write(f"detached from {sid}; it goes on in the daemon (threadline chat --attach {sid})")
        return 0
    finally:
        printer.end_stream()
        await client.close()


async def _leave_open(method: str, params: Any) -> Any:
    return await asyncio.get_running_loop().create_future()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _typed(client: Client, sid: str, line: str, idle: asyncio.Event) -> None:
    if not line:
        return
    try:
        if line == "/cancel":
            await client.request("cancelTurn", {"sessionId": sid})
        elif idle.is_set():
            idle.clear()
            _, turn = client.start_request("submitTurn", {"sessionId": sid, "text": line})
            turn.add_done_callback(lambda f: f.exception())  # its updates tell the story; nothing to wait for
        else:
            await client.request("steerTurn", {"sessionId": sid, "text": line})
    except RpcError as exc:
        print(f"threadline: {exc.message}", file=sys.stderr)


def _attached_line(sid: str, state: dict[str, Any]) -> str:
    status = "waiting for an approval" if state["waitingForApproval"] else "running" if state["running"] else "idle"
    note = " (older updates are no longer held: readTranscript has them)" if state.get("truncated") else ""
    return f"attached to session {sid}: {status}; Ctrl-C detaches, /cancel cancels the turn{note}"
