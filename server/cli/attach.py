"""The terminal's side of the daemon (B-DAEMON-1, docs/DAEMON.md): ``threadline chat --attach [SESSION]`` shows what
the running turn did, then its live updates, and answers its approvals at a terminal (a waiting one after the
history, withdrawn visibly when another client answers it); a finished session shows its last turn
(``server.cli.attach_view``). Ctrl-C (or ``/detach``) detaches without cancelling; ``/cancel`` cancels the turn;
any other line steers the running turn, or starts a new one when none runs; a turn ends as in a local chat. Piped,
it watches the running turn to its end and answers nothing (another client may). When the daemon goes away it
leaves at once (exit 1), saying how to attach again. ``exec --detach`` is ``server.cli.detach``'s.

Both speak to the daemon through ``threadline connect`` (``DAEMON_ARGS``), which starts it when none runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from server.cli.client import Client, RpcError
from server.cli.printer import Printer

DAEMON_ARGS = [sys.executable, "-m", "server", "connect"]


async def spawn_attached(initialization_options: dict[str, Any] | None = None) -> Client:
    """A client of the per-user daemon (started when none runs), in its own process group so a terminal's
    Ctrl-C reaches only us. The bridge says something on stderr only when it cannot connect: that line is the
    ``ConnectionError``'s message then (a daemon that cannot start, and why)."""
    client, answer = await Client.start(
        args=DAEMON_ARGS,
        new_session=True,
        stderr=asyncio.subprocess.PIPE,
        initialization_options=initialization_options,
    )
    try:
        return await client.initialized(answer)
    except ConnectionError as exc:
        said = b""
        with contextlib.suppress(OSError, TimeoutError):
            assert client.proc.stderr is not None
            said = await asyncio.wait_for(client.proc.stderr.read(), 10)
        await client.close()
        lines = said.decode(errors="replace").strip().splitlines()
        raise ConnectionError(lines[-1].removeprefix("threadline connect: ") if lines else str(exc)) from None


# --- chat --attach -----------------------------------------------------------------------------------------

Ask = Callable[..., Awaitable[dict[str, str]]]


async def chat_attached(args: argparse.Namespace, log: Any, printer: Printer, ask_approval: Ask) -> int:
    """``chat --attach``: ``printer`` and ``ask_approval`` are the chat's own (``server.cli.chat``)."""
    from server.cli.daemon_start import daemon_listening, refuse_bad_config, unreachable

    if not daemon_listening() and refuse_bad_config():
        return 2
    loop = asyncio.get_running_loop()
    detach = loop.create_future()
    loop.add_signal_handler(signal.SIGINT, _settle, detach)  # before anything is shown
    try:
        client = await spawn_attached()
    except (ConnectionError, OSError) as exc:
        print(f"threadline: {unreachable(exc)}", file=sys.stderr)
        return 2
    chat = AttachedChat(client, printer, ask_approval, detach)
    try:
        return await chat.run(args.attach)
    finally:
        printer.end_stream()
        await client.close()


