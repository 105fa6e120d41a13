"""Domain errors -> ACP (JSON-RPC) errors, through the one error edge (``server.edge.errors``)."""

from __future__ import annotations

from acp import RequestError
from pygls.exceptions import JsonRpcInvalidParams

from server.edge.errors import INTERNAL_ERROR, wire_error
from server.errors import InvalidParams


def to_acp_error(exc: Exception) -> RequestError:
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, JsonRpcInvalidParams):  # decode_params' refusal naming the bad field: the request's fault
        exc = InvalidParams(exc.message)
    error = wire_error(exc)
    return RequestError(error.code, error.message, error.data)


def turn_failed(code: str, message: str) -> RequestError:
    """A turn that ended in ``error`` (the provider failed, no provider, storage): ACP has no error stop reason,
    so the prompt request fails with the turn's message."""
    return RequestError(INTERNAL_ERROR, message, {"code": code})
