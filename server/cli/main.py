"""``threadline`` command line. Every command but ``serve`` is a JSON-RPC client of a server it starts."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.cli.client import Client, Connection

SERVER_COMMANDS = ("serve", "acp", "daemon", "connect")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["exec"] and "--detach" not in argv:
        # exec runs the server in this process: its keys are hidden first (should it have to re-execute itself to
        # do so, the less imported the better)
        from server.serve import hide_keys

        hide_keys()
        gc.disable()  # imports make objects, not garbage: collecting during start-up is wasted (in_process enables it)
    # ``serve`` and ``acp`` (and no command: serve) build only their own parsers: a server started by a client
    # does not import the client's modules first (every CI run pays the time to its first model call).
    if not argv and sys.stdin.isatty():
        # a person typed ``threadline``: the usage, not a silent server (editors spawn ``serve`` or ``connect``; a
        # client piping into the bare form still gets the stdio server below)
        _parser().print_help(sys.stderr)
        return 2
    server_only = not argv or argv[0] in SERVER_COMMANDS  # a flag first (--version, a typo) gets the whole usage
    parser = _parser(server_only, argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        args = parser.parse_args(["serve", *argv])
    from server.cli.client import RpcError

    try:
        code: int = args.run(args)
        return code
    except RpcError as exc:
        print(f"threadline: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # a ConnectionError too: first
        return _reader_left()
    except ConnectionError as exc:  # the server ended
        from server.cli.client import ServerRefused

        if isinstance(exc, ServerRefused):
            return 2  # it said why, in one line, on stderr
        print(f"threadline: {exc}", file=sys.stderr)
        return 1


def _reader_left() -> int:
    """stdout's reader stopped reading (``threadline sessions | head -1``): not a fault. stdout now points at
    /dev/null, so the interpreter's last flush does not fail again; the status is a SIGPIPE death's, as the shell
    reports for any command cut short this way."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + 13


def _parser(server_only: bool = False, command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="threadline", description="Threadline: an agent backend for editors.")
    parser.add_argument("--version", action="version", version=f"threadline {_version()}")
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="run the JSON-RPC server (stdio by default)")
    serve.add_argument("--tcp", action="store_true", help="listen on 127.0.0.1 instead of stdio")
    serve.add_argument("--port", type=_port, default=0, help="TCP port (0 picks a free one)")
    serve.add_argument("--log-level", type=_log_level, default="WARNING", help=LOG_LEVEL_HELP)
    serve.set_defaults(run=_serve)

    acp = sub.add_parser(
        "acp",
        help="run as an Agent Client Protocol (ACP v1) agent on stdio, for Zed, JetBrains, "
        "Neovim and Emacs ACP clients",
    )
    acp.add_argument("--log-level", type=_log_level, default="WARNING", help=LOG_LEVEL_HELP)
    acp.set_defaults(run=_acp)

    daemon = sub.add_parser(
        "daemon", help="run the per-user server on a unix socket under $THREADLINE_HOME, in the foreground"
    )
    daemon.add_argument("--log-level", type=_log_level, default="WARNING", help=LOG_LEVEL_HELP)
    daemon.set_defaults(run=_daemon)
    connect = sub.add_parser(
        "connect", help="bridge stdio to the per-user daemon (starting it when none runs), for editors and chat"
    )
    connect.add_argument("--no-start", action="store_true", help="fail (exit 1) when no daemon runs")
    connect.set_defaults(run=_connect)
    if command == "exec":  # only its own module: a CI run pays every import before its first model call
        from server.cli import exec as cli_exec

        cli_exec.add_parser(sub)
    elif not server_only:
        _client_parsers(sub)
    return parser


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_LEVEL_HELP = f"what the server logs on stderr: {', '.join(LOG_LEVELS)} (default WARNING)"


def _log_level(text: str) -> str:
    """A logging level's name, any case; argparse turns the ``ArgumentTypeError`` into one usage line."""
    if text.upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LOG_LEVELS)}")
    return text.upper()


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0 to 65535; 0 picks a free one)")
    return int(text)


