"""The running MCP servers of this process, shared by the sessions whose configuration is the same.

A session ``use``s its servers (they start then); a server no session uses any more is stopped, one that no turn
has used for ``idle_stop_s`` is stopped too (the next turn or call starts it again), and ``close`` stops every
one at server exit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.mcp.config import McpServerConfig

if TYPE_CHECKING:  # the MCP SDK loads with the first server started, not with the server (see service.py)
    from server.mcp.connection import Launch, McpConnection

IDLE_STOP_S = 600.0
StatusListener = Callable[["McpConnection", list[str]], None]  # the connection, the ids of the sessions using it


class McpManager:
    def __init__(
        self, log_dir: Path, on_status: StatusListener, idle_stop_s: float = IDLE_STOP_S, launch: Launch | None = None
    ):
        self._log_dir = log_dir
        self._launch = launch
        self.idle_stop_s = idle_stop_s
        self._reaper: asyncio.Task[Any] | None = None
        self._on_status = on_status
        self._connections: dict[str, McpConnection] = {}
        self._users: dict[str, set[str]] = {}  # config key -> session ids
        self._by_session: dict[str, dict[str, str]] = {}  # session id -> server name -> config key

    def use(self, session_id: str, configs: Iterable[McpServerConfig]) -> list[McpConnection]:
        """Start (or share) these servers for the session; servers it used before and not now are released."""
        wanted = {c.name: c for c in configs if c.enabled}
        previous = self._by_session.get(session_id, {})
        self._by_session[session_id] = {name: c.key for name, c in wanted.items()}
        for key in set(previous.values()) - {c.key for c in wanted.values()}:
            self._drop_user(key, session_id)
        connections = []
        for config in wanted.values():
            conn = self._connections.get(config.key)
            if conn is None:
                from server.mcp.connection import McpConnection

                conn = self._connections[config.key] = McpConnection(config, self._log_dir, self._changed, self._launch)
            users = self._users.setdefault(config.key, set())
            joined = session_id not in users
            users.add(session_id)
            if joined and conn.state != "stopped":
                self._on_status(conn, [session_id])  # a session joining a running (or failed) server is told
            conn.start()
            connections.append(conn)
        self._start_reaper()
        return connections

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap(), name="mcp-idle-reaper")

    async def _reap(self) -> None:
        """Stop servers no call or turn has used for ``idle_stop_s`` (they keep their place and restart on use)."""
        while self._connections:
            await asyncio.sleep(min(60.0, self.idle_stop_s / 2))
            now = asyncio.get_running_loop().time()
            idle = [
                c for c in self._connections.values() if c.state == "ready" and now - c.last_used > self.idle_stop_s
            ]
            await asyncio.gather(*(c.stop() for c in idle), return_exceptions=True)

    def connection(self, session_id: str, server: str) -> McpConnection | None:
        key = self._by_session.get(session_id, {}).get(server)
        return self._connections.get(key) if key else None

    def all(self) -> list[McpConnection]:
        return list(self._connections.values())

    def release(self, session_id: str) -> None:
        """The session is gone (deleted): stop what only it used."""
        for key in self._by_session.pop(session_id, {}).values():
            self._drop_user(key, session_id)

    def _drop_user(self, key: str, session_id: str) -> None:
        users = self._users.get(key, set())
        users.discard(session_id)
        if not users:
            self._users.pop(key, None)
            conn = self._connections.pop(key, None)
            if conn is not None:
                asyncio.get_running_loop().create_task(conn.stop())

    def _changed(self, conn: McpConnection) -> None:
        self._on_status(conn, sorted(self._users.get(conn.config.key, ())))

    async def close(self) -> None:
        """Server exit: stop every server (the SDK kills each stdio server's process group)."""
        connections, self._connections = list(self._connections.values()), {}
        if self._reaper is not None:
            self._reaper.cancel()
        self._users.clear()
        self._by_session.clear()
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)
