"""``threadline exec TASK``: one unattended turn for scripts and CI, with machine-readable output.

It runs the server in its own process (``server.cli.in_process``: the same method table, settings and logs as
``threadline serve``, without a second interpreter or pygls) and speaks to it as ``chat`` speaks to its server,
telling it the run is unattended (``initializationOptions.unattended``): a call that would ask is refused at once and the model reads
why, so the run never hangs on an approval. Exit status: 0 the turn ended normally; 1 it failed (provider or model
error, ``--max-model-calls`` reached; ``error`` says which); 2 bad usage or configuration (a message on stderr,
nothing on stdout); 130 SIGINT or SIGTERM, which cancel the turn cleanly (what was said and done stays stored).
A stdout whose reader goes away (``| head -1``) stops the run the same clean way, quietly, with 1, as Python's
docs advise for ``BrokenPipeError``: the output was not delivered.
Output formats are in ``server.cli.exec_output``; the session and its settings in ``server.cli.exec_session``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.cli.client import Connection, RpcError
from server.cli.flags import add_session_flags

if TYPE_CHECKING:
    from server.cli.exec_output import Output, TurnRecord
    from server.cli.exec_session import ExecSession

OK, FAILED, USAGE, INTERRUPTED = 0, 1, 2, 130
FORMATS = ("text", "json", "stream-json")
CANCEL_RETRY_SECONDS = 0.5  # a cancelTurn that came before the server registered the turn is sent again
CANCEL_GRACE_SECONDS = 30  # after this long without the turn ending, the server is stopped anyway


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "exec",
        help="run one unattended turn for scripts and CI (machine-readable output, meaningful exit status)",
        description="Run one agent turn without anyone to ask: a call that would need approval is refused and the "
        "model is told why. Exit 0 done, 1 the turn failed, 2 bad usage or configuration, 130 interrupted.",
    )
    p.add_argument("task", help="the task; '-' reads it from stdin")
    add_session_flags(p)  # shared with threadline chat
    p.add_argument("--output-format", choices=FORMATS, default="text")
    p.add_argument("--output-last-message", metavar="FILE", type=Path, help="also write the final answer to FILE")
    p.add_argument("--max-model-calls", metavar="N", type=_positive, help="end the turn (exit 1) after N model calls")
    p.add_argument(
        "--detach",
        action="store_true",
        help="start the turn in the per-user daemon, print the session id and exit 0 at once (docs/DAEMON.md)",
    )
    p.set_defaults(run=exec_command)


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def exec_command(args: argparse.Namespace) -> int:
    if args.detach:
        from server.cli.detach import exec_detached

        return asyncio.run(exec_detached(args))
    from server.serve import hide_keys

    hide_keys()  # the server runs in this process: no command it runs may read the keys from our environ
    return asyncio.run(run(args, time.monotonic()))


class Interrupt:
    """SIGINT, SIGTERM or a closed stdout: remember it; while the turn runs, cancel it (``cancelTurn``) until it
    ends."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.output_gone = False  # stdout's reader went away
        self.turn: asyncio.Future[Any] | None = None
        self._cancelling: asyncio.Task[None] | None = None
        self.client: Connection | None = None
        self.session_id: str | None = None

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._fired, signum)

    @property
    def stopped(self) -> bool:
        return self.signal is not None or self.output_gone

    def _fired(self, signum: int) -> None:
        self.signal = self.signal or signum
        self._stop()

    def output_closed(self) -> None:
        """Nobody reads the answer any more: a good Unix tool stops, as it would on SIGPIPE."""
        self.output_gone = True
        self._stop()

    def _stop(self) -> None:
        if self.turn is not None and self._cancelling is None:
            self._cancelling = asyncio.ensure_future(self._cancel())

    async def _cancel(self) -> None:
        """Until the turn ends: ``cancelTurn`` answers false while the server has not registered it yet."""
        assert self.client is not None and self.turn is not None
        deadline = time.monotonic() + CANCEL_GRACE_SECONDS
        while not self.turn.done() and time.monotonic() < deadline:
            try:
                await self.client.request("cancelTurn", {"sessionId": self.session_id})
            except (RpcError, ConnectionError):
                return
            await asyncio.wait({self.turn}, timeout=CANCEL_RETRY_SECONDS)
        if not self.turn.done():  # the server did not end the turn: stop it (its drafts are recovered on restart)
            self.client.kill()

    def watch(self, client: Connection, session_id: str, turn: asyncio.Future[Any]) -> None:
        self.client, self.session_id, self.turn = client, session_id, turn
        if self.stopped:  # it came while the session was being set up
            self._stop()


async def run(args: argparse.Namespace, started: float) -> int:
    interrupt = Interrupt()
    interrupt.install()
    # The server opens once the arguments are checked (a bad one never pays for it). A terminal's Ctrl-C reaches
    # this process, which cancels the turn cleanly; the commands the server starts run in their own sessions.
    from server.cli.in_process import InProcess

    client, answer = InProcess.start(initialization_options={"unattended": True})
    from server.cli.exec_output import guard_stdout, output_for
    from server.cli.exec_session import UsageError

    output = output_for(args.output_format, guard_stdout(args.output_format), sys.stderr)
    output.on_closed = interrupt.output_closed
    try:
        return await _run(client, answer, args, output, interrupt, started)
    except UsageError as exc:
        if str(exc):  # empty: the server already said why, in its one line
            print(f"threadline exec: {exc}", file=sys.stderr)
        return USAGE
    finally:
        await client.close()