class AttachedChat:
    """One ``chat --attach``: the attach, what it shows first, then lines typed until detach, EOF or the daemon's
    end (``gone``: the bridge ends when the daemon closes the connection)."""

    def __init__(self, client: Client, printer: Printer, ask_approval: Ask, detach: asyncio.Future[None]) -> None:
        from server.cli.attach_view import Withdrawn
        from server.cli.turns import TurnInput

        self.client, self.printer, self.ask_approval, self.detach = client, printer, ask_approval, detach
        self.gone: asyncio.Future[int] = asyncio.ensure_future(client.proc.wait())
        self.idle = asyncio.Event()
        self.shown = asyncio.Event()  # what happened is printed: a waiting question may be asked now
        self.at_terminal = sys.stdin.isatty()
        self.turn_input = TurnInput()
        self.withdrawn = Withdrawn(printer)
        self.sid = ""
        self.early: list[dict[str, Any]] | None = []  # the replay arrives before attachSession's answer

    async def run(self, named: str | None) -> int:
        try:
            return await self._run(named)
        except ConnectionError:
            return self._lost()
        finally:
            self.gone.cancel()

    async def _run(self, named: str | None) -> int:
        from server.cli.attach_view import pick_session, session_info, show_last_turn
        from server.cli.turns import read_line

        async def ask(prompt: str) -> str | None:  # Ctrl-C at the question leaves
            read = asyncio.ensure_future(read_line(prompt))
            either: set[asyncio.Future[Any]] = {read, self.detach}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if read.done():
                return read.result()
            print(file=sys.stdout)  # the question's line was left open for the answer
            return None

        if self.detach.done():  # Ctrl-C while the daemon was starting
            return 0
        if named is None:
            info = await pick_session(self.client, ask)
            if info is None:
                return 0 if self.detach.done() else 2
        else:
            info = await session_info(self.client, named)
        self.sid = info.session_id if info is not None else str(named)
        self.client.on_notification = self._on_update
        self.client.on_withdrawn = lambda request: self.withdrawn.withdrawn(request.get("params") or {})
        self.client.on_request = self._asked if self.at_terminal else _leave_open
        try:
            state = await self._attach()
        except RpcError as exc:
            print(f"threadline: {exc.message}", file=sys.stderr)
            return 2
        self.printer.write(_attached_line(self.sid, state, self.at_terminal))
        replayed, self.early = self.early or [], None
        for p in replayed:
            self._show(p)
        if not state["running"]:
            self.idle.set()
            await show_last_turn(self.client, self.printer, info, self.sid)
        elif state["waitingForApproval"] and not self.at_terminal:
            self.printer.write("waiting for your approval (answer it from a terminal: threadline chat --attach)")
        self.shown.set()
        if not self.at_terminal:
            return await self._watch()
        return await self._read_lines()

    async def _attach(self) -> dict[str, Any]:
        asked = asyncio.ensure_future(self.client.request("attachSession", {"sessionId": self.sid}))
        await asyncio.wait({asked, self.gone}, return_when=asyncio.FIRST_COMPLETED)
        if not asked.done():
            asked.cancel()
            raise ConnectionError("the daemon closed the connection")
        result: dict[str, Any] = asked.result()
        return result

    async def _watch(self) -> int:
        """Piped: the running turn to its end, or until Ctrl-C, or the daemon's end."""
        ended = asyncio.ensure_future(self.idle.wait())
        waiting: set[asyncio.Future[Any]] = {self.detach, ended, self.gone}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        ended.cancel()
        if self.gone.done() and not self.idle.is_set():
            return self._lost()
        return await self._leave()

    async def _read_lines(self) -> int:
        """At a terminal, one reader: a line answers the approval asked, if any, else is a command."""
        from server.cli.turns import read_line

        while not self.detach.done():
            line_read = asyncio.ensure_future(read_line())
            waiting: set[asyncio.Future[Any]] = {self.detach, line_read, self.gone}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if self.gone.done():
                line_read.cancel()
                return self._lost()
            if self.detach.done():
                line_read.cancel()
                break
            line = line_read.result()
            if self.turn_input.take(line):
                continue
            if line is None or line.strip() in ("/detach", "/quit", "/exit"):
                break
            await _typed(self.client, self.sid, line.strip(), self.idle)
        return await self._leave()

    async def _leave(self) -> int:
        if self.gone.done():
            return self._lost() if not self.idle.is_set() else 0
        with contextlib.suppress(RpcError, ConnectionError, TimeoutError):
            await asyncio.wait_for(self.client.request("detachSession", {"sessionId": self.sid}), DETACH_WAIT)
        if not self.idle.is_set():
            self.printer.write(
                f"detached from {self.sid}; it goes on in the daemon (threadline chat --attach {self.sid})"
            )
        return 0

    def _lost(self) -> int:
        self.printer.end_stream()
        again = f"threadline chat --attach {self.sid}" if self.sid else "threadline chat --attach"
        print(
            f"threadline: the daemon went away (its connection closed); what was stored is kept: attach again "
            f"with {again}",
            file=sys.stderr,
        )
        return 1

    async def _asked(self, method: str, params: Any) -> Any:
        await self.shown.wait()  # the history first, the waiting question last
        return await self.ask_approval(self.printer, params, self.turn_input)

    def _on_update(self, method: str, p: Any) -> None:
        if method != "sessionUpdate" or p.get("sessionId") != self.sid:
            return
        if self.early is not None:
            self.early.append(p)
        else:
            self._show(p)

    def _show(self, p: dict[str, Any]) -> None:
        u = p["update"]
        self.printer.update(u, p.get("turnId"))
        self.withdrawn.update(u)
        kind = u["kind"]
        if kind == "turnCompleted":
            self.printer.ended({"stopReason": u.get("stopReason"), "error": u.get("error")})
            self.idle.set()
        elif kind == "turnStarted":
            self.idle.clear()


DETACH_WAIT = 5.0  # seconds for the daemon to acknowledge a detach (it is gone, or the turn goes on anyway)


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


def _attached_line(sid: str, state: dict[str, Any], at_terminal: bool = True) -> str:
    status = "waiting for your approval" if state["waitingForApproval"] else "running" if state["running"] else "idle"
    note = " (older updates are no longer held: readTranscript has them)" if state.get("truncated") else ""
    if status == "idle" and not at_terminal:
        return f"attached to session {sid}: idle{note}"
    if status == "idle":
        return f"attached to session {sid}: idle; a line typed starts a turn, Ctrl-C or /detach leaves{note}"
    return f"attached to session {sid}: {status}; Ctrl-C detaches, /cancel cancels the turn{note}"
