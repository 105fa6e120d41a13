"""The one request path: what every Threadline connection does with a message once its framing has read it,
whichever pump brought it (pygls over stdio, TCP or the daemon's socket; ``threadline exec`` in process).

A ``ConnectionState`` is one connection's own state over a runtime it shares or owns: its settings (the runtime's, as
its ``initialize`` options change them), its editor link (the client's capabilities), its attachments to sessions
and its way to ask the client. Everything else (store, sessions, turns, processes, MCP servers, models) is the
runtime's, read through to it, never copied.

An ``Endpoint`` is the path itself: the connection gate (``server.edge.gate``), ``initialize``, a method run as
the table declares it (``server.edge.dispatch``: its params decoded, a read under the read-only guard, an
exclusive mutation with its session to itself), the daemon's attach-first rule (B-DAEMON-1) and the approval round
trip through the hub. The pumps only frame, structure and answer; none of them calls a handler itself.
"""

from __future__ import annotations

from typing import Any

import msgspec

import server.methods  # noqa: F401  (registers every handler)
from protocol.updates import InitializationOptions
from server import __version__
from server.config import Settings
from server.edge.dispatch import capabilities, decode_params, note_mcp_secrets, run_handler
from server.edge.errors import WireError
from server.edge.gate import UNAUTHORIZED, gate, token_matches
from server.edge.hub import APPROVAL, Attachments, Hub, Peer
from server.errors import InvalidParams
from server.methods.registry import HANDLERS
from server.services.core import Ask, Clients, Core

# B-DAEMON-1: a connection that submits to (or steers) a session is attached to it first, without a replay: it
# sees the turn it starts from its first update; one that creates a session is attached to the new one.
ATTACHES_FIRST = ("submitTurn", "steerTurn")


class MethodNotFound(Exception):
    """A method the table does not have."""


class TokenRefused(Exception):
    """A connection refused at ``initialize`` (``error``: its answer); the pump closes it once that has gone out."""

    def __init__(self, error: WireError) -> None:
        super().__init__(error.message)
        self.error = error


class ConnectionState(Core):
    """One connection's view of a runtime (see the module's docstring). Never opened nor closed: the runtime is.

    ``Core.__init__`` is deliberately not run: it would build a second set of shared services; what this object
    does not hold itself is the runtime's (``__getattr__``)."""

    def __init__(self, runtime: Core, settings: Settings, ask: Ask, clients: Clients) -> None:
        self.runtime = runtime
        self.base_settings = settings
        self.settings = settings
        self.editor = None
        self.clients = clients
        self._ask = ask

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runtime, name)

    def configure(self, options: InitializationOptions) -> None:
        """Apply ``initializationOptions`` to this connection's settings."""
        self.settings = self.base_settings.with_initialization_options(options)


class Endpoint:
    def __init__(
        self, runtime: Core, settings: Settings, hub: Hub, peer: Peer, ask_peer: Ask, daemon: bool = False
    ) -> None:
        """``runtime``: the daemon's (shared) or this connection's own; ``peer``: this connection as the hub sees
        it; ``ask_peer``: a request to this connection's client (what is not an approval); ``daemon``: the
        connection receives only the sessions it attaches to (else everything, as the one client of stdio)."""
        self.hub, self.daemon, self._ask_peer = hub, daemon, ask_peer
        self.connection = ConnectionState(runtime, settings, self.ask, Attachments(hub, peer))
        self.token: str | None = None  # a network client's: ``initialize`` must carry it
        self.initialized = False
        self.shutting_down = False

    def refusal(self, method: str | None) -> WireError | None:
        """The connection gate: why a message of ``method`` is refused now, or None."""
        return gate(method, initialized=self.initialized, shutting_down=self.shutting_down)

    def initialize(self, options: Any, client_capabilities: Any) -> None:
        """``initialize``: the connection's options (checked, its token too) and the client's capabilities kept;
        ``TokenRefused`` when a network client's token is missing or wrong."""
        try:
            decoded = msgspec.convert(options or {}, InitializationOptions)
        except msgspec.ValidationError as exc:
            raise InvalidParams(f"invalid initializationOptions: {exc}") from None
        if self.token is not None and not token_matches(decoded.token, self.token):
            raise TokenRefused(UNAUTHORIZED)
        self.connection.configure(decoded)
        self.connection.connect_editor(client_capabilities)
        self.initialized = True

    def capabilities(self) -> dict[str, Any]:
        return capabilities(self.connection, self.daemon)

    def initialize_result(self) -> dict[str, Any]:
        """What ``initialize`` answers, for a pump that builds it itself (pygls builds its own around
        ``capabilities``)."""
        return {
            "capabilities": {"experimental": {"threadline": self.capabilities()}},
            "serverInfo": {"name": "threadline", "version": __version__},
        }

    async def call(self, name: str, params: Any) -> Any:
        """Run method ``name`` with raw ``params``; its encoded result, or a domain error for the pump's edge."""
        handler = HANDLERS.get(name)
        if handler is None:
            raise MethodNotFound(name)
        if name == "createSession":
            note_mcp_secrets(params)
        decoded = decode_params(name, params)
        conn = self.connection
        if self.daemon and name in ATTACHES_FIRST:  # on stdio the one client receives everything already
            await conn.store.get_session(decoded.session_id)  # SessionNotFound before any attach
            conn.clients.attach(decoded.session_id, None, replay=False)
        result = await run_handler(handler, conn, decoded)
        if self.daemon and name == "createSession":
            conn.clients.attach(result["sessionId"], 0)  # what its creation announced, then live
        return result

    async def ask(self, method: str, params: Any) -> Any:
        """The approval round trip: an approval goes to the session's attached clients (the hub: the first answer
        wins), anything else (the editor's answers) to this connection's client."""
        if method == APPROVAL:
            return await self.hub.ask(method, params)
        return await self._ask_peer(method, params)

    def shutdown(self) -> None:
        self.shutting_down = True
