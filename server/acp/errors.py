"""Domain errors -> ACP (JSON-RPC) errors, through the one error edge (``server.edge.errors``)."""

from __future__ import annotations

from acp import RequestError

from server.edge.errors import INTERNAL_ERROR, wire_error


def to_acp_error(exc: Exception) -> RequestError:
    if isinstance(exc, RequestError):
        return exc
    error = wire_error(exc)
    return RequestError(error.code, error.message, error.data)


def turn_failed(code: str, message: str) -> RequestError:
    """A turn that ended in ``error`` (the provider failed, no provider, storage): ACP has no error stop reason,
    so the prompt request fails with the turn's message."""
    return RequestError(INTERNAL_ERROR, message, {"code": code})
