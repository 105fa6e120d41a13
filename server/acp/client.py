"""The services' way out to an ACP client: ``notify`` and ``ask_client`` speaking ACP.

The agent loop, approvals and store are Threadline's own; only the two exits differ, and the runtime is built with
these (``server.acp.serve``). Updates go through one outbox task, so they reach the client in the order the loop
emitted them, and a request or a response that must follow them (a permission request, the prompt's answer) waits
for ``flush``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from acp.interfaces import Client

from protocol.updates import SessionUpdate
from server.acp import permissions
from server.acp.transport import LineTransport
from server.acp.updates import UpdateMapping

log = logging.getLogger(__name__)


class AcpClient:
    def __init__(self) -> None:
        self.client: Client | None = None
        self.transport: LineTransport | None = None  # withdraws permission requests nobody waits for any more
        self.live: dict[str, UpdateMapping] = {}  # the sessions this connection has opened, with their mapping
        self.rejected: dict[str, set[str]] = {}  # session -> tools the user rejected always
        # sessions whose prompt the client cancelled (session/cancel) while a permission request was open: ACP
        # has the client answer every such request `cancelled` itself, so the agent does not withdraw them
        self._client_cancelled: set[str] = set()
        self._outbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._sender: asyncio.Task[Any] | None = None

    def attach(self, client: Client) -> None:
        self.client = client
        self._sender = asyncio.get_running_loop().create_task(self._send_updates(), name="acp outbox")

    def close(self) -> None:
        if self._sender is not None:
            self._sender.cancel()

    def open_session(self, session_id: str, cwd: str) -> UpdateMapping:
        return self.live.setdefault(session_id, UpdateMapping(Path(cwd)))

    def cancel_prompt(self, session_id: str) -> None:
        """``session/cancel`` arrived: the open permission request of that session is the client's to answer."""
        self._client_cancelled.add(session_id)

    def close_session(self, session_id: str) -> None:
        self.live.pop(session_id, None)
        self.rejected.pop(session_id, None)

    # --- the two exits -------------------------------------------------------------------------------

    def notify(self, method: str, params: Any) -> None:
        if not isinstance(params, SessionUpdate):
            return  # Threadline's other notifications have no ACP counterpart
        if params.parent_session_id is not None:  # a subagent's: its parent's task call shows it (B-SUB-1)
            parent = self.live.get(params.parent_session_id)
            if parent is not None and params.parent_tool_call_id is not None:
                progress = parent.child_progress(params.parent_tool_call_id, params.session_id, params.update)
                if progress is not None:
                    self.send_update(params.parent_session_id, progress)
            return
        session = self.live.get(params.session_id)
        if session is None:
            return
        for update in session.translate(params.update):
            self.send_update(params.session_id, update)

    async def ask_client(self, method: str, params: Any) -> Any:
        if method != "requestApproval" or self.client is None:
            raise RuntimeError(f"the ACP client cannot answer {method}")
        # A subagent asks through its parent's session and task call, the ones the client knows (B-SUB-1)
        session_id = params.get("parentSessionId") or params["sessionId"]
        if params["tool"] in self.rejected.get(session_id, ()):
            return {"decision": "reject"}
        await self.flush()  # the tool_call goes out before the question about it
        call_id = params.get("parentToolCallId") or params["toolCallId"]
        self._client_cancelled.discard(session_id)
        live = self.live.get(session_id)
        call = live.call(params["toolCallId"]) if live else None
        tool_call = permissions.tool_call_of(params, live.cwd if live else None, call)
        try:
            response = await self.client.request_permission(
                session_id=session_id, options=permissions.options_of(params), tool_call=tool_call
            )
        except asyncio.CancelledError:  # the prompt was cancelled or the session closed: the question is void
            # Withdrawn only when the client cannot know (session/close, shutdown): after its own session/cancel
            # the client answers `cancelled`, often before a $/cancel_request could reach it.
            if self.transport is not None and session_id not in self._client_cancelled:
                self.transport.withdraw(session_id, call_id)
            raise
        finally:
            if self.transport is not None:
                self.transport.answered(session_id, call_id)
            if params.get("parentToolCallId"):  # the task's card shows its task again, not the child's question
                self.send_update(session_id, permissions.task_card(call_id, live.call(call_id) if live else None))
        decision, forever = permissions.decision_of(response)
        if forever:
            self.rejected.setdefault(session_id, set()).add(params["tool"])
        return {"decision": decision}

    # --- the outbox ----------------------------------------------------------------------------------

    def send_update(self, session_id: str, update: Any) -> None:
        self._outbox.put_nowait((session_id, update))

    async def flush(self) -> None:
        """Wait until every update queued so far has been written."""
        await self._outbox.join()

    async def _send_updates(self) -> None:
        while True:
            session_id, update = await self._outbox.get()
            try:
                assert self.client is not None
                await self.client.session_update(session_id=session_id, update=update)
            except Exception:  # a closed connection: nothing to tell, the loop carries on storing
                log.warning("could not send a session/update", exc_info=True)
            finally:
                self._outbox.task_done()
