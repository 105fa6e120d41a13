"""One running MCP server, reached through the official SDK (``mcp.client``): start, watch, restart, stop.

An owner task holds the SDK's transport and ``ClientSession`` (anyio context managers must be left by the task
that entered them); other tasks call tools through the session. A server that exits, or stops answering pings, is
restarted with exponential backoff, up to ``MAX_FAILURES`` failures in a row; then it stays ``failed`` until a
session needs it again. Stopping leaves the transport's context, which for stdio kills the server's process group
(the SDK starts it in its own session).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
from mcp import types as mt
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.client.streamable_http import streamable_http_client

from server.errors import McpConfigError
from server.mcp.config import McpServerConfig, expand
from server.mcp.stdio import TOO_LARGE, bounded_stdio_client
from server.private_files import open_private
from server.sandbox.policy import build_policy, default_deny_read
from server.sandbox.runner import private_tmpdir, support
from server.sandbox.start import Confine, Contain
from server.security.secret_env import handed_over

log = logging.getLogger(__name__)

# How a start is born inside the server's PID namespace (``ProcessGroups.preexec``, B-PROC-1): it ends with the server
Launch = Contain
State = Literal["stopped", "starting", "ready", "failed"]
MAX_FAILURES = 4
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0
PING_INTERVAL_S = 5.0
STABLE_AFTER_S = 60.0  # ready this long: earlier failures are forgiven


class McpCallFailed(Exception):
    """A tool call that produced no result: timeout, dead server, protocol error. The message is for the model."""


@dataclass(frozen=True)
class ServerTool:
    name: str  # as the server names it
    description: str
    input_schema: dict[str, Any]


class McpConnection:
    def __init__(
        self,
        config: McpServerConfig,
        log_dir: Path,
        on_change: Callable[[McpConnection], None],
        launch: Launch | None = None,
    ):
        self.config = config
        self._contain = launch  # a stdio server starts inside the server's PID namespace: it ends with the server
        self.state: State = "stopped"
        self.reason: str | None = None
        self.tools: list[ServerTool] = []
        self.restarts = 0
        self._log_dir = log_dir
        self._on_change = on_change
        self._session: ClientSession | None = None
        self._task: asyncio.Task[Any] | None = None
        self._scope: anyio.CancelScope | None = None  # the owner task's; cancelled to stop it
        self._lost = asyncio.Event()
        self._settled = asyncio.Event()  # set when the current attempt ended in ready or failed
        self._changed = asyncio.Event()  # set (and replaced) at every state change
        self._secrets: tuple[str, ...] = ()
        self.last_used = 0.0  # loop time of the last start or call (the manager stops idle servers)

    # --- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the owner task unless it is running; a server that gave up is tried again."""
        self.last_used = asyncio.get_running_loop().time()
        if self._task is not None and not self._task.done():
            return
        self._settled.clear()
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.config.name}")

    async def wait_settled(self, timeout: float) -> bool:
        """Wait until the server is ready or has failed (True), or ``timeout`` passes (False)."""
        try:
            await asyncio.wait_for(self._settled.wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def stop(self) -> None:
        """Stop the owner task through its anyio cancel scope, not ``Task.cancel()``: the SDK shields the stdio
        shutdown (close stdin, wait, kill the process group) from anyio cancellation, which a native cancel can
        cut short, leaving the server running."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            if self._scope is not None:
                self._scope.cancel()
            else:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._session = None
        self._set("stopped", None)

    async def _own(self) -> None:
        with anyio.CancelScope() as self._scope:
            await self._serve_with_restarts()

    async def _serve_with_restarts(self) -> None:
        failures = 0
        while True:
            self._set("starting", None)
            ready_at = None
            try:
                ready_at = await self._serve_once()
                reason = "the server closed the connection"
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 -- ExceptionGroups from anyio task groups included
                reason = self.mask(describe(exc) + self._stderr_tail(ready_at is None))
            self._session = None
            if self._scope is not None and self._scope.cancel_called:
                return  # stopped: a cancellation wrapped in an exception group lands here
            loop = asyncio.get_running_loop()
            failures = 1 if ready_at is not None and loop.time() - ready_at > STABLE_AFTER_S else failures + 1
            if failures >= MAX_FAILURES:
                self._set("failed", f"{reason} (gave up after {failures} failures in a row)")
                return
            delay = min(BACKOFF_MAX_S, BACKOFF_START_S * 2 ** (failures - 1))
            self.restarts += 1
            self._set("failed", f"{reason}; restarting in {delay:.1f} s")
            await asyncio.sleep(delay)

    async def _serve_once(self) -> float | None:
        """Connect, list the tools, then watch the connection; returns when it is lost (with when it was ready)."""
        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport(stack))
            session = await stack.enter_async_context(ClientSession(read, write))
            try:
                async with asyncio.timeout(self.config.startup_timeout_s):
                    await session.initialize()
                    tools = await _list_tools(session)
            except TimeoutError:
                raise McpCallFailed(f"did not start within {self.config.startup_timeout_s:g} s") from None
            self.tools = [
                ServerTool(t.name, t.description or "", t.input_schema)
                for t in tools
                if self.config.allows_tool(t.name)
            ]
            self._session = session
            self._lost.clear()
            ready_at = self.last_used = asyncio.get_running_loop().time()
            self._set("ready", None)
            await self._watch(session)
            return ready_at

    def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        c = self.config
        try:
            # config.toml's servers may name the secrets the server took out of its environment block
            # (``server.security.secret_env``); a project's .mcp.json or a client's never reaches them.
            environ = {**os.environ, **handed_over()} if c.origin == "user" else dict(os.environ)
            env = {k: expand(v, environ) for k, v in c.env}
            headers = {k: expand(v, environ) for k, v in c.headers}
            command = expand(c.command or "", environ)
            args = [expand(a, environ) for a in c.args]
            url = expand(c.url or "", environ)
        except McpConfigError as exc:
            raise McpCallFailed(str(exc)) from None
        self._secrets = tuple(v for v in [*env.values(), *headers.values()] if len(v) >= 4)
        if c.transport == "http":
            client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(c.tool_timeout_s, connect=10.0))
            stack.push_async_callback(client.aclose)  # a client we pass in is ours to close, after the transport
            return streamable_http_client(url, http_client=client)
        confine = None
        if c.sandbox:
            confine, env = self._confined(env)
        log_fd = open_private(self._log_path, os.O_WRONLY | os.O_APPEND)  # what it said: the user's alone
        errlog = stack.enter_context(os.fdopen(log_fd, "a", encoding="utf-8"))
        return bounded_stdio_client(  # not the SDK's stdio_client: its line reader is quadratic (server.mcp.stdio)
            StdioServerParameters(command=command, args=args, env=env or None, cwd=c.cwd),
            errlog=errlog,
            confine=confine,
            contain=self._contain,
        )

    def _confined(self, env: dict[str, str]) -> tuple[Confine, dict[str, str]]:
        """A server that opted in (``sandbox = "workspace-write"``) starts confined (``server.sandbox.start``): writes
        only in its folder and a temp folder of its own, no network, the data folder hidden. Where the sandbox
        cannot be enforced it does not start (never silently unconfined, B-SBX-2)."""
        c = self.config
        found = support()
        if not found.enforced:
            raise McpCallFailed(f"asks for the {c.sandbox} sandbox, which cannot be enforced here: {found.reason}")
        tmp = private_tmpdir(f"mcp-{c.key}")
        home = self._log_dir.parent  # the data folder (mcp-logs lives in it)
        policy = build_policy(
            str(c.sandbox), Path(c.cwd or os.getcwd()), tmp, deny_read=default_deny_read(home, dict(os.environ))
        ).with_nested_git()  # every .git below its folder read-only too (B-SBX-4)
        return Confine(policy, found.abi, found.namespaces), {**get_default_environment(), **env, "TMPDIR": str(tmp)}

    async def _watch(self, session: ClientSession) -> None:
        while True:
            try:
                await asyncio.wait_for(self._lost.wait(), PING_INTERVAL_S)
                return
            except TimeoutError:
                pass
            try:
                await asyncio.wait_for(session.send_ping(), 30)
            except TimeoutError:
                continue  # busy is not dead; a dead server closes its end
            except Exception:  # noqa: BLE001 - any failure of the probe means the server is gone
                return

    def _stderr_tail(self, starting: bool) -> str:
        """The last line the server wrote on stderr, when it failed to start (often the only useful reason)."""
        if not starting or self.config.transport != "stdio":
            return ""
        try:
            with open(self._log_path, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - 1000))
                lines = [ln for ln in fh.read().decode(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return f" (stderr: {lines[-1][:300]})" if lines else ""

    @property
    def _log_path(self) -> Path:
        return self._log_dir / f"{self.config.name}-{self.config.key}.log"

    def _set(self, state: State, reason: str | None) -> None:
        if state == "starting":
            self._settled.clear()
        if state in ("ready", "failed"):
            self._settled.set()
        changed = (state, reason) != (self.state, self.reason)
        self.state, self.reason = state, reason
        self._changed.set()
        self._changed = asyncio.Event()
        if changed:
            self._on_change(self)

    async def _wait_ready(self, timeout: float) -> None:
        """Wait while a start or a restart is under way (a call made during a crash's backoff waits for it)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.state != "ready" and self._task is not None and not self._task.done():
            left = deadline - loop.time()
            if left <= 0:
                return
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                return

    # --- calls --------------------------------------------------------------------------------------

    async def call(self, tool: str, args: dict[str, Any]) -> mt.CallToolResult:
        """Call one tool; ``McpCallFailed`` if no result came (the server is restarted if it died)."""
        if self.state != "ready":
            self.start()
            await self._wait_ready(self.config.startup_timeout_s + BACKOFF_START_S * 2**MAX_FAILURES)
        session = self._session
        if session is None or self.state != "ready":
            raise McpCallFailed(
                f"MCP server {self.config.name!r} is not running" + (f": {self.reason}" if self.reason else "")
            )
        timeout = self.config.tool_timeout_s
        self.last_used = asyncio.get_running_loop().time()
        try:
            result = await asyncio.wait_for(session.call_tool(tool, args), timeout)
        except TimeoutError:
            raise McpCallFailed(
                f"MCP tool {tool!r} of server {self.config.name!r} did not answer within {timeout:g} s"
            ) from None
        except Exception as exc:  # noqa: BLE001 - the SDK raises many kinds; each becomes a failed call
            if getattr(exc, "code", None) == TOO_LARGE:  # an over-long result; the server is fine
                raise McpCallFailed(f"MCP tool {tool!r} of server {self.config.name!r}: {exc}") from None
            self._lost.set()  # the watcher checks the connection at once
            raise McpCallFailed(self.mask(f"MCP server {self.config.name!r}: {describe(exc)}")) from None
        if not isinstance(result, mt.CallToolResult):
            raise McpCallFailed(f"MCP tool {tool!r} answered with an unsupported result")
        return result

    def mask(self, text: str) -> str:
        """Expanded ``env``/``headers`` values never leave in a reason or an error message."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


async def _list_tools(session: ClientSession) -> list[mt.Tool]:
    tools, cursor = [], None
    while True:
        page = await session.list_tools(params=mt.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def describe(exc: BaseException) -> str:
    """The innermost useful message of an exception (anyio wraps failures in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return f"cannot start it: {exc.strerror}: {exc.filename}"
    return text if isinstance(exc, McpCallFailed) else f"{type(exc).__name__}: {text}"
