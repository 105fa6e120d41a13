"""What handlers work with: settings, the transcript store, running turns, and the way out to the client."""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from typing import TYPE_CHECKING, Any

from server.agent.remembered import RememberedApprovals, load_remembered
from server.agent.turns import TurnManager
from server.agent.views import forget_view_state
from server.artifacts import ArtifactStore
from server.checkpoints import Blobs
from server.config import Settings
from server.tools.processes import ProcessGroups
from server.transcript import StorageFailure, Store
from server.transcript.drafts import Lease

if TYPE_CHECKING:
    from server.app import ThreadlineServer

log = logging.getLogger(__name__)


class Runtime:
    def __init__(self, settings: Settings, server: ThreadlineServer):
        self.base_settings = settings
        self.settings = settings
        self.server = server
        self.turns = TurnManager()
        self.processes = ProcessGroups()
        self.providers: dict[tuple, Any] = {}
        self.calibrations: dict[str, Any] = {}
        self._remembered: dict[str, RememberedApprovals] = {}  # "allow always" grants, per session
        self.session_totals: dict[str, Any] = {}
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
        from server.context import estimate_message_tokens

        self._store = await Store.open(self.settings.database_path, estimate=estimate_message_tokens)
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
        for provider in self.providers.values():
            await provider.aclose()
        if self._store is not None:
            await self._store.close()
            self._store = None
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def configure(self, options: dict[str, Any]) -> None:
        """Apply ``initializationOptions`` to this connection's settings."""
        self.settings = self.base_settings.with_initialization_options(options)

    def notify(self, method: str, params: Any) -> None:
        self.server.notify(method, params)

    async def ask_client(self, method: str, params: Any) -> Any:
        """A server -> client request. If the asker is cancelled (the turn ended), the client is told with
        ``$/cancelRequest`` so it can withdraw the question (an approval prompt, say)."""
        msg_id = str(uuid.uuid4())
        future = self.server.protocol.send_request(method, params, msg_id=msg_id)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self.server.protocol._request_futures.pop(msg_id, None)
            self.server.notify("$/cancelRequest", {"id": msg_id})
            raise

    async def remembered_approvals(self, session_id: str) -> RememberedApprovals:
        """The session's "allow always" grants, loaded from its events once per connection."""
        if session_id not in self._remembered:
            loaded = await load_remembered(self.store, session_id)
            self._remembered.setdefault(session_id, loaded)
        return self._remembered[session_id]

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
        forget_view_state(self.store, session_id)
        self._remembered.pop(session_id, None)
        self.session_totals.pop(session_id, None)
