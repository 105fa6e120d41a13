"""The session a ``threadline exec`` run works in: a new one, ``--resume ID``, or ``--continue`` (the folder's most
recent), with ``--model``, ``--policy`` and ``--sandbox`` applied, and the ``init`` object describing it.

The flags are ``server.cli.flags``'s and their checks ``server.cli.session_flags``'s, shared with ``threadline
chat``: ``--policy plan`` and ``--sandbox MODE`` are accepted exactly when the server has
them, and refused before any server starts when it does not.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from protocol.messages import CreateSessionResult, ListModelsResult, UpdateSessionResult
from server.cli.client import Connection, RpcError
from server.cli.session_flags import UsageError, check_choices, find_session, latest_session, worktree_params

ZERO_TOTALS = {"inputTokens": 0, "outputTokens": 0, "cachedInputTokens": 0, "cacheWriteTokens": 0}
__all__ = ["ExecSession", "UsageError", "check_choices", "model_of", "open_session"]


@dataclass
class ExecSession:
    id: str
    init: dict[str, Any]  # the stream-json ``init`` object, without its ``type``

    async def totals(self, client: Connection) -> dict[str, Any]:
        """The session's stored totals (the run made no model call that reported them)."""
        try:
            info = await find_session(client, self.id)
        except (RpcError, ConnectionError):  # the server is gone: the result still comes out, with zeros
            info = None
        return msgspec.to_builtins(info.totals) if info and info.totals else dict(ZERO_TOTALS)


async def open_session(client: Connection, args: argparse.Namespace, title: str) -> ExecSession:
    """The run's session, its settings applied; ``UsageError`` when nothing could answer (no model configured, no
    session to continue). The server's -32602 answers (unknown model or session, bad folder) are RpcErrors."""
    caps = client.initialize_result["capabilities"]["experimental"]["threadline"]
    if not caps.get("unattended"):
        raise UsageError("this server cannot run unattended (initializationOptions.unattended was not taken)")
    models = await client.call("listModels", {}, ListModelsResult)
    changes: dict[str, Any] = {
        k: v for k, v in (("approvalPolicy", args.policy), ("model", args.model), ("sandbox", args.sandbox)) if v
    }
    worktree = None
    if args.resume or args.continue_:
        sid = args.resume or await latest_session(client, Path(args.cwd).resolve())
        now = await client.call("updateSession", {"sessionId": sid, **changes}, UpdateSessionResult)
        info = await find_session(client, sid)
        cwd, model, policy, sandbox = info.cwd if info else None, now.model, now.approval_policy, _sandbox(now)
    else:
        model_of(models, args.model)  # nothing is created for a run that cannot call a model
        cwd = str(Path(args.cwd).expanduser().resolve())
        params = {"cwd": cwd, "title": title, **changes, **worktree_params(args)}
        created = await client.call("createSession", params, CreateSessionResult)
        sid, model, policy, sandbox = created.session_id, args.model, args.policy, _sandbox(created)
        worktree = created.worktree
        cwd = worktree.path if worktree is not None else cwd  # B-WT-1: where it works
    init = {
        "sessionId": sid,
        "cwd": cwd,
        **({"worktree": msgspec.to_builtins(worktree)} if worktree is not None else {}),
        "model": model_of(models, model),
        "tools": list(caps.get("tools") or []),
        "approvalPolicy": policy or caps.get("approvalPolicy"),
        "sandbox": sandbox,
    }
    return ExecSession(sid, init)


def _sandbox(result: msgspec.Struct) -> Any:
    """The session's sandbox as the result gives it (a server with sandboxes has the field); None without one."""
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