async def _run(
    client: Connection,
    answer: asyncio.Future[Any],
    args: argparse.Namespace,
    output: Output,
    interrupt: Interrupt,
    started: float,
) -> int:
    from server.cli.exec_session import UsageError, check_choices, open_session

    try:
        check_choices(args)
        check_output_file(args.output_last_message)
        text = read_task(args.task)
    except UsageError:
        client.kill()  # nothing to run: the server need not finish booting
        answer.add_done_callback(_read)  # its ConnectionError is expected, not "never retrieved"
        raise
    try:
        await client.initialized(answer)
    except (ConnectionError, OSError) as exc:
        said = getattr(client, "said_why", False)
        raise UsageError("" if said else f"the server did not start ({exc}); see its message above") from None
    try:
        session = await open_session(client, args, title=text.strip().splitlines()[0][:80])
    except RpcError as exc:
        raise UsageError(exc.message) from None
    output.init(session.init)
    return await run_turn(client, session, text, args, output, interrupt, started)


def _read(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def check_output_file(path: Path | None) -> None:
    """``--output-last-message FILE``: a file in a folder that exists, checked before the turn runs."""
    from server.cli.exec_session import UsageError

    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"--output-last-message {path} is a folder: give a file name")
    if not path.parent.is_dir():
        raise UsageError(f"--output-last-message {path}: the folder {path.parent} does not exist")


def read_task(task: str) -> str:
    from server.cli.exec_session import UsageError

    text = sys.stdin.read() if task == "-" else task
    if not text.strip():
        raise UsageError("the task is empty" + (" (nothing on stdin)" if task == "-" else ""))
    return text


async def run_turn(
    client: Connection,
    session: ExecSession,
    text: str,
    args: argparse.Namespace,
    output: Output,
    interrupt: Interrupt,
    started: float,
) -> int:
    from server.cli.exec_output import TurnRecord

    record = TurnRecord()

    from server.cli.waiting import WaitReport

    report = WaitReport(output.log)

    def on_update(method: str, params: Any) -> None:
        if method == "sessionUpdate" and params.get("sessionId") == session.id:
            record.take(params["update"])
            report.seen(params["update"])
            output.update(params["update"])

    client.on_notification = on_update
    client.on_request = refuse  # unattended: the server asks nothing, but an answer never hangs anyway
    params: dict[str, Any] = {"sessionId": session.id, "text": text}
    if args.max_model_calls:
        params["maxModelCalls"] = args.max_model_calls
    answer: dict[str, Any] = {"stopReason": "cancelled"}  # a signal came while the session was set up: no turn
    if not interrupt.stopped:
        _, turn = client.start_request("submitTurn", params)
        interrupt.watch(client, session.id, turn)
        reporting = asyncio.ensure_future(report.run())  # a line on stderr while nothing arrives
        try:
            answer = await turn
        except ConnectionError as exc:  # the server died (or was stopped after a signal)
            answer = {"stopReason": "cancelled" if interrupt.stopped else "error", "error": _lost(exc)}
        finally:
            reporting.cancel()
    result = result_object(session, answer, record, interrupt, started)
    if result.get("usage") is None:
        result["usage"] = await session.totals(client)
    written = write_last_message(args.output_last_message, record.last_answer)
    output.result(result)
    status = exit_status(result, interrupt)
    return FAILED if status == OK and not written else status


def refuse(method: str, params: Any) -> dict[str, str]:
    return {"decision": "reject"}


def _lost(exc: Exception) -> dict[str, str]:
    return {"code": "serverLost", "message": f"the server ended before the turn did: {exc}"}


def result_object(
    session: ExecSession, answer: dict[str, Any], record: TurnRecord, interrupt: Interrupt, started: float
) -> dict[str, Any]:
    """The ``result`` object of the JSON formats."""
    stop = answer.get("stopReason", "error")
    result: dict[str, Any] = {
        "type": "result",
        "sessionId": session.id,
        "turnId": answer.get("turnId"),
        "stopReason": stop,
        "isError": stop != "endTurn",
        "result": record.last_answer,
        "usage": record.totals,
    }
    cost = (answer.get("usage") or {}).get("costUsd")
    if isinstance(cost, (int, float)):
        result["costUsd"] = cost  # this run's turn; the session's is usage.costUsd
    result["durationMs"] = round((time.monotonic() - started) * 1000)
    result["modelCalls"] = record.model_calls
    error = answer.get("error")
    if stop == "cancelled" and interrupt.signal is not None:
        name = signal.Signals(interrupt.signal).name
        error = {"code": "interrupted", "message": f"{name} cancelled the turn; what was said and done is stored"}
    elif stop == "cancelled" and interrupt.output_gone:
        error = {
            "code": "outputClosed",
            "message": "stdout was closed, so the turn was cancelled; what was said and done is stored",
        }
    if error:
        result["error"] = {"code": error.get("code"), "message": error.get("message")}
    return result


def exit_status(result: dict[str, Any], interrupt: Interrupt) -> int:
    if interrupt.output_gone and interrupt.signal is None:
        return FAILED  # as Python's docs advise on EPIPE: the output was not delivered, whatever the turn did
    if interrupt.signal is not None or result["stopReason"] == "cancelled":
        return INTERRUPTED
    if result["stopReason"] == "endTurn":
        return OK
    return USAGE if (result.get("error") or {}).get("code") == "noProvider" else FAILED


def write_last_message(path: Path | None, text: str) -> bool:
    """False when the file could not be written (said on stderr; the run then exits 1, its answer still printed)."""
    if path is None:
        return True
    try:
        path.write_text(text + ("\n" if text and not text.endswith("\n") else ""), encoding="utf-8")
    except OSError as exc:  # the answer is still printed; the file's failure must not hide it
        print(f"threadline exec: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return False
    return True
