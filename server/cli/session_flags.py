"""What the session flags (``server.cli.flags``) mean, for every command that runs turns (``threadline chat`` and
``threadline exec``): their values checked, the session they pick found, and (for chat) opened with them.

Which policies and sandbox modes exist is read from the protocol types the server decodes its params with (this
installation's), so ``--policy plan`` and ``--sandbox MODE`` are taken exactly when the
server has them, and refused with a sentence saying so when it does not: the server ignores unknown fields, so
sending ``sandbox`` to a server without it would silently run commands unconfined.
"""

from __future__ import annotations

import argparse
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

from protocol.sessions import (
    CreateSessionParams,
    CreateSessionResult,
    ListSessionsResult,
    SessionInfo,
    UpdateSessionParams,
    UpdateSessionResult,
)
from server.cli.client import Connection

LATER = {"plan": "plan mode"}  # values a later server knows, with what they need


class UsageError(Exception):
    """Bad usage or configuration, said in a sentence that tells what to do (exit 2)."""


def wire_values(struct: type[msgspec.Struct], name: str) -> tuple[str, ...]:
    """The strings ``struct``'s field ``name`` takes (its ``Literal``); () when the field does not exist."""
    found = next((f for f in msgspec.structs.fields(struct) if f.name == name), None)
    return _literals(found.type) if found is not None else ()


def _literals(typ: Any) -> tuple[str, ...]:
    origin = get_origin(typ)
    if origin is Literal:
        return tuple(a for a in get_args(typ) if isinstance(a, str))
    if origin is Annotated:
        return _literals(get_args(typ)[0])
    if origin in (Union, types.UnionType):
        return tuple(v for arg in get_args(typ) for v in _literals(arg))
    return ()


def check_choices(args: argparse.Namespace) -> None:
    """``--policy`` and ``--sandbox`` against what the server takes; ``UsageError`` saying what is possible."""
    policies = wire_values(CreateSessionParams, "approval_policy")
    if args.policy is not None and args.policy not in policies:
        needs = (
            f"; {args.policy} needs {LATER[args.policy]}, which this server does not have"
            if args.policy in LATER
            else ""
        )
        raise UsageError(f"--policy must be one of {', '.join(policies)}, got {args.policy!r}{needs}")
    if args.sandbox is not None:
        params = UpdateSessionParams if args.resume or args.continue_ else CreateSessionParams
        modes = wire_values(params, "sandbox")
        if not modes:
            raise UsageError(
                "--sandbox needs the OS sandbox, which this server does not have: leave the flag out, "
                "and commands run as the approval policy says"
            )
        if args.sandbox not in modes:
            raise UsageError(f"--sandbox must be one of {', '.join(modes)}, got {args.sandbox!r}")


def worktree_params(args: argparse.Namespace) -> dict[str, Any]:
    """``--worktree NAME`` as createSession's ``worktree`` (B-WT-1); only for a new session."""
    name = getattr(args, "worktree", None)
    if name is None:
        return {}
    if args.resume or args.continue_:
        raise UsageError("--worktree makes a new session: leave out --resume/--continue")
    return {"worktree": name}


@dataclass
class OpenedSession:
    id: str
    cwd: str
    resumed: SessionInfo | None = None  # the stored session --resume/--continue picked up
    settings: dict[str, Any] = field(default_factory=dict)  # what createSession/updateSession answered


async def open_session(client: Connection, args: argparse.Namespace, title: str | None = None) -> OpenedSession:
    """A new session, or the one ``--resume``/``--continue`` names, with ``--model``/``--policy``/``--sandbox``
    applied (``updateSession`` for a stored one, as an editor's picker would). The server's -32602 answers
    (unknown model or session, bad folder) come up as ``RpcError``."""
    check_choices(args)
    worktree = worktree_params(args)
    changes: dict[str, Any] = {
        k: v for k, v in (("approvalPolicy", args.policy), ("model", args.model), ("sandbox", args.sandbox)) if v
    }
    if args.resume or args.continue_:
        sid = args.resume or await latest_session(client, Path(args.cwd).expanduser().resolve())
        now = await client.call("updateSession", {"sessionId": sid, **changes}, UpdateSessionResult)
        info = await find_session(client, sid)
        return OpenedSession(sid, info.cwd if info else "", info, msgspec.to_builtins(now))
    cwd = str(Path(args.cwd).expanduser().resolve())
    named = {"title": title} if title else {}  # none: the server names it after its first prompt
    created = await client.call("createSession", {"cwd": cwd, **named, **changes, **worktree}, CreateSessionResult)
    where = created.worktree.path if created.worktree is not None else cwd
    return OpenedSession(created.session_id, where, None, msgspec.to_builtins(created))


async def latest_session(client: Connection, cwd: Path) -> str:
    sessions = (await client.call("listSessions", {"cwd": str(cwd), "limit": 1}, ListSessionsResult)).sessions
    if not sessions:
        raise UsageError(f"--continue: no session in {cwd} yet (start one with threadline chat)")
    return sessions[0].session_id


async def find_session(client: Connection, session_id: str) -> SessionInfo | None:
    sessions = (await client.call("listSessions", {}, ListSessionsResult)).sessions
    return next((s for s in sessions if s.session_id == session_id), None)
