"""Sending ``sessionUpdate`` notifications for one turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from protocol.updates import AnyUpdate, SessionUpdate

Notify = Callable[[str, Any], None]


class Emitter:
    def __init__(self, notify: Notify, session_id: str, turn_id: str | None):
        self._notify = notify
        self.session_id = session_id
        self.turn_id = turn_id

    def __call__(self, update: AnyUpdate, seq: int | None = None) -> None:
        message = SessionUpdate(session_id=self.session_id, update=update, turn_id=self.turn_id, seq=seq)
        self._notify("sessionUpdate", msgspec.to_builtins(message))
