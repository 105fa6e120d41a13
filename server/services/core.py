"""What the use cases share across sessions: the settings, the store, the live sessions and the ways out.

``server.runtime.Runtime`` builds one ``Core`` per connection and opens and closes what it holds; the front ends
(``server.edge``, ``server.acp``) hand it to the services. A service types it as the Protocol of what it uses
(``server.services.needs``), which the ``Core`` satisfies structurally; it takes a session's handle from
``sessions`` and passes on only the slots and collaborators each step needs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from server.agent.models import ModelSource
from server.artifacts import ArtifactStore
from server.checkpoints import Blobs
from server.config import Settings
from server.context import Calibration
from server.emit import Notify
from server.grounding.link import EditorLink, parse_capabilities
from server.hooks.service import HookService
from server.mcp.service import McpService
from server.sessions import Session, Sessions
from server.tools import ToolRunner
from server.tools.processes import ProcessGroups
from server.transcript import Store, StoredSession

Ask = Callable[[str, Any], Awaitable[Any]]


def no_client(method: str, params: Any) -> Any:
    raise RuntimeError(f"no client to send {method} to")


@dataclass(frozen=True)
class Attached:
    """An attach as it took effect (B-DAEMON-1): the session's last update number then, whether an approval
    waits, and whether updates the client asked for were no longer kept."""

    seq: int
    waiting_for_approval: bool
    truncated: bool


class Clients(Protocol):
    """The connections attached to sessions, as one connection sees them (the edge's hub supplies it)."""

    def attach(self, session_id: str, since_seq: int | None, replay: bool = True) -> Attached: ...

    def detach(self, session_id: str) -> bool: ...

    def attached(self, session_id: str) -> int: ...

    def waiting_for_approval(self, session_id: str) -> bool: ...


class NoClients:
    """A front end without attachments (ACP): nothing is attached, nothing waits."""

    def attach(self, session_id: str, since_seq: int | None, replay: bool = True) -> Attached:
        raise RuntimeError("this front end does not attach connections to sessions")

    def detach(self, session_id: str) -> bool:
        return False

    def attached(self, session_id: str) -> int:
        return 0

    def waiting_for_approval(self, session_id: str) -> bool:
        return False


class Core:
    def __init__(
        self,
        settings: Settings,
        models: ModelSource,
        notify: Notify = no_client,
        ask: Ask = no_client,
        recorded_tools: ToolRunner | None = None,
    ):
        """``notify`` and ``ask`` are the two ways out to the client (a notification, a request awaiting its
        answer); the front end (pygls, ACP) supplies them. ``recorded_tools``: what runs tool calls instead of the
        tools (a replay hands back recorded results); None: tools run for real."""
        self.settings = settings
        self.models = models
        self.recorded_tools = recorded_tools
        self._notify, self._ask = notify, ask
        self.processes = ProcessGroups()
        self.calibrations: dict[str, Calibration] = {}  # B-TOK-3, per model
        # per model: the context window its server stated when it refused a prompt, for every session
        # on that model; each session also keeps it as an event, for a restarted server
        self.server_windows: dict[str, int] = {}
        # shared MCP servers (server.mcp), started inside the server's PID namespace like every process
        self.mcp = McpService(settings.home, settings.mcp_servers, self.notify, self.processes.preexec)
        self.hooks = HookService(settings.home, settings.hooks)  # [[hooks.EVENT]] and project hooks (server.hooks)
        self.sessions = Sessions(
            lambda: self.store, on_forget=lambda session: self.mcp.forget_session(session.id, session.mcp)
        )
        self.blobs = Blobs(settings.checkpoints_dir)  # file checkpoint contents (server.checkpoints)
        self.editor: EditorLink | None = None  # what the client's editor answers; None: nothing
        self.clients: Clients = NoClients()  # this connection's attachments (B-DAEMON-1), set by the edge
        self._store: Store | None = None
        self._artifacts: ArtifactStore | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("the store is not open")
        return self._store

    @property
    def artifacts(self) -> ArtifactStore:
        if self._artifacts is None:
            raise RuntimeError("the store is not open")
        return self._artifacts

    def connect_editor(self, experimental: Any) -> None:
        """Keep what ``initialize``'s ``capabilities.experimental.threadline.editor`` advertised."""
        caps = parse_capabilities(experimental)
        self.editor = None if caps is None else EditorLink(caps, self.ask_client, self.settings.editor_timeout_seconds)

    def notify(self, method: str, params: Any) -> None:
        self._notify(method, params)

    async def ask_client(self, method: str, params: Any) -> Any:
        """A server -> client request; cancelling the asker withdraws the question (the front end's business)."""
        return await self._ask(method, params)

    async def session(self, session_id: str) -> tuple[StoredSession, Session]:
        """The stored session (or ``SessionNotFound``) and its live handle."""
        stored = await self.store.get_session(session_id)
        return stored, self.sessions.get(session_id)
