"""Running a turn from ``threadline chat``'s terminal: Ctrl-C cancels it, and at a terminal each line typed while
it runs answers the approval being asked, steers the turn (``steerTurn``) or, as ``/queue TEXT``, queues TEXT as a
turn after it (``submitTurn {queue: true}``). One reader takes every line: two readers of stdin would each
swallow lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from typing import Any, Protocol

from server.cli.client import Client, RpcError


class Quit(Exception):
    """Ctrl-C pressed again while the turn it cancels is still ending: the user wants out."""


class Lines(Protocol):
    """Where a turn's lines go: ``server.cli.chat.Printer``."""

    def write(self, line: str) -> None: ...

    def ended(self, result: dict[str, Any]) -> None: ...

    def typed(self, line: str) -> None: ...


async def read_line(prompt: str | None = None) -> str | None:
    """A line from stdin without blocking the event loop; None at EOF."""
    if prompt and sys.stdin.isatty():
        sys.stdout.write(prompt)
        sys.stdout.flush()
    line = await _readline()
    return line.rstrip("\n") if line else None


def _readline() -> asyncio.Future[str]:
    """stdin's next line from a daemon thread: Ctrl-C at the prompt must not wait for the read to finish, as a
    thread of the loop's default executor would at shutdown."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        try:
            line = sys.stdin.readline()
        except (OSError, ValueError):
            line = ""
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody is waiting any more
            loop.call_soon_threadsafe(lambda: None if fut.done() else fut.set_result(line))

    threading.Thread(target=read, name="stdin", daemon=True).start()
    return fut


class TurnInput:
    """While a turn runs in the interactive chat, one reader takes every line: it answers the approval being
    asked, if any, and otherwise steers the turn (two readers of stdin would each swallow lines)."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[str | None] | None = None

    async def read(self, prompt: str) -> str | None:
        if sys.stdin.isatty():
            sys.stdout.write(prompt)
            sys.stdout.flush()
        self.answer = asyncio.get_running_loop().create_future()
        try:
            return await self.answer
        finally:
            self.answer = None

    def take(self, line: str | None) -> bool:
        """Give ``line`` to the approval prompt waiting for it; False when none is."""
        if self.answer is None or self.answer.done():
            return False
        self.answer.set_result(line)
        return True


async def run_steerable(
    client: Client, printer: Lines, sid: str, text: str, turn_input: TurnInput
) -> tuple[int, asyncio.Future[str | None] | None]:
    """A turn during which each line typed answers an approval, steers the turn, or (``/queue TEXT``) queues a
    turn after it. Returns the exit status and the read still under way when the turns ended."""
    turns = [asyncio.ensure_future(run_turn(client, printer, sid, text))]
    reader: asyncio.Future[str | None] | None = asyncio.ensure_future(read_line())
    while not all(t.done() for t in turns):
        assert reader is not None
        waiting: set[asyncio.Future[Any]] = {reader, *turns}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if any(t.done() and not t.cancelled() and isinstance(t.exception(), Quit) for t in turns):
            raise Quit
        if not reader.done():
            continue
        line = reader.result()
        if line is None:  # end of input (a terminal's Ctrl-D is read once): the turns still finish, then the chat
            turn_input.take(None)
            await asyncio.gather(*turns)
            break
        reader = asyncio.ensure_future(read_line())
        if turn_input.take(line) or not line.strip():
            continue
        printer.typed(line)
        if line.startswith("/") and not line.startswith("/queue "):
            printer.write(f"— {line.split()[0]} waits for the turn to end; type it again then")
            continue
        if line.startswith("/queue "):
            turns.append(asyncio.ensure_future(run_turn(client, printer, sid, line[len("/queue ") :], queue=True)))
            continue
        try:
            await client.request("steerTurn", {"sessionId": sid, "text": line})
            printer.write("— steered into the running turn")
        except RpcError as exc:
            if (exc.data or {}).get("code") != "TurnNotRunning":
                raise
            turns.append(asyncio.ensure_future(run_turn(client, printer, sid, line, queue=True)))  # it just ended
    return max(t.result() for t in turns), reader


async def run_turn(client: Client, printer: Lines, sid: str, text: str, queue: bool = False) -> int:
    """One turn; Ctrl-C cancels it (the turn still ends normally, as ``cancelled``); Ctrl-C again before it has
    ended leaves the chat (``Quit``). The ``cancelTurn`` request is always awaited, never left to fail unseen."""
    loop = asyncio.get_running_loop()
    cancelling: list[asyncio.Task[None]] = []
    _, submitted = client.start_request(
        "submitTurn", {"sessionId": sid, "text": text, **({"queue": True} if queue else {})}
    )
    quitting = False

    def interrupt() -> None:
        nonlocal quitting
        if cancelling:
            quitting = True
            submitted.cancel()
            return
        printer.write("— cancelling the turn (Ctrl-C again to quit)")
        cancelling.append(asyncio.ensure_future(_cancel_turn(client, sid)))

    with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        loop.add_signal_handler(signal.SIGINT, interrupt)
    try:
        result = await submitted
    except asyncio.CancelledError:
        if not quitting:
            raise
        raise Quit from None
    except RpcError as exc:  # a mistyped slash command: say which exist, the chat goes on
        if (exc.data or {}).get("code") != "UnknownCommand":
            raise
        from server.cli.chat_commands import unknown_command

        known = (exc.data or {}).get("commands") or []
        printer.write(f"— {unknown_command(text, [str(k) for k in known])}")
        return 0
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await asyncio.gather(*cancelling)
    if result.get("command"):  # a built-in (/context, /plan) the server answered without a turn
        printer.write(result["command"]["output"])
        return 0
    printer.ended(result)
    return 1 if result["stopReason"] == "error" else 0


async def _cancel_turn(client: Client, sid: str) -> None:
    with contextlib.suppress(RpcError, ConnectionError, TimeoutError):  # the turn ended anyway, or the server is gone
        await asyncio.wait_for(client.request("cancelTurn", {"sessionId": sid}), 10)