def _count(text: str) -> int:
    """``--limit``: a whole number above 0 (the server reads 0 as "no limit", which nobody means by typing it)."""
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"must be a whole number above 0, got {text!r}")
    return int(text)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("threadline")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def _client_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from server.cli import chat as cli_chat
    from server.cli import eval as cli_eval
    from server.cli import exec as cli_exec
    from server.cli import policy as cli_policy
    from server.cli import replay as cli_replay
    from server.cli import view as cli_view
    from server.cli import worktrees as cli_worktrees

    sessions = sub.add_parser("sessions", help="list sessions (the daemon's when one runs: with running / waiting)")
    sessions.add_argument("--cwd")
    sessions.add_argument("--limit", type=_count, default=50, help="at most this many, newest first (default 50)")
    sessions.set_defaults(run=lambda a: read_only_run(_sessions, a))

    imp = sub.add_parser("import", help="import an OpenAI-message JSON file as a session")
    imp.add_argument("file", type=Path)
    imp.add_argument("--cwd", default=".")
    imp.add_argument("--title")
    imp.set_defaults(run=_import_file)

    search = sub.add_parser("search", help="full-text search over transcripts")
    search.add_argument("query")
    search.add_argument("--session")
    search.add_argument("--limit", type=_count, default=20)
    search.set_defaults(run=lambda a: read_only_run(_search, a))

    box = sub.add_parser(
        "sandbox",
        help="run one command in this folder under the configured sandbox, as the agent's commands run",
        description="threadline sandbox [--mode M] -- CMD ARGS: exits with the command's status (docs/SANDBOX.md)",
    )
    box.add_argument("--mode", choices=["workspace-write", "read-only", "off"], help="default: the configured mode")
    box.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")
    box.set_defaults(run=_sandbox)

    cli_chat.add_parser(sub)
    cli_exec.add_parser(sub)
    cli_view.add_parser(sub, read_only_run)
    cli_replay.add_parsers(sub)
    cli_policy.add_parser(sub, _client_run, load_messages)
    cli_eval.add_parsers(sub)
    cli_worktrees.add_parser(sub, _client_run)


def _serve(args: argparse.Namespace) -> int:
    from server.serve import serve  # the one way into the server in this process

    return serve(args.tcp, args.port, args.log_level)


def _sandbox(args: argparse.Namespace) -> int:
    from server.serve import sandbox_command

    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        print("usage: threadline sandbox [--mode MODE] -- CMD [ARGS...]", file=sys.stderr)
        return 2
    return sandbox_command(argv, args.mode)


def _daemon(args: argparse.Namespace) -> int:
    from server.serve import daemon

    return daemon(args.log_level)


def _connect(args: argparse.Namespace) -> int:
    from server.serve import connect

    return connect(start=not args.no_start)


def _acp(args: argparse.Namespace) -> int:
    from server.serve import serve_acp

    return serve_acp(args.log_level)


def _client_run(
    command: Callable[[Client, argparse.Namespace], Awaitable[int]],
    args: argparse.Namespace,
    daemon_if_running: bool = False,
) -> int:
    """``command`` against a server of its own; with ``daemon_if_running``, the daemon when one listens (what runs
    lives there), else a server of its own."""
    import asyncio

    from server.cli.client import Client
    from server.cli.daemon_start import daemon_listening, refuse_bad_config

    if not (daemon_if_running and daemon_listening()) and refuse_bad_config():
        return 2  # the server it would start cannot read its settings: said once, in one line

    async def start() -> Client:
        if daemon_if_running:
            try:
                connect = [sys.executable, "-m", "server", "connect", "--no-start"]
                return await Client.spawn(args=connect, stderr=asyncio.subprocess.DEVNULL)
            except ConnectionError:
                pass  # none runs: nothing is running either
        return await Client.spawn()

    async def run() -> int:
        client = await start()
        try:
            return await command(client, args)
        finally:
            await client.close()

    return asyncio.run(run())


