"""The in-process front end: one client in this very process (``threadline exec``), served without framing,
pygls or a second interpreter.

The client hands JSON-RPC message objects to ``receive`` and gets the server's through ``deliver`` (in the order
they were sent, each on its own turn of the event loop, as if read from a pipe). It is only a pump: behind it is
the stdio server's request path (``server.edge.core``: the gate, ``initialize``, the method table with its reads
and mutations, the approval round trip), the same error edge (``server.edge.errors``), one ``Runtime`` opened and
closed with the connection and a ``Hub`` whose one peer receives every session's updates and approval requests.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
from collections.abc import Callable
from typing import Any

import msgspec

from server.config import Settings
from server.edge.core import Endpoint, MethodNotFound
from server.edge.dispatch import note_secrets
from server.edge.errors import INTERNAL_ERROR, wire_error
from server.edge.gate import error_response
from server.edge.hub import Hub
from server.runtime import Runtime

log = logging.getLogger(__name__)

Deliver = Callable[[dict[str, Any]], None]
METHOD_NOT_FOUND = -32601
REQUEST_CANCELLED = -32800


class LocalServer:
    def __init__(self, settings: Settings, deliver: Deliver) -> None:
        self._deliver = deliver
        self.hub = Hub()
        self.runtime = Runtime(settings, notify=self.hub.publish)
        self.endpoint = Endpoint(self.runtime, settings, self.hub, self, self._ask_client)
        self._running: dict[Any, asyncio.Task[None]] = {}
        self._asked: dict[str, concurrent.futures.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._opened = False

    async def open(self) -> None:
        try:
            await self.runtime.open(warm_search=False)
        except BaseException:
            await self.runtime.close()  # an open store would keep this process alive (aiosqlite's thread)
            raise
        self._opened = True
        self.hub.join(self, everything=True)

    async def close(self) -> None:
        """As the stdio server ends: requests in flight cancelled, then the runtime closed (turns cancelled,
        commands' groups killed, the store closed, the lease released)."""
        self.endpoint.shutdown()
        running = list(self._running.values())
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self.hub.leave(self)
        if self._opened:
            self._opened = False
            await self.runtime.close()

    # --- from the client ------------------------------------------------------------------------------------

    def receive(self, message: dict[str, Any]) -> None:
        method, msg_id = message.get("method"), message.get("id")
        if method is None:
            self._answered(message)
            return
        refusal = self.endpoint.refusal(method)
        if refusal is not None:
            if msg_id is not None:
                self.send(error_response(msg_id, refusal))
            return
        if msg_id is None:
            self._notified(method, message.get("params"))
            return
        task = asyncio.ensure_future(self._answer(msg_id, method, message.get("params")))
        self._running[msg_id] = task
        task.add_done_callback(lambda _: self._running.pop(msg_id, None))

    def _notified(self, method: str, params: Any) -> None:
        if method == "$/cancelRequest" and isinstance(params, dict):
            task = self._running.get(params.get("id"))
            if task is not None:
                task.cancel()

    def _answered(self, message: dict[str, Any]) -> None:
        """An answer to one of our requests (an approval, an editor's question)."""
        future = self._asked.pop(str(message.get("id")), None)
        if future is None or future.done():
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            future.set_exception(RuntimeError(f"the client answered an error: {error.get('message')}"))
        else:
            future.set_result(message.get("result"))

    async def _answer(self, msg_id: Any, method: str, params: Any) -> None:
        response: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        try:
            response["result"] = await self._run(method, params)
        except asyncio.CancelledError:
            response["error"] = {"code": REQUEST_CANCELLED, "message": "request cancelled"}
        except MethodNotFound:
            response["error"] = {"code": METHOD_NOT_FOUND, "message": f"method not found: {method}"}
        except Exception as exc:
            error = wire_error(exc)
            if error.code == INTERNAL_ERROR:
                log.error("%s failed", method, exc_info=exc)
            response["error"] = {"code": error.code, "message": error.message, "data": error.data}
        self.send(response)

    async def _run(self, method: str, params: Any) -> Any:
        if method == "initialize":
            note_secrets(params)
            params = params if isinstance(params, dict) else {}
            client = params.get("capabilities")
            self.endpoint.initialize(
                params.get("initializationOptions"), client.get("experimental") if isinstance(client, dict) else None
            )
            return self.endpoint.initialize_result()
        if method == "shutdown":
            self.endpoint.shutdown()
            return None
        return await self.endpoint.call(method, params)

    # --- to the client (and as the hub's peer) -------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        asyncio.get_running_loop().call_soon(self._deliver, message)

    def send_frame(self, data: bytes) -> None:
        _, _, body = data.partition(b"\r\n\r\n")
        self.send(msgspec.json.decode(body))

    def request(self, method: str, params: Any) -> tuple[str, concurrent.futures.Future[Any]]:
        msg_id = f"local-{next(self._ids)}"
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._asked[msg_id] = future
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": msgspec.to_builtins(params)}
        self.send(message)
        return msg_id, future

    def withdraw(self, msg_id: str) -> None:
        future = self._asked.pop(msg_id, None)
        if future is not None:
            future.cancel()
        self.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}})

    async def _ask_client(self, method: str, params: Any) -> Any:
        """A request to the client (approvals reach it through the hub, ``server.edge.core``)."""
        msg_id, future = self.request(method, params)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            with contextlib.suppress(RuntimeError):  # the loop is closing: nobody is left to tell
                self.withdraw(msg_id)
            raise
