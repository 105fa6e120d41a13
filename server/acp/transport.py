"""Newline-delimited JSON-RPC on stdio, as the SDK's connection expects a transport (``send``/``receive``/``close``).

The SDK's own stdio transport logs and skips a line that is not JSON, and a line that is JSON but not an object
stops its receive loop. Here both are answered (``-32700`` parse error, ``-32600`` invalid request, ``id: null``
as JSON-RPC says) and the agent keeps reading: nothing a client sends ends the agent.

It also remembers the ids of open ``session/request_permission`` requests, so one the agent no longer waits for
(its prompt was cancelled) is withdrawn with ACP's ``$/cancel_request``. One the client has already answered is
forgotten as its answer is read, so a cancel that races the answer never withdraws an answered request.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Protocol

from server.edge.errors import INVALID_REQUEST, PARSE_ERROR

log = logging.getLogger(__name__)

PERMISSION = "session/request_permission"


class Output(Protocol):
    """Where the lines go (an ``asyncio.StreamWriter``, or ``threadline acp``'s stdout)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def is_closing(self) -> bool: ...

    def close(self) -> None: ...


class LineTransport:
    def __init__(self, reader: asyncio.StreamReader, writer: Output):
        self._reader, self._writer = reader, writer
        self._permission_ids: dict[tuple[Any, Any], Any] = {}  # (sessionId, toolCallId) -> request id

    async def send(self, message: dict[str, Any]) -> None:
        if message.get("method") == PERMISSION and "id" in message:
            params = message.get("params") or {}
            key = (params.get("sessionId"), (params.get("toolCall") or {}).get("toolCallId"))
            self._permission_ids[key] = message["id"]
        self._write(message)
        await self._writer.drain()

    def _write(self, message: dict[str, Any]) -> None:
        # One write per message: lines never interleave, whichever task sends.
        self._writer.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    def answered(self, session_id: str, tool_call_id: str) -> None:
        self._permission_ids.pop((session_id, tool_call_id), None)

    def _answered_id(self, request_id: Any) -> None:
        for key, open_id in list(self._permission_ids.items()):
            if open_id == request_id:
                del self._permission_ids[key]

    def withdraw(self, session_id: str, tool_call_id: str) -> None:
        """Tell the client the agent no longer waits for this permission request (it may close the prompt)."""
        request_id = self._permission_ids.pop((session_id, tool_call_id), None)
        if request_id is not None and not self._writer.is_closing():
            self._write({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}})

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError:
                await self._skip_long_line()
                await self._refuse(INVALID_REQUEST, "invalid request: the message is larger than the agent accepts")
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                await self._refuse(PARSE_ERROR, f"parse error: {exc}")
                continue
            if not isinstance(message, dict):
                await self._refuse(INVALID_REQUEST, "invalid request: a message must be a JSON object")
                continue
            if "method" not in message and ("result" in message or "error" in message):
                self._answered_id(message.get("id"))
            return message

    async def close(self) -> None:
        self._writer.close()

    async def _refuse(self, code: int, message: str) -> None:
        log.warning("refused a line: %s", message)
        await self.send({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})

    async def _skip_long_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return
