"""JSON-RPC plumbing between pygls and the handlers (``server.methods``): decode params with msgspec, run the
handler (a read under the store's read-only guard), encode its result, map its errors (``server.edge.errors``)."""

from __future__ import annotations

from typing import Any

import msgspec
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from protocol import METHODS
from server.edge.errors import wire_error
from server.methods.registry import Handler
from server.services.core import Core
from server.transcript.store import read_only


def decode_params(name: str, params: Any) -> Any:
    """Params as the method's Struct; a bad field gives -32602 naming it."""
    if params is None:
        params = {}
    try:
        return msgspec.convert(params, METHODS[name].params)
    except msgspec.ValidationError as exc:
        raise JsonRpcInvalidParams(f"invalid params for {name}: {exc}") from None


async def run_handler(handler: Handler, core: Core, params: Any) -> Any:
    """The handler's encoded result; a read runs where a write to the store fails (it is a bug, not a request's
    fault), so a read never writes."""
    if handler.mutates:
        result = await handler.run(core, params)
    else:
        with read_only(handler.name):
            result = await handler.run(core, params)
    return msgspec.to_builtins(result)


def to_rpc_error(exc: Exception) -> JsonRpcException:
    """Turn our exceptions into JSON-RPC errors; unexpected ones become -32603 without a traceback leak."""
    if isinstance(exc, JsonRpcException):
        return exc
    error = wire_error(exc)
    return JsonRpcException(code=error.code, message=error.message, data=error.data)
