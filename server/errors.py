"""Domain errors with a stable ``data.code``; only ``server.rpc.to_rpc_error`` turns them into JSON-RPC errors."""

from __future__ import annotations


class DomainError(Exception):
    """Something the client asked for cannot be done; answered -32602 with ``data.code`` = ``code``."""

    code = "InvalidParams"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class TurnAlreadyRunning(DomainError):
    code = "TurnAlreadyRunning"


class TurnNotRunning(DomainError):
    code = "TurnNotRunning"


class TurnNotFound(DomainError):
    code = "TurnNotFound"
