"""What a use case may reach of the ``Core``: five ``Protocol``s, one per kind of collaborator.

``CoreStore`` (settings, store, sessions) is what nearly every use case reads; ``CoreModels``, ``CoreClient``,
``CoreExtensions`` and ``CoreFiles`` are what only some reach. Each service module declares what it uses as a
Protocol built from these (``ModelsNeeds(CoreStore, CoreModels)``, say) and takes that, never the ``Core``: a reader
of the module sees its collaborators in one line, and ``mypy --strict`` refuses a service that reaches for anything
else. The ``Core`` (``server.services.core``) satisfies every one of them structurally; only the front ends, which
hand it over, name it. A service that calls another's function includes that function's needs in its own (mypy
checks that too); a function needing less than its module, and called from elsewhere, says so
(``subagents.task_spec``, ``sessions.update_session``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from server.agent.models import ModelSource
    from server.artifacts import ArtifactStore
    from server.checkpoints import Blobs
    from server.config import Settings
    from server.context import Calibration
    from server.grounding.link import EditorLink
    from server.hooks.service import HookService
    from server.mcp.service import McpService
    from server.sessions import Session, Sessions
    from server.tools import ToolRunner
    from server.tools.processes import ProcessGroups
    from server.transcript import Store, StoredSession


class CoreStore(Protocol):
    """What every use case reads: the settings, the store, and the sessions (stored and live)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> Store: ...

    @property
    def sessions(self) -> Sessions:
        """Every live handle: for what a lookup by id does not cover (a peek, a child's handle, a delete)."""
        ...

    async def session(self, session_id: str) -> tuple[StoredSession, Session]:
        """The stored session and its live handle, by id (``Core.session``)."""
        ...


class CoreModels(Protocol):
    """Which model a session runs on, and what this process learned per model: calibrations (B-TOK-3) and the
    windows servers stated."""

    @property
    def models(self) -> ModelSource: ...

    @property
    def calibrations(self) -> dict[str, Calibration]: ...

    @property
    def server_windows(self) -> dict[str, int]: ...


class CoreClient(Protocol):
    """The ways to the client: a notification, a request awaiting its answer, and what its editor answers."""

    def notify(self, method: str, params: Any) -> None: ...

    async def ask_client(self, method: str, params: Any) -> Any: ...

    @property
    def editor(self) -> EditorLink | None: ...


class CoreExtensions(Protocol):
    """What runs beside a turn: MCP servers, hooks, processes; a replay's recorded tool results (None: tools run
    for real)."""

    @property
    def mcp(self) -> McpService: ...

    @property
    def hooks(self) -> HookService: ...

    @property
    def processes(self) -> ProcessGroups: ...

    @property
    def recorded_tools(self) -> ToolRunner | None: ...


class CoreFiles(Protocol):
    """What is kept beside the transcript: file checkpoint contents and artifacts."""

    @property
    def blobs(self) -> Blobs: ...

    @property
    def artifacts(self) -> ArtifactStore: ...
