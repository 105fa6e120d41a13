"""The server in this process, for ``threadline exec``: the client's ``Connection`` carried to
``server.edge.local`` instead of a child's stdio.

The server is opened by the first message's turn of the event loop, not at ``start``: a run refused for bad usage
never pays for importing it. Messages keep their order both ways; nothing is framed or encoded as JSON text.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import traceback
from typing import TYPE_CHECKING, Any

from server.cli.client import Connection

if TYPE_CHECKING:
    from server.edge.local import LocalServer

LOST = "the server closed the connection"  # what a client of a server that ended reads, as over stdio


class InProcess(Connection):
    def __init__(self) -> None:
        super().__init__()
        self.server: LocalServer | None = None
        self._waiting: list[dict[str, Any]] = []  # sent before the server was open
        self._opening: asyncio.Task[None] | None = None
        self._stopped = False
        self.said_why = False  # the server could not start and said why on stderr (a bad config.toml, say)

    @classmethod
    def start(cls, initialization_options: dict[str, Any] | None = None) -> tuple[InProcess, asyncio.Future[Any]]:
        """As ``Client.start``: ``initialize`` sent without waiting (it is answered once the server is open);
        the caller awaits ``initialized(answer)``. ``server.serve.hide_keys`` must have run first."""
        connection = cls()
        connection._opening = asyncio.ensure_future(connection._open())
        params = {
            "processId": os.getpid(),
            "capabilities": {},
            "rootUri": None,
            "initializationOptions": initialization_options or {},
        }
        _, answer = connection.start_request("initialize", params)
        return connection, answer

    async def _open(self) -> None:
        from server.serve import open_in_process

        try:
            server = await open_in_process(self._dispatch)
        except asyncio.CancelledError:
            self._lose()
            raise
        except Exception:  # noqa: BLE001 - shown, as a server that crashed at its start showed it
            traceback.print_exc()
            self._lose()
            return
        if server is None or self._stopped:  # it said why on stderr, as a server that cannot start does
            self.said_why = server is None
            if server is not None:
                await server.close()
            self._lose()
            return
        self.server = server
        # What start-up made lives as long as the run: kept out of every collection, which may run from now on
        gc.freeze()
        gc.enable()
        waiting, self._waiting = self._waiting, []
        for message in waiting:
            server.receive(message)

    def send(self, message: dict[str, Any]) -> None:
        if self._stopped:  # as to a server that has ended: a request fails at once
            future = self._pending.pop(message.get("id"), None) if "method" in message else None
            if future is not None and not future.done():
                future.set_exception(ConnectionError(LOST))
            return
        if self.server is None:
            self._waiting.append(message)
        else:
            self.server.receive(message)

    def kill(self) -> None:
        """Stop waiting for the server: every request in flight fails as over a lost connection; ``close`` then
        closes what it holds (its turns cancelled, its commands killed)."""
        self._stopped = True
        if self._opening is not None and not self._opening.done() and self.server is None:
            self._opening.cancel()
        self._lose()

    def _lose(self) -> None:
        self._stopped = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError(LOST))
        self._pending.clear()

    async def close(self, timeout: float = 10) -> int:
        """As a client's ``shutdown`` and ``exit``: requests in flight cancelled, the runtime closed."""
        self._stopped = True
        if self._opening is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):  # it failed to open: nothing to close
                await self._opening
        if self.server is not None:
            server, self.server = self.server, None
            try:
                await asyncio.wait_for(server.close(), timeout)
            except TimeoutError:  # a turn that ignores its cancellation: exit anyway, as a killed server would
                os.write(2, f"threadline: the server did not close within {timeout:g} s; stopping anyway\n".encode())
        self._lose()
        return 0
