"""The pygls application: LSP lifecycle, our methods registered as thin features, and the I/O loops.

pygls supplies the lifecycle, request futures, cancellation and outgoing requests; framing is ours
(``server.edge.transport``) so that every message is bounded and every malformed one is answered.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any

import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from server import __version__
from server.config import Settings
from server.edge.core import Endpoint, TokenRefused
from server.edge.dispatch import note_mcp_secrets, note_secrets
from server.edge.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from server.edge.hub import Hub
from server.edge.rpc import QuietStructuring, structuring_problem, to_rpc_error, with_data_code
from server.edge.transport import PREAUTH_MAX_BYTES, FrameError, read_messages
from server.errors import InvalidParams
from server.methods.registry import HANDLERS
from server.runtime import Runtime

log = logging.getLogger(__name__)


class _ExpectedErrors(logging.Filter):
    """pygls logs every error response with a traceback; ours are answers, not faults."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, JsonRpcException) or exc.code == INTERNAL_ERROR


logging.getLogger("pygls.protocol.json_rpc").addFilter(_ExpectedErrors())
logging.getLogger("pygls.protocol.json_rpc").addFilter(QuietStructuring())


def _converter() -> Any:
    """Keep params/results of our own methods as plain dicts (pygls turns them into namedtuples)."""
    conv = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        names = [a.name for a in cls.__attrs_attrs__]
        conv.register_structure_hook(cls, lambda obj, c, names=names: c(**{n: obj.get(n) for n in names}))
    return conv


class ThreadlineProtocol(LanguageServerProtocol):
    """pygls's protocol with the few of its internals we need wrapped here, once (STYLE: no framework private
    attributes elsewhere): sending a JSON-RPC object as it is, answering with an error, forgetting a request we
    stopped waiting for, and whether ``shutdown`` was received."""

    def __init__(self, server: ThreadlineServer, converter: Any) -> None:
        super().__init__(server, converter)
        self.threadline_server = server  # pygls keeps it privately, typed as a LanguageServer

    def send_payload(self, payload: dict[str, Any]) -> None:
        """Write one JSON-RPC object as it is (no lsprotocol typing)."""
        self._send_data(payload)

    def reply_error(self, msg_id: Any, error: Any) -> None:
        self._send_response(msg_id, error=error)

    def _send_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        """Every answer pygls sends passes here: its own -32602s get the ``data.code`` ours carry."""
        super()._send_response(msg_id, result, with_data_code(error))

    def forget_request(self, msg_id: str) -> None:
        """Stop waiting for the answer to a server -> client request (a late answer is then ignored)."""
        self._request_futures.pop(msg_id, None)

    @property
    def shutting_down(self) -> bool:
        return bool(getattr(self, "_shutdown", False))

    def _serialize_message(self, data: Any) -> Any:
        if isinstance(data, msgspec.Struct):
            return msgspec.to_builtins(data)
        return super()._serialize_message(data)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"threadline": self.threadline_server.endpoint.capabilities()}
        return result

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls cancels every request in flight at ``shutdown``. Under the daemon a client's shutdown detaches
        it (B-DAEMON-1): the turns its ``submitTurn`` requests started go on, so their handlers are kept out."""
        self.threadline_server.endpoint.shutdown()
        if self.threadline_server.shared is None:
            return (yield from super().lsp_shutdown(*args))
        running = {k: f for k, f in self._request_futures.items() if isinstance(f, asyncio.Task)}
        for key in running:
            del self._request_futures[key]
        return (yield from super().lsp_shutdown(*args))

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        self.threadline_server.request_exit(0 if self.shutting_down else 1)

    def handle_message(self, message: Any) -> Any:
        gate = self.threadline_server.gate(message)
        if gate is not None:
            if getattr(message, "id", None) is not None:
                self.reply_error(message.id, gate.to_response_error())
            else:  # a notification is never answered; before initialize (or after shutdown) it is dropped
                log.warning("dropped notification %s: %s", getattr(message, "method", "?"), gate.message)
            return
        super().handle_message(message)


@dataclass
class Shared:
    """What the daemon's connections share (B-DAEMON-1): one runtime (store, sessions, turns) and one hub."""

    runtime: Runtime
    hub: Hub


