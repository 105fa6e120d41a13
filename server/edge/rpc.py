"""JSON-RPC plumbing between pygls and the handlers: pygls's exceptions from our errors (``server.edge.errors``);
decoding params and running handlers is ``server.edge.dispatch``'s, shared with the front ends without pygls."""

from __future__ import annotations

import logging
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


def structuring_problem(exc: BaseException | None) -> str | None:
    """What was wrong with params pygls could not structure (``initialize``'s, typed by lsprotocol), in the wire's
    terms: ``capabilities is required - at $.params``; None when ``exc`` is not such a failure."""
    from cattrs.errors import ClassValidationError
    from cattrs.v import transform_error

    if not isinstance(exc, ClassValidationError):
        return None
    problems = []
    for line in transform_error(exc):
        what, _, where = line.partition(" @ ")
        path = ".".join(_camel(p) for p in where.split("."))
        if what == "required field missing":
            parent, _, field = path.rpartition(".")
            problems.append(f"{field} is required - at {parent}")
        else:
            problems.append(f"{what} - at {path}")
    return "; ".join(problems) or None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


class QuietStructuring(logging.Filter):
    """pygls logs a traceback for every message whose params it cannot structure; that is the client's mistake,
    answered -32602 with the field named (and logged in one line by the edge), not a fault of ours."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        return not (text.startswith("Unable to deserialize message") and "ClassValidationError" in str(record.args))
