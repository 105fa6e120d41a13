"""JSON-RPC plumbing between pygls and the handlers (``server.methods``): decode params with msgspec, run the
handler (a read under the store's read-only guard), encode its result, map its errors (``server.edge.errors``)."""

from __future__ import annotations

from typing import Any

import msgspec
from pygls.exceptions import JsonRpcException

from protocol import METHODS
from server.edge.errors import INVALID_PARAMS, wire_error
from server.errors import InvalidParams
from server.methods.registry import Handler
from server.services.core import Core


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
    """The handler's encoded result, run as the method table declares it (``Handler.call``)."""
    return msgspec.to_builtins(await handler.call(core, params))


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
