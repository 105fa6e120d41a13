"""The session a ``threadline exec`` run works in: a new one, ``--resume ID``, or ``--continue`` (the folder's most
recent), with ``--model``, ``--policy`` and ``--sandbox`` applied, and the ``init`` object describing it.

Which policies and sandbox modes exist is read from the protocol types the server decodes its params with (this
installation's), so ``--policy plan`` (issue 33) and ``--sandbox MODE`` (issue 30) are accepted exactly when the
server has them, and refused before any server starts when it does not.
"""

from __future__ import annotations

import argparse
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

from protocol.messages import (
    CreateSessionParams,
    CreateSessionResult,
    ListModelsResult,
    ListSessionsResult,
    SessionInfo,
    UpdateSessionParams,
    UpdateSessionResult,
)
from server.cli.client import Client, RpcError

ZERO_TOTALS = {"inputTokens": 0, "outputTokens": 0, "cachedInputTokens": 0, "cacheWriteTokens": 0}
LATER = {"plan": "plan mode (issue 33)"}  # values a later server knows, with what they need


class UsageError(Exception):
    """Bad usage or configuration: exit 2 with this message on stderr."""


@dataclass
class ExecSession:
    id: str
    init: dict[str, Any]  # the stream-json ``init`` object, without its ``type``

    async def totals(self, client: Client) -> dict[str, Any]:
        """The session's stored totals (the run made no model call that reported them)."""
        try:
            info = await find_session(client, self.id)
        except (RpcError, ConnectionError):  # the server is gone: the result still comes out, with zeros
            info = None
        return msgspec.to_builtins(info.totals) if info and info.totals else dict(ZERO_TOTALS)


def wire_values(struct: type[msgspec.Struct], name: str) -> tuple[str, ...]:
    """The strings ``struct``'s field ``name`` takes (its ``Literal``); () when the field does not exist."""
    field = next((f for f in msgspec.structs.fields(struct) if f.name == name), None)
    return _literals(field.type) if field is not None else ()


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
        # the mode goes to createSession/updateSession {sandbox} (issue 30), checked against the types they decode
        params = UpdateSessionParams if args.resume or args.continue_ else CreateSessionParams
        modes = wire_values(params, "sandbox")
        if not modes:
            raise UsageError("--sandbox needs the OS sandbox (issue 30), which this server does not have; leave it out")
        if args.sandbox not in modes:
            raise UsageError(f"--sandbox must be one of {', '.join(modes)}, got {args.sandbox!r}")


async def open_session(client: Client, args: argparse.Namespace, title: str) -> ExecSession:
    """The run's session, its settings applied; ``UsageError`` when nothing could answer (no model configured, no
    session to continue). The server's -32602 answers (unknown model or session, bad folder) are RpcErrors."""
    caps = client.initialize_result["capabilities"]["experimental"]["threadline"]
    if not caps.get("unattended"):
        raise UsageError("this server cannot run unattended (initializationOptions.unattended was not taken)")
    models = await client.call("listModels", {}, ListModelsResult)
    changes: dict[str, Any] = {
        k: v for k, v in (("approvalPolicy", args.policy), ("model", args.model), ("sandbox", args.sandbox)) if v
    }
    if args.resume or args.continue_:
        sid = args.resume or await latest_session(client, Path(args.cwd).resolve())
        now = await client.call("updateSession", {"sessionId": sid, **changes}, UpdateSessionResult)
        info = await find_session(client, sid)
        cwd, model, policy, sandbox = info.cwd if info else None, now.model, now.approval_policy, _sandbox(now)
    else:
        model_of(models, args.model)  # nothing is created for a run that cannot call a model
        cwd = str(Path(args.cwd).expanduser().resolve())
        created = await client.call("createSession", {"cwd": cwd, "title": title, **changes}, CreateSessionResult)
        sid, model, policy, sandbox = created.session_id, args.model, args.policy, _sandbox(created)
    init = {
        "sessionId": sid,
        "cwd": cwd,
        "model": model_of(models, model),
        "tools": list(caps.get("tools") or []),
        "approvalPolicy": policy or caps.get("approvalPolicy"),
        "sandbox": sandbox,
    }
    return ExecSession(sid, init)


def _sandbox(result: msgspec.Struct) -> Any:
    """The session's sandbox as the result gives it (issue 30 adds the field); None without one."""
    return msgspec.to_builtins(getattr(result, "sandbox", None))


def model_of(models: ListModelsResult, name: str | None) -> str:
    """The provider's model id behind a configured name (or the default provider's)."""
    chosen = next((m for m in models.models if m.name == name), None) if name else models.default
    if chosen is None and name is None:
        raise UsageError(
            "no model provider is configured: set THREADLINE_BASE_URL and THREADLINE_MODEL (and THREADLINE_API_KEY), "
            "or [provider] in $THREADLINE_HOME/config.toml, or use --model NAME"
        )
    return chosen.model if chosen else name or ""


async def latest_session(client: Client, cwd: Path) -> str:
    sessions = (await client.call("listSessions", {"cwd": str(cwd), "limit": 1}, ListSessionsResult)).sessions
    if not sessions:
        raise UsageError(f"--continue: no session in {cwd} yet")
    return sessions[0].session_id


async def find_session(client: Client, session_id: str) -> SessionInfo | None:
    sessions = (await client.call("listSessions", {}, ListSessionsResult)).sessions
    return next((s for s in sessions if s.session_id == session_id), None)
