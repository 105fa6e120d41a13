"""What a use case may reach of the ``Core``: one small ``Protocol`` per collaborator.

Each service module declares what it uses as a Protocol built from these (``ModelsNeeds(HasSettings, HasStore,
HasModels)``, say) and takes that, never the ``Core``: a reader of the module sees its collaborators in one line,
and ``mypy --strict`` refuses a service that reaches for anything else. The ``Core`` (``server.services.core``)
satisfies every one of them structurally; only the front ends, which hand it over, name it. A service that calls
another's function includes that function's needs in its own (mypy checks that too); a function needing less than
its module, and called from elsewhere, says so (``subagents.task_spec``, ``sessions.update_session``).
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


class HasSettings(Protocol):
    @property
    def settings(self) -> Settings: ...


class HasStore(Protocol):
    @property
    def store(self) -> Store: ...


class HasSession(Protocol):
    """The stored session and its live handle, by id (``Core.session``)."""

    async def session(self, session_id: str) -> tuple[StoredSession, Session]: ...


class HasSessions(Protocol):
    """Every live handle: for what a lookup by id does not cover (a peek, a child's handle, a delete)."""

    @property
    def sessions(self) -> Sessions: ...


class HasModels(Protocol):
    @property
    def models(self) -> ModelSource: ...


class HasNotify(Protocol):
    """A notification to the client."""

    def notify(self, method: str, params: Any) -> None: ...


class HasAskClient(Protocol):
    """A request to the client, awaiting its answer."""

    async def ask_client(self, method: str, params: Any) -> Any: ...


class HasMcp(Protocol):
    @property
    def mcp(self) -> McpService: ...


class HasHooks(Protocol):
    @property
    def hooks(self) -> HookService: ...


class HasBlobs(Protocol):
    @property
    def blobs(self) -> Blobs: ...


class HasArtifacts(Protocol):
    @property
    def artifacts(self) -> ArtifactStore: ...


class HasEditor(Protocol):
    @property
    def editor(self) -> EditorLink | None: ...


class HasProcesses(Protocol):
    @property
    def processes(self) -> ProcessGroups: ...


class HasRecordedTools(Protocol):
    """A replay's recorded tool results; None: tools run for real."""

    @property
    def recorded_tools(self) -> ToolRunner | None: ...


class HasLearned(Protocol):
    """What this process learned per model: calibrations (B-TOK-3) and the windows servers stated."""

    @property
    def calibrations(self) -> dict[str, Calibration]: ...

    @property
    def server_windows(self) -> dict[str, int]: ...
