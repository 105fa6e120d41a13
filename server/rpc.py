"""JSON-RPC plumbing between pygls and our handlers: decode params with msgspec, encode results, map errors.

Handlers are plain ``async def handler(rt: Runtime, params: ParamsStruct) -> ResultStruct`` functions registered
with ``@method("name")``; they know nothing about framing, pygls or error codes: they and the services below
raise ``server.errors`` domain errors, which ``to_rpc_error`` maps here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from protocol import METHODS
from server.errors import DomainError, InvalidParams

if TYPE_CHECKING:
    from server.runtime import Runtime

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

Handler = Callable[["Runtime", Any], Awaitable[Any]]
HANDLERS: dict[str, Handler] = {}


def RequestError(code: str, message: str) -> InvalidParams:  # noqa: N802  (the old class's name)
    """Deprecated: raise ``server.errors.InvalidParams(message, code=...)`` (or a narrower domain error).

    Kept so handlers written before ``server.errors`` (on branches still to merge) raise the same -32602."""
    return InvalidParams(message, code=code)


def method(name: str) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the handler of wire method ``name`` (which must be in ``protocol.METHODS``)."""
    if name not in METHODS:
        raise KeyError(f"{name} is not a protocol method")

    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


def decode_params(name: str, params: Any) -> Any:
    """Params as the method's Struct; a bad field gives -32602 naming it."""
    if params is None:
        params = {}
    try:
        return msgspec.convert(params, METHODS[name].params)
    except msgspec.ValidationError as exc:
        raise JsonRpcInvalidParams(f"invalid params for {name}: {exc}") from None


def to_rpc_error(exc: Exception) -> JsonRpcException:
    """Turn our exceptions into JSON-RPC errors; unexpected ones become -32603 without a traceback leak."""
    if isinstance(exc, JsonRpcException):
        return exc
    if isinstance(exc, DomainError):
        return JsonRpcException(code=wire_code(exc), message=exc.message, data={"code": exc.code})
    return JsonRpcException(
        code=INTERNAL_ERROR, message=f"internal error: {type(exc).__name__}: {exc}", data={"code": "InternalError"}
    )


def wire_code(exc: DomainError) -> int:
    """The JSON-RPC code of a domain error: the server's fault is -32603, the request's -32602."""
    return INTERNAL_ERROR if exc.internal else INVALID_PARAMS


def encode_result(result: Any) -> Any:
    return msgspec.to_builtins(result)
