"""JSON-RPC plumbing between pygls and the handlers: pygls's exceptions from our errors (``server.edge.errors``);
decoding params and running handlers is ``server.edge.dispatch``'s, shared with the front ends without pygls."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcException

from server.edge.errors import INVALID_PARAMS, wire_error
from server.errors import InvalidParams


def to_rpc_error(exc: Exception) -> JsonRpcException:
    """Turn our exceptions into JSON-RPC errors; unexpected ones become -32603 without a traceback leak."""
    if isinstance(exc, JsonRpcException):
        return exc
    error = wire_error(exc)
    return JsonRpcException(code=error.code, message=error.message, data=error.data)


def with_data_code(error: Any) -> Any:
    """A -32602 that pygls made (params it could not structure, its own ``workspace/executeCommand``) carries
    ``data.code`` ``InvalidParams`` as ours do: every -32602 this edge sends has one (``error``: pygls's
    ``ResponseError``)."""
    if getattr(error, "code", None) == INVALID_PARAMS and not isinstance(getattr(error, "data", None), dict):
        error.data = {"code": InvalidParams.code}
    return error
