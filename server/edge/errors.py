"""The one error edge: domain errors (``server.errors``) become JSON-RPC errors here, for Threadline's protocol
(``server.edge.rpc``, ``server.edge.local``) and ACP (``server.acp.errors``) alike, so one error reads the same on
every front end.

``internal`` domain errors are -32603 (the server's fault), the rest -32602 (the request's fault), each with its
``data.code``; anything unexpected is -32603 ``InternalError``, without a traceback leak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.errors import DomainError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


@dataclass(frozen=True)
class WireError:
    code: int
    message: str
    data: dict[str, Any]


def wire_error(exc: Exception) -> WireError:
    if isinstance(exc, DomainError):
        return WireError(wire_code(exc), exc.message, {"code": exc.code, **exc.details()})
    return WireError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}", {"code": "InternalError"})


def wire_code(exc: DomainError) -> int:
    """The JSON-RPC code of a domain error: the server's fault is -32603, the request's -32602."""
    return INTERNAL_ERROR if exc.internal else INVALID_PARAMS
