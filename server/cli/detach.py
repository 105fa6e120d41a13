"""``threadline exec --detach PROMPT`` (B-DAEMON-1, docs/DAEMON.md): start a turn in the per-user daemon, print its
session id and leave, the turn going on without anyone attached.

What a plain ``exec`` refuses is refused here the same way, before anything is detached (exit 2 and one line): a
bad ``config.toml``, no provider or model configured, an unknown ``--model``, a folder that does not exist, an
empty task. The turn runs on the provider settings of the shell that asked (its environment and config.toml, sent
as ``initializationOptions``), not on those of whichever client happened to start the daemon. It then waits for
the model's first answer (at most ``FIRST_ANSWER_WAIT``): a turn that fails at once (a refused key, an unknown
model) is reported as a plain ``exec`` reports it (exit 1 and the error), not as a session id.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol.messages import ListSessionsResult
from server.cli.client import Client, RpcError
from server.cli.daemon_start import unreachable

if TYPE_CHECKING:
    from server.config import Settings

START_TIMEOUT = 60.0  # seconds for the turn to start in the daemon
FIRST_ANSWER_WAIT = 20.0  # seconds to wait for the model's first answer before leaving the turn to itself
USAGE, FAILED = 2, 1
ANSWERED = {"assistantDelta", "reasoningDelta", "assistantMessage", "toolCall", "usage"}  # the model answered


class Refused(Exception):
    """Bad usage or configuration: exit 2 with this line."""


def shell_settings() -> Settings:
    """The settings a plain ``exec`` in this shell would run with (``Refused`` on a bad config.toml)."""
    import os

    from server.config import load_settings
    from server.config_file import ConfigError

    try:
        return load_settings(dict(os.environ))
    except ConfigError as exc:
        raise Refused(str(exc)) from None


def preflight(args: argparse.Namespace, settings: Settings) -> str:
    """What a plain ``exec`` checks before its turn, checked here (``Refused``); the task's text."""
    from server.cli.exec_session import UsageError, check_choices

    try:
        check_choices(args)
    except UsageError as exc:
        raise Refused(str(exc)) from None
    text = sys.stdin.read() if args.task == "-" else args.task
    if not text.strip():
        raise Refused("the task is empty" + (" (nothing on stdin)" if args.task == "-" else ""))
    if not (args.resume or args.continue_):
        folder = Path(args.cwd).expanduser()
        if not folder.is_dir():
            raise Refused(f"--cwd {args.cwd}: no such folder")
    if args.model and args.model not in settings.models:
        known = ", ".join(sorted(settings.models)) or "none"
        raise Refused(f"--model {args.model}: no [models.{args.model}] in config.toml (configured: {known})")
    if not args.model and not settings.provider.configured:
        raise Refused(
            "no model provider is configured: set THREADLINE_BASE_URL and THREADLINE_MODEL (and THREADLINE_API_KEY), "
            "or [provider] in $THREADLINE_HOME/config.toml, or use --model NAME"
        )
    return text


def shell_options(settings: Settings) -> dict[str, Any]:
    """This shell's provider, policy and sandbox as ``initializationOptions``: the daemon runs this connection's
    turns on them, whatever the environment of the client that started it."""
    p = settings.provider
    provider = {
        "kind": p.kind,
        "baseUrl": p.base_url,
        "apiKey": p.api_key,
        "model": p.model,
        "contextWindowTokens": p.context_window_tokens,
    }
    return {
        "provider": {k: v for k, v in provider.items() if v not in (None, "")},
        "approvalPolicy": settings.approval_policy,
        "sandbox": settings.sandbox.mode,
    }


