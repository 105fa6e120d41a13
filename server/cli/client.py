"""A small JSON-RPC client of the Threadline server over a child process's stdio.

The CLI uses it (it dogfoods the protocol rather than opening the store itself), and so do the end-to-end tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Self, TypeVar

import msgspec

from server.security.key_handover import hand_over_keys

Handler = Callable[[str, Any], Awaitable[Any] | Any]
T = TypeVar("T")


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"{message} ({code})")
        self.code, self.message, self.data = code, message, data


USAGE_STATUS = 2  # a server's exit status when its configuration or data folder stops it (``server.serve``)


class ServerRefused(ConnectionError):
    """The server ended at its start for a reason it has already said on stderr (a bad config.toml)."""


class Connection:
    """JSON-RPC as the client speaks it, over whatever carries the messages: requests and their futures, the
    server's notifications and requests (answered by ``on_request``). ``Client`` carries them over a server
    process's stdio; ``server.cli.in_process.InProcess`` to a server in this process (``threadline exec``)."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self.on_notification: Callable[[str, Any], None] | None = None
        self.on_request: Handler | None = None
        self.notifications: list[tuple[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []  # every server -> client request, as received
        self._answering: set[asyncio.Task[None]] = set()
        self._asked: dict[Any, tuple[asyncio.Task[None], dict[str, Any]]] = {}  # request id -> its answering
        # Set: a request the server withdraws (``$/cancelRequest``: another client answered it, or its turn ended)
        # has its handler cancelled, then this is called with the request (unset, the handler goes on)
        self.on_withdrawn: Callable[[dict[str, Any]], None] | None = None
        self.initialize_result: Any = None

    async def initialized(self, answer: asyncio.Future[Any]) -> Self:
        """The end of the handshake ``start`` began: ``initialize``'s answer kept, ``initialized`` sent."""
        self.initialize_result = await answer
        self.notify("initialized", {})
        return self

    async def request(self, method: str, params: Any = None, *, msg_id: Any = None) -> Any:
        msg_id = next(self._ids) if msg_id is None else msg_id
        fut = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await fut

    async def call(self, method: str, params: Any, result: type[T]) -> T:
        """``request``, its result decoded into the protocol's result type for ``method`` (``protocol.methods``):
        the client reads typed fields, and a result that breaks the contract fails here, naming the field."""
        return msgspec.convert(await self.request(method, params), result)

    def start_request(self, method: str, params: Any = None) -> tuple[int, asyncio.Future[Any]]:
        """Send a request without awaiting it; returns its id (for ``$/cancelRequest``) and its future."""
        msg_id = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id, fut

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        """Stop the server at once, without a shutdown (what it left is recovered when a server next opens the
        data folder)."""
        raise NotImplementedError

    async def close(self, timeout: float = 10) -> int:
        raise NotImplementedError

    def _dispatch(self, message: dict[str, Any]) -> None:
        """One message from the server, handled in the order the server sent it."""
        if "method" in message and "id" in message:
            self.server_requests.append(message)
            task = asyncio.create_task(self._answer(message))
            self._answering.add(task)  # held until done: the loop keeps only weak references to tasks
            self._asked[message["id"]] = (task, message)
            task.add_done_callback(self._answering.discard)
            msg_id = message["id"]
            task.add_done_callback(lambda _t: self._asked.pop(msg_id, None))
        elif "method" in message:
            if message["method"] == "$/cancelRequest" and isinstance(message.get("params"), dict):
                self._withdrawn(message["params"].get("id"))
            self.notifications.append((message["method"], message.get("params")))
            if self.on_notification:
                self.on_notification(message["method"], message.get("params"))
        else:
            fut = self._pending.pop(message.get("id"), None)
            if fut is None or fut.done():
                return
            if "error" in message:
                err = message["error"]
                fut.set_exception(RpcError(err.get("code"), err.get("message"), err.get("data")))
            else:
                fut.set_result(message.get("result"))

    def _withdrawn(self, msg_id: Any) -> None:
        asked = self._asked.get(msg_id)
        if asked is not None and not asked[0].done() and self.on_withdrawn is not None:
            asked[0].cancel()
            self.on_withdrawn(asked[1])

    async def _answer(self, message: dict[str, Any]) -> None:
        try:
            if self.on_request is None:
                raise RpcError(-32601, f"client does not handle {message['method']}")
            result = self.on_request(message["method"], message.get("params"))
            if asyncio.iscoroutine(result):
                result = await result
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        except RpcError as exc:
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": exc.code, "message": exc.message}})
        except asyncio.CancelledError:  # the question was withdrawn, or the client is closing
            pass


class Client(Connection):
    def __init__(self, proc: asyncio.subprocess.Process):
        super().__init__()
        self.proc = proc
        self._reader = asyncio.create_task(self._read_loop())

    @classmethod
    async def spawn(
        cls,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
        initialization_options: dict[str, Any] | None = None,
        cwd: str | None = None,
        new_session: bool = False,
        stderr: Any = None,  # where the server's log lines go (None: this process's stderr)
    ) -> Client:
        """Start the server and initialize it."""
        client, answer = await cls.start(env, args, initialization_options, cwd, new_session, stderr)
        try:
            return await client.initialized(answer)
        except ConnectionError:  # it ended at its start: reaped here, not at exit
            status = await client.close()
            if status == USAGE_STATUS:  # a bad config.toml or data folder, said on its stderr in one line
                raise ServerRefused(f"the server did not start (exit {status}): see the line above") from None
            raise

    @classmethod
    async def start(
        cls,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
        initialization_options: dict[str, Any] | None = None,
        cwd: str | None = None,
        new_session: bool = False,
        stderr: Any = None,
    ) -> tuple[Client, asyncio.Future[Any]]:
        """Start the server and send ``initialize`` without waiting: the caller gets ready while the server boots,
        then awaits ``initialized(answer)``. ``new_session``: the server in its own process group, so a terminal's
        Ctrl-C reaches only this client, which can then cancel a turn cleanly instead of the server dying
        mid-answer. Provider keys are handed over a pipe (``server.security.secret_env``), never in its environment."""
        child_env, keys_fd = hand_over_keys({**os.environ, **(env or {})})
        try:
            proc = await asyncio.create_subprocess_exec(
                *(args or [sys.executable, "-m", "server"]),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=child_env,
                cwd=cwd,
                limit=1 << 24,
                start_new_session=new_session,
                pass_fds=() if keys_fd is None else (keys_fd,),
            )
        finally:
            if keys_fd is not None:
                os.close(keys_fd)  # the child holds its own copy
        client = cls(proc)
        _, answer = client.start_request(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": {},
                "rootUri": None,
                "initializationOptions": initialization_options or {},
            },
        )
        return client, answer

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode())

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    def send_raw(self, body: bytes, header: bytes | None = None) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(header if header is not None else b"Content-Length: %d\r\n\r\n" % len(body))
        self.proc.stdin.write(body)

    async def close(self, timeout: float = 10) -> int:
        try:
            if self.proc.returncode is None:
                await asyncio.wait_for(self.request("shutdown"), timeout)
                self.notify("exit")
                await asyncio.wait_for(self.proc.wait(), timeout)
        except (TimeoutError, ConnectionError, RpcError):
            with contextlib.suppress(ProcessLookupError):  # it may have ended already (a bad config.toml)
                self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()
        assert self.proc.returncode is not None  # the process has been waited for
        return self.proc.returncode

    async def _read_loop(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                length = None
                while True:
                    line = await out.readline()
                    if not line:
                        raise EOFError
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value.strip())
                message = json.loads(await out.readexactly(length or 0))
                self._dispatch(message)
        except (EOFError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("the server closed the connection"))
