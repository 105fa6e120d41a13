"""The connection gate, written once for every framing (stdio, TCP, a local socket): what a connection may send
before a successful ``initialize``, and the token a network client must carry.

Before ``initialize`` succeeds, every request but ``initialize`` and ``exit`` is refused -32002 and a notification
is dropped (a stranger's notification must not run a handler either); a connection that must authenticate and
sends a wrong or missing ``initializationOptions.token`` is refused -32001 and closed. After ``shutdown`` only
``exit`` is served (LSP: anything else is an invalid request).
"""

from __future__ import annotations

import hmac
from typing import Any

from server.edge.errors import INVALID_REQUEST, WireError

UNAUTHORIZED = WireError(
    -32001, "unauthorized: initializationOptions.token is missing or wrong", {"code": "Unauthorized"}
)
NOT_INITIALIZED = WireError(-32002, "server not initialized: send initialize first", {"code": "NotInitialized"})
SHUTTING_DOWN = WireError(
    INVALID_REQUEST, "invalid request: the server is shutting down; send exit", {"code": "ShuttingDown"}
)


def gate(method: str | None, *, initialized: bool, shutting_down: bool = False) -> WireError | None:
    """Why a message of ``method`` is refused on this connection now, or None when it may run (a response,
    ``method`` None, always may)."""
    if method is None or method == "exit":
        return None
    if shutting_down:
        return SHUTTING_DOWN
    if initialized or method == "initialize":
        return None
    return NOT_INITIALIZED


def token_matches(given: object, token: str) -> bool:
    """Whether ``given`` is the connection's token (compared in constant time)."""
    return isinstance(given, str) and hmac.compare_digest(given.encode(), token.encode())


def carries_token(initialize_params: Any, token: str) -> bool:
    """Whether raw ``initialize`` params carry ``token`` in ``initializationOptions.token``."""
    options = initialize_params.get("initializationOptions") if isinstance(initialize_params, dict) else None
    return token_matches(options.get("token") if isinstance(options, dict) else None, token)


def error_response(msg_id: Any, refusal: WireError) -> dict[str, Any]:
    """The JSON-RPC error response that answers a refused request (``data`` only when there is any)."""
    error: dict[str, Any] = {"code": refusal.code, "message": refusal.message}
    if refusal.data:
        error["data"] = refusal.data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}