def shared_runtime(settings: Settings) -> Shared:
    runtime: Runtime | None = None

    def unattended(session_id: str, params: dict[str, Any]) -> None:
        if runtime is not None:
            runtime.approval_unattended(session_id, params)

    hub = Hub(unattended=unattended)
    runtime = Runtime(settings, notify=hub.publish)
    return Shared(runtime, hub)


class ThreadlineServer(LanguageServer):
    def __init__(self, settings: Settings, shared: Shared | None = None):
        """Without ``shared``, this connection's own runtime, opened and closed with it (stdio, TCP); with it, the
        daemon's, whose sessions outlive this connection."""
        super().__init__(
            "threadline",
            __version__,
            protocol_cls=ThreadlineProtocol,
            converter_factory=_converter,
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
        )
        self.shared = shared
        if shared is None:
            self.hub = Hub()
            self.runtime = Runtime(settings, notify=self.hub.publish)
        else:
            self.hub, self.runtime = shared.hub, shared.runtime  # the same store, sessions and turns
        self.endpoint = Endpoint(self.runtime, settings, self.hub, self, self.ask_client, daemon=shared is not None)
        self._writer: _Writer | None = None
        self._exit: asyncio.Future[int] | None = None
        self.feature(types.INITIALIZE)(lambda params: self._on_initialize(params))
        for name in HANDLERS:
            self.feature(name)(_feature(name))

    @property
    def wire(self) -> ThreadlineProtocol:
        """``protocol`` as the class it is (pygls types it as its base)."""
        protocol = self.protocol
        assert isinstance(protocol, ThreadlineProtocol)
        return protocol

    @property
    def tcp_token(self) -> str | None:
        return self.endpoint.token

    @tcp_token.setter
    def tcp_token(self, token: str | None) -> None:
        self.endpoint.token = token

    @property
    def initialized(self) -> bool:
        return self.endpoint.initialized

    def _on_initialize(self, params: types.InitializeParams) -> None:
        capabilities = getattr(params, "capabilities", None)
        try:
            self.endpoint.initialize(params.initialization_options, getattr(capabilities, "experimental", None))
        except TokenRefused as exc:
            # a refused client is disconnected, once its answer has gone out
            asyncio.get_running_loop().call_soon(self.request_exit, 1)
            raise JsonRpcException(code=exc.error.code, message=exc.error.message, data=exc.error.data) from None
        except InvalidParams as exc:
            raise to_rpc_error(exc) from None

    def gate(self, message: Any) -> JsonRpcException | None:
        """The connection gate (``server.edge.gate``; in TCP mode ``initialized`` means authenticated too)."""
        refusal = self.endpoint.refusal(getattr(message, "method", None))
        if refusal is None:
            return None
        return JsonRpcException(code=refusal.code, message=refusal.message, data=refusal.data)

    def max_message_bytes(self) -> int:
        """The message size limit now: small until a TCP client has authenticated (bounded pre-auth buffer)."""
        if self.tcp_token is not None and not self.initialized:
            return min(PREAUTH_MAX_BYTES, self.endpoint.connection.settings.max_message_bytes)
        return self.endpoint.connection.settings.max_message_bytes

    def request_exit(self, code: int) -> None:
        if self._exit is not None and not self._exit.done():
            self._exit.set_result(code)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification as a plain JSON-RPC object (pygls would type it from lsprotocol's table, which
        fails for ``$/cancelRequest`` with dict params and is work we do not need for our own messages)."""
        self.wire.send_payload({"jsonrpc": "2.0", "method": method, "params": msgspec.to_builtins(params)})

    async def ask_client(self, method: str, params: Any) -> Any:
        """A server -> client request. If the asker is cancelled (the turn ended), the client is told with
        ``$/cancelRequest`` so it can withdraw the question (an approval prompt, say)."""
        msg_id, future = self.request(method, params)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self.withdraw(msg_id)
            raise

    # --- as the hub's peer ------------------------------------------------------------------------------

    def send_frame(self, data: bytes) -> None:
        if self._writer is not None:
            self._writer.write(data)

    def request(self, method: str, params: Any) -> tuple[str, Any]:
        msg_id = str(uuid.uuid4())
        return msg_id, self.protocol.send_request(method, params, msg_id=msg_id)

    def withdraw(self, msg_id: str) -> None:
        self.wire.forget_request(msg_id)
        self.notify("$/cancelRequest", {"id": msg_id})

    # --- I/O --------------------------------------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, write: Any, first: dict[str, Any] | None = None) -> int:
        """Serve one connection until EOF or ``exit``; returns the process exit code.

        ``first`` is a message already read from ``reader`` (TCP's doorman reads the ``initialize``), handled
        before anything else the connection sends."""
        self._exit = asyncio.get_running_loop().create_future()
        self._writer = _Writer(write)
        self.protocol.set_writer(self._writer)
        if self.shared is None:
            await self.runtime.open()
        self.hub.join(self, everything=self.shared is None)
        if first is not None:
            self._deliver(first)
        reading = asyncio.create_task(read_messages(reader, self._deliver, self._reject, self.max_message_bytes))
        try:
            either: list[asyncio.Future[Any]] = [reading, self._exit]
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            reading.cancel()
            self.hub.leave(self)  # detached: under the daemon its turns go on, its approvals wait for others
            if self.shared is None:
                await self.runtime.close()
        return self._exit.result() if self._exit.done() else 0

    def _deliver(self, data: dict[str, Any]) -> None:
        if "method" in data and "id" in data and data["id"] is None:
            # JSON-RPC: a request's id is a string or number; ``"id": null`` is neither a request nor a
            # notification, and must not slip past the gate as one.
            self._reject(FrameError(INVALID_REQUEST, "invalid request: id must be a string or an integer, not null"))
            return
        if data.get("method") == types.INITIALIZE:
            note_secrets(data.get("params"))  # before anything (pygls at DEBUG) can log the message
        elif data.get("method") == "createSession":
            note_mcp_secrets(data.get("params"))
        try:
            message = self.protocol.structure_message(data)
        except JsonRpcException as exc:
            problem = structuring_problem(exc.__cause__) or exc.message
            self._reject(FrameError(exc.code, f"invalid params: {problem}", data.get("id"), data=exc.data))
            return
        self.protocol.handle_message(message)

    def _reject(self, exc: FrameError) -> None:
        log.warning("rejected message: %s", exc.message)
        if exc.msg_id is None and exc.code not in (PARSE_ERROR, INVALID_REQUEST):
            return
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.code == INVALID_PARAMS:  # params pygls could not structure (``initialize``'s are lsprotocol's)
            error["data"] = exc.data if isinstance(exc.data, dict) else {"code": InvalidParams.code}
        self.wire.send_payload({"jsonrpc": "2.0", "id": exc.msg_id, "error": error})


def _feature(name: str) -> Callable[[ThreadlineServer, Any], Awaitable[Any]]:
    """pygls's feature for method ``name``: the connection's endpoint runs it; its errors become pygls's."""

    async def feature(ls: ThreadlineServer, params: Any) -> Any:
        try:
            return await ls.endpoint.call(name, params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = to_rpc_error(exc)
            if error.code == INTERNAL_ERROR:
                log.error("%s failed", name, exc_info=exc)
            raise error from None

    feature.__name__ = f"handle_{name}"
    return feature


class _Writer:
    """pygls' writer interface over a plain ``write(bytes)`` (its frames are ASCII JSON, so lengths hold); the
    hub writes its own frames, counted in bytes, through the same writer, so the order holds too."""

    def __init__(self, write: Callable[[bytes], Any]) -> None:
        self.write = write

    def close(self) -> None:
        pass
