"""Domain errors -> ACP (JSON-RPC) errors: the one place the ACP edge knows wire codes.

Codes follow Threadline's own protocol (``-32602`` with ``data.code`` for a bad session or a running turn,
``-32603`` for storage and provider failures), so one error reads the same on both front ends.
"""

from __future__ import annotations

from acp import RequestError

from server.acp.prompt import UnsupportedContent
from server.errors import DomainError
from server.rpc import INTERNAL_ERROR, INVALID_PARAMS, wire_code


def to_acp_error(exc: Exception) -> RequestError:
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, DomainError):
        return RequestError(wire_code(exc), exc.message, {"code": exc.code})
    if isinstance(exc, UnsupportedContent):
        return RequestError(INVALID_PARAMS, str(exc), {"code": "UnsupportedContent"})
    return RequestError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}", {"code": "InternalError"})


def turn_failed(code: str, message: str) -> RequestError:
    """A turn that ended in ``error`` (the provider failed, no provider, storage): ACP has no error stop reason,
    so the prompt request fails with the turn's message."""
    return RequestError(INTERNAL_ERROR, message, {"code": code})