def read_only_run(command: Callable[[Connection, argparse.Namespace], Awaitable[int]], args: argparse.Namespace) -> int:
    """A command that only reads (``sessions``, ``search``, ``view``): the daemon's answer when one runs (what is
    running lives there), else the store read by the server in this process (``server.cli.in_process``, as
    ``exec`` runs it): no second interpreter is started for a listing."""
    import asyncio

    from server.cli.client import Client
    from server.cli.in_process import InProcess
    from server.serve import daemon_listens, hide_keys

    async def run() -> int:
        connection: Connection
        try:
            if not daemon_listens():
                raise ConnectionError("no daemon")
            connect = [sys.executable, "-m", "server", "connect", "--no-start"]
            connection = await Client.spawn(args=connect, stderr=asyncio.subprocess.DEVNULL)
        except ConnectionError:  # no daemon (or it just left): nothing runs, the store says everything
            connection, answer = InProcess.start()
            try:
                await connection.initialized(answer)
            except ConnectionError:  # it could not open (a bad config.toml): it said why on stderr
                await connection.close()
                return 2
        try:
            return await command(connection, args)
        finally:
            await connection.close()

    hide_keys()  # the server reads in this process: nothing it starts may read a key from our environment
    return asyncio.run(run())


async def _sessions(client: Connection, args: argparse.Namespace) -> int:
    from protocol.sessions import ListSessionsResult
    from server.cli.worktrees import worktree_line

    params = {"limit": args.limit}
    if args.cwd:
        params["cwd"] = str(Path(args.cwd).resolve())
    result = await client.call("listSessions", params, ListSessionsResult)
    for s in result.sessions:
        state = "waiting" if s.waiting_for_approval else "running" if s.running else "idle"
        clients = f" {s.attached_clients} attached" if s.attached_clients else ""
        line = f"{s.session_id}  {s.updated_at[:19]}  {state:<7}{clients}  {s.message_count:>5} msgs  {s.title}"
        print(f"{line}  ({s.cwd}){worktree_line(s.worktree)}")
    if not result.sessions:
        print("no sessions yet")
    return 0


def _import_file(args: argparse.Namespace) -> int:
    """The file read and the folder checked first: a bad one is one line, and no server is started for it."""
    messages = load_messages(args.file)
    cwd = Path(args.cwd).expanduser().resolve()
    if not cwd.is_dir():
        raise SystemExit(f"threadline: --cwd {args.cwd}: no such folder")
    return _client_run(lambda client, a: _import(client, a, messages, cwd), args)


async def _import(client: Client, args: argparse.Namespace, messages: list[dict[str, Any]], cwd: Path) -> int:
    from protocol.sessions import ImportSessionResult

    result = await client.call(
        "importSession",
        {"cwd": str(cwd), "title": args.title or args.file.stem, "messages": messages},
        ImportSessionResult,
    )
    print(f"imported {result.message_count} messages as {result.session_id}")
    return 0


async def _search(client: Connection, args: argparse.Namespace) -> int:
    from protocol.transcript import SearchTranscriptResult

    params = {"query": args.query, "limit": args.limit}
    if args.session:
        params["sessionId"] = args.session
    hits = (await client.call("searchTranscript", params, SearchTranscriptResult)).hits
    for h in hits:
        snippet = " ".join(h.snippet.split())  # one hit per line, whatever the message's layout
        print(f"{h.session_id} #{h.seq} {h.role}: {snippet}")
    if not hits:
        print("no matches")
    return 0


def load_messages(path: Path) -> list[dict[str, Any]]:
    """An OpenAI-message JSON file (``server.recording.load_recording``); a file that is not one ends the command
    with one line saying why (``SystemExit``), before any server starts."""
    from server.recording import load_recording

    try:
        return load_recording(path)
    except ValueError as exc:
        raise SystemExit(f"threadline: {exc}") from None
