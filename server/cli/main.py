"""``threadline`` command line. Every command but ``serve`` is a JSON-RPC client of a server it starts."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.cli.client import Client

SERVER_COMMANDS = ("serve", "acp", "daemon", "connect")
HELP = ("-h", "--help")


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
    server_only = not argv or argv[0] in SERVER_COMMANDS or (argv[0].startswith("-") and argv[0] not in HELP)
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


def _parser(server_only: bool = False, command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="threadline", description="Threadline: an agent backend for editors.")
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="run the JSON-RPC server (stdio by default)")
    serve.add_argument("--tcp", action="store_true", help="listen on 127.0.0.1 instead of stdio")
    serve.add_argument("--port", type=int, default=0, help="TCP port (0 picks a free one)")
    serve.add_argument("--log-level", default="WARNING")
    serve.set_defaults(run=_serve)

    acp = sub.add_parser(
        "acp",
        help="run as an Agent Client Protocol (ACP v1) agent on stdio, for Zed, JetBrains, "
        "Neovim and Emacs ACP clients",
    )
    acp.add_argument("--log-level", default="WARNING")
    acp.set_defaults(run=_acp)

    daemon = sub.add_parser(
        "daemon", help="run the per-user server on a unix socket under $THREADLINE_HOME, in the foreground"
    )
    daemon.add_argument("--log-level", default="WARNING")
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
    sessions.add_argument("--limit", type=int, default=50)
    sessions.set_defaults(run=lambda a: _client_run(_sessions, a, daemon_if_running=True))

    imp = sub.add_parser("import", help="import an OpenAI-message JSON file as a session")
    imp.add_argument("file", type=Path)
    imp.add_argument("--cwd", default=".")
    imp.add_argument("--title")
    imp.set_defaults(run=lambda a: _client_run(_import, a))

    search = sub.add_parser("search", help="full-text search over transcripts")
    search.add_argument("query")
    search.add_argument("--session")
    search.add_argument("--limit", type=int, default=20)
    search.set_defaults(run=lambda a: _client_run(_search, a))

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
    cli_view.add_parser(sub, _client_run)
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


async def _sessions(client: Client, args: argparse.Namespace) -> int:
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


async def _import(client: Client, args: argparse.Namespace) -> int:
    from protocol.sessions import ImportSessionResult

    messages = load_messages(args.file)
    result = await client.call(
        "importSession",
        {"cwd": str(Path(args.cwd).resolve()), "title": args.title or args.file.stem, "messages": messages},
        ImportSessionResult,
    )
    print(f"imported {result.message_count} messages as {result.session_id}")
    return 0


async def _search(client: Client, args: argparse.Namespace) -> int:
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
    """An OpenAI-message JSON file: a list of messages, or an object with a ``messages`` list."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("messages")
    if not isinstance(data, list):
        raise SystemExit(f"threadline: {path} holds no list of messages")
    return data