async def exec_detached(args: argparse.Namespace) -> int:
    try:
        settings = shell_settings()
        task = preflight(args, settings)
    except Refused as exc:
        print(f"threadline exec: {exc}", file=sys.stderr)
        return USAGE
    from server.cli.attach import spawn_attached

    try:
        client = await spawn_attached(initialization_options=shell_options(settings))
    except (ConnectionError, OSError) as exc:
        print(f"threadline exec: {unreachable(exc)}", file=sys.stderr)
        return USAGE
    try:
        return await _detach(client, args, task)
    except RpcError as exc:
        print(f"threadline exec: {exc.message}", file=sys.stderr)
        return USAGE
    except ConnectionError as exc:
        print(f"threadline exec: {unreachable(exc)}", file=sys.stderr)
        return FAILED
    finally:
        await client.close()


async def _detach(client: Client, args: argparse.Namespace, task: str) -> int:
    """Submit the turn; leave once the model has answered (or ``FIRST_ANSWER_WAIT`` passed, or an approval waits),
    printing the session id; a turn that ended with an error by then is reported instead."""
    sid = await _session_for(client, args, task)
    loop = asyncio.get_running_loop()
    started, answered = loop.create_future(), loop.create_future()
    ended: list[dict[str, Any]] = []

    def seen(method: str, params: Any) -> None:
        if method != "sessionUpdate" or params.get("sessionId") != sid:
            return
        kind = params["update"]["kind"]
        if kind == "turnCompleted":
            ended.append(params["update"])
        for future, kinds in ((started, ("turnStarted", "turnCompleted")), (answered, (*ANSWERED, "turnCompleted"))):
            if kind in kinds and not future.done():
                future.set_result(None)

    client.on_notification = seen
    client.on_request = _answered_elsewhere  # an approval: it waits for a client that attaches
    _, turn = client.start_request("submitTurn", {"sessionId": sid, "text": task, "queue": True})
    # The answer comes when the turn ends, long after this exits: closing fails it, and that is expected
    turn.add_done_callback(lambda f: f.cancelled() or f.exception())
    done, _ = await asyncio.wait({started, turn}, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
    if turn in done and turn.exception() is not None:
        raise turn.exception()  # type: ignore[misc]
    if not done:
        print(f"threadline exec: the daemon did not start the turn within {START_TIMEOUT:.0f} s", file=sys.stderr)
        return FAILED
    await asyncio.wait({answered, turn}, timeout=FIRST_ANSWER_WAIT, return_when=asyncio.FIRST_COMPLETED)
    failed = next((u for u in ended if u.get("stopReason") == "error"), None)
    if failed is not None:
        error = failed.get("error") or {}
        print(f"threadline exec: the turn failed: {error.get('message') or 'no reason given'}", file=sys.stderr)
        print(f"threadline exec: it is stored in session {sid} (threadline chat --attach {sid})", file=sys.stderr)
        return USAGE if error.get("code") == "noProvider" else FAILED
    print(sid, flush=True)
    return 0


async def _answered_elsewhere(method: str, params: Any) -> Any:
    """Never answered here: the daemon keeps the question for the client that attaches."""
    return await asyncio.get_running_loop().create_future()


async def _session_for(client: Client, args: argparse.Namespace, task: str) -> str:
    changes = {
        k: v for k, v in (("approvalPolicy", args.policy), ("model", args.model), ("sandbox", args.sandbox)) if v
    }
    if args.resume or args.continue_:
        sid = args.resume or await _latest(client, str(Path(args.cwd).expanduser().resolve()))
        if changes:
            await client.request("updateSession", {"sessionId": sid, **changes})
        return str(sid)
    title = " ".join(task.split())[:60] or "detached task"
    cwd = str(Path(args.cwd).expanduser().resolve())
    from server.cli.session_flags import UsageError, worktree_params

    try:
        worktree = worktree_params(args)
    except UsageError as exc:
        raise RpcError(-32602, str(exc)) from None
    params = {"cwd": cwd, "title": title, **changes, **worktree}
    return str((await client.request("createSession", params))["sessionId"])


async def _latest(client: Client, cwd: str) -> str:
    sessions = (await client.call("listSessions", {"cwd": cwd, "limit": 1}, ListSessionsResult)).sessions
    if not sessions:
        raise RpcError(-32602, f"--continue: no session in {cwd} yet")
    return sessions[0].session_id
