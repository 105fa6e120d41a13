"""What handlers work with: settings, the transcript store, running turns, and the way out to the client."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Awaitable, Callable
from typing import Any

from protocol.updates import InitializationOptions
from server.agent.models import ModelSource
from server.agent.remembered import RememberedApprovals, load_remembered
from server.agent.service import LiveModels
from server.agent.totals import TurnTotals, load_totals
from server.agent.turns import TurnManager
from server.agent.views import open_store
from server.artifacts import ArtifactStore
from server.checkpoints import Blobs
from server.config import Settings
from server.errors import StorageFailure
from server.mcp.service import McpService
from server.replay import replay_models
from server.sessions import Sessions
from server.tools.processes import ProcessGroups
from server.transcript import Store
from server.transcript.drafts import Lease

log = logging.getLogger(__name__)

Notify = Callable[[str, Any], None]
Ask = Callable[[str, Any], Awaitable[Any]]


def _no_client(method: str, params: Any) -> Any:
    raise RuntimeError(f"no client to send {method} to")


class Runtime:
    def __init__(
        self, settings: Settings, notify: Notify = _no_client, ask: Ask = _no_client, models: ModelSource | None = None
    ):
        """``notify`` and ``ask`` are the two ways out to the client (a notification, a request awaiting its
        answer); the front end (pygls, ACP) supplies them. ``models`` is where turns get their model, chosen
        once here: given, else a replay when the server was started with ``THREADLINE_REPLAY_FILE``
        (``threadline replay``), else the live providers the settings name."""
        self.base_settings = settings
        self.settings = settings
        self._notify, self._ask = notify, ask
        self.turns = TurnManager()
        self.processes = ProcessGroups()
        self.models: ModelSource = models or replay_models(os.environ) or LiveModels()
        self.calibrations: dict[str, Any] = {}
        self.sessions = Sessions(busy=self.turns.is_running)  # each session's live state, bounded (server.sessions)
        self.mcp = McpService(settings.home, settings.mcp_servers, self.notify)  # shared MCP servers (server.mcp)
        self._store: Store | None = None
        self._artifacts: ArtifactStore | None = None
        self._lease: Lease | None = None
        self.blobs = Blobs(settings.checkpoints_dir)  # file checkpoint contents (server.checkpoints)

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

    async def open(self) -> None:
        from server.context import Calibration

        self._store = await open_store(self.settings.database_path)
        # B-TOK-3 calibrations as the last server left them, so a restart plans with the same window (B-CACHE-3)
        self.calibrations = {
            model: Calibration(model, factor, samples)
            for model, factor, samples in await self._store.load_calibrations()
        }
        self._artifacts = ArtifactStore(self.settings.artifacts_dir, self._store, self.settings.pattern_timeout_seconds)
        await self._recover_drafts()

    async def _recover_drafts(self) -> None:
        """Answers cut off by a killed server are kept as ``interrupted`` messages (see ``transcript.drafts``)."""
        try:
            self._lease = Lease(self.settings.home / "leases")
        except OSError as exc:
            raise StorageFailure(f"cannot write in the data folder {self.settings.home}: {exc}") from exc
        self.store.owner = self._lease.id
        for msg in await self.store.recover_drafts(self._lease.owner_alive):
            log.warning("kept the partial answer of interrupted turn %s as message %d", msg.turn_id, msg.seq)
        # What the commands of a server that died (SIGKILL, power loss) left running ends now (issue 12)
        self.processes.own(self.settings.home, self._lease.id)
        self.processes.reap_orphans(self._lease.owner_alive)

    async def close(self) -> None:
        try:
            await self.turns.cancel_all()
        finally:
            self.processes.kill_all()  # what commands left running in the background ends with the server
            await self.mcp.close()  # and every MCP server (the SDK kills each stdio server's process group)
        await self.models.aclose()
        if self._store is not None:
            await self._store.close()
            self._store = None
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def configure(self, options: InitializationOptions) -> None:
        """Apply ``initializationOptions`` to this connection's settings."""
        self.settings = self.base_settings.with_initialization_options(options)

    def notify(self, method: str, params: Any) -> None:
        self._notify(method, params)

    async def ask_client(self, method: str, params: Any) -> Any:
        """A server -> client request; cancelling the asker withdraws the question (the front end's business)."""
        return await self._ask(method, params)

    async def remembered_approvals(self, session_id: str) -> RememberedApprovals:
        """The session's "allow always" grants, loaded from its events while the session is held in memory."""
        if self.sessions.get(session_id).approvals is None:
            loaded = await load_remembered(self.store, session_id)
            held = self.sessions.get(session_id)
            if held.approvals is None:  # a concurrent load may have won: keep the first
                held.approvals = loaded
        approvals = self.sessions.get(session_id).approvals
        assert approvals is not None
        return approvals

    async def session_totals(self, session_id: str) -> TurnTotals:
        """The session's running usage totals, summed from its stored ``usage`` events when first needed."""
        if self.sessions.get(session_id).totals is None:
            loaded = await load_totals(self.store, session_id)
            held = self.sessions.get(session_id)
            if held.totals is None:
                held.totals = loaded
        totals = self.sessions.get(session_id).totals
        assert totals is not None
        return totals

    async def delete_session(self, session_id: str) -> None:
        """Remove the session's rows, then its artifact files (R-SRC-1's one exception: an explicit delete).

        A running or starting turn is cancelled first and awaited, so it never calls the model again."""
        await self.store.get_session(session_id)
        await self.turns.stop_for_delete(session_id)
        try:
            await self.store.delete_session(session_id)
        except BaseException:
            self.turns.undelete(session_id)
            raise
        shutil.rmtree(self.settings.artifacts_dir / session_id, ignore_errors=True)
        self.blobs.drop_session(session_id)
        # What this process kept of the session goes too (a new session never inherits it)
        self.sessions.forget(session_id)
        self.mcp.forget_session(session_id)
