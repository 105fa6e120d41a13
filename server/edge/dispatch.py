"""The method table run for any front end, without a framework: decode a method's params with msgspec, run its
handler as the table declares it, encode its result; and what ``initialize`` answers and notes.

pygls's app (``server.edge.app``), ACP (``server.acp.agent``) and the in-process front end of ``threadline exec``
(``server.edge.local``) all call these, so a method behaves the same whichever way it arrived; errors become wire
codes in ``server.edge.errors``. Nothing here imports pygls or lsprotocol (exec does not pay for them).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import msgspec

from protocol import METHODS, NOTIFICATIONS, SERVER_REQUESTS
from server import __version__
from server.errors import InvalidParams
from server.methods.registry import HANDLERS, Handler
from server.sandbox.runner import machine_sandbox
from server.security import redaction
from server.services.core import Core
from server.tools import TOOLS


def decode_params(name: str, params: Any) -> Any:
    """Params as the method's Struct; a bad field is the domain's ``InvalidParams`` naming it, so it reaches
    both front ends as every other refusal does: -32602 with ``data.code``."""
    if params is None:
        params = {}
    try:
        return msgspec.convert(params, METHODS[name].params)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"invalid params for {name}: {exc}") from None


async def run_handler(handler: Handler, core: Core, params: Any) -> Any:
    """The handler's encoded result, run as the method table declares it (``Handler.call``: a read under the
    store's read-only guard, an exclusive mutation with its session to itself)."""
    return msgspec.to_builtins(await handler.call(core, params))


async def call(name: str, core: Core, params: Any) -> Any:
    """Method ``name``'s handler run as the table declares it, on decoded ``params``; its result as its Struct
    (for a front end that answers in its own terms: ACP's ``session/prompt`` is ``submitTurn``)."""
    return await HANDLERS[name].call(core, params)


T = TypeVar("T")


@dataclass(frozen=True)
class _Session:
    session_id: str | None


async def under_contract(name: str, core: Core, session_id: str | None, use_case: Callable[[], Awaitable[T]]) -> T:
    """Run a front end's own form of method ``name`` (ACP's ``session/*``) under ``name``'s row of the method
    table, as its handler would run: a read cannot write, an exclusive one has its session to itself."""
    handler = replace(HANDLERS[name], run=lambda _core, _params: use_case())
    result: T = await handler.call(core, _Session(session_id))
    return result


def capabilities(core: Core, daemon: bool) -> dict[str, Any]:
    """``initialize``'s ``capabilities.experimental.threadline``: what this server offers the connection."""
    settings = core.settings  # as this connection's options left them
    return {
        "version": __version__,
        "methods": sorted(METHODS),
        "notifications": sorted(NOTIFICATIONS),
        "serverRequests": sorted(SERVER_REQUESTS),
        "sandbox": machine_sandbox(),  # B-SBX-2: what this machine can enforce
        "tools": list(TOOLS),  # the built-in tools a model may call (MCP tools come per session)
        "approvalPolicy": settings.approval_policy,  # what a session that sets none runs under
        "unattended": settings.unattended,
        # B-DAEMON-1: a daemon's connection receives only what it attaches to; stdio's receives everything
        "daemon": daemon,
    }


def note_secrets(params: Any) -> None:
    """Register a key (or a base URL's credentials) sent in ``initializationOptions.provider`` for redaction."""
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    provider = options.get("provider") if isinstance(options, dict) else None
    if isinstance(provider, dict):
        if isinstance(provider.get("apiKey"), str):
            redaction.add_secret(provider["apiKey"])
        if isinstance(provider.get("baseUrl"), str):
            redaction.add_url_secrets(provider["baseUrl"])


def note_mcp_secrets(params: Any) -> None:
    """Register the ``env`` and ``headers`` values of ``createSession {mcpServers}`` for redaction."""
    servers = params.get("mcpServers") if isinstance(params, dict) else None
    for entry in servers if isinstance(servers, list) else []:
        for key in ("env", "headers"):
            pairs = entry.get(key) if isinstance(entry, dict) else None
            for pair in pairs if isinstance(pairs, list) else []:
                if isinstance(pair, dict) and isinstance(pair.get("value"), str):
                    redaction.add_secret(pair["value"])
