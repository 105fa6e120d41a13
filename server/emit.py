"""Sending ``sessionUpdate`` notifications for one turn.

The update stays a typed ``protocol.updates.SessionUpdate`` until a front end encodes it: JSON for Threadline's
protocol (``server.edge.app``), ACP's updates for ACP (``server.acp.updates``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.updates import AnyUpdate, SessionUpdate

Notify = Callable[[str, Any], None]  # (method, params): params a protocol Struct or plain JSON


class Emitter:
    def __init__(self, notify: Notify, session_id: str, turn_id: str | None, parent: tuple[str, str] | None = None):
        """``parent``: a subagent's (parent session id, ``task`` tool call id), sent with each update (B-SUB-1)."""
        self._notify = notify
        self.session_id = session_id
        self.turn_id = turn_id
        self.parent = parent

    def __call__(self, update: AnyUpdate, seq: int | None = None) -> None:
        parent_session, parent_call = self.parent or (None, None)
        self._notify(
            "sessionUpdate",
            SessionUpdate(
                session_id=self.session_id,
                update=update,
                turn_id=self.turn_id,
                message_seq=seq,
                parent_session_id=parent_session,
                parent_tool_call_id=parent_call,
            ),
        )
