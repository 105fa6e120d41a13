"""The composition root: a ``Core`` for one connection, opened on the data folder and closed with the connection.

Only the front ends' entry points (``server.edge.app``, ``server.acp.serve`` and ``server.edge.local``, exec's in
its own process) build one; handlers and services see the ``Core`` it is.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from server.agent.models import ModelSource
from server.agent.view_resume import save_unsaved
from server.agent.views import open_store
from server.artifacts import ArtifactStore
from server.config import Settings
from server.context import Calibration
from server.emit import Emitter, Notify
from server.errors import StorageFailure
from server.patterns.pool import FORK_SERVER
from server.replay import replay_models
from server.services.core import Ask, Core, no_client
from server.services.models import LiveModels
from server.transcript import Store
from server.transcript.drafts import Lease
from server.worktrees.confined import session_sandbox

log = logging.getLogger(__name__)


class Runtime(Core):
    def __init__(
        self, settings: Settings, notify: Notify = no_client, ask: Ask = no_client, models: ModelSource | None = None
    ):
        """``models`` is where turns get their model, chosen once here: given, else a replay when the server was
        started with ``THREADLINE_REPLAY_FILE`` (``threadline replay``), whose recording also answers the tool
        calls, else the live providers the settings name."""
        replay = replay_models(os.environ) if models is None else None
        super().__init__(
            settings,
            models or replay or LiveModels(),
            notify,
            ask,
            recorded_tools=replay.run_tool if replay is not None else None,
        )
        self._lease: Lease | None = None
        self._background: set[asyncio.Task[None]] = set()

    def approval_unattended(self, session_id: str, params: dict[str, Any]) -> None:
        """An approval waits with no client attached: the ``Notification`` hooks run (Claude Code's event), so a
        user can route it to a desktop or a phone."""
        task = asyncio.get_running_loop().create_task(self._notification_hooks(session_id, params))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _notification_hooks(self, session_id: str, params: dict[str, Any]) -> None:
        try:
            stored = await self.store.get_session(session_id)
            emit = Emitter(self.notify, session_id, params.get("turnId"))
            cwd = Path(stored.cwd)
            sandbox = await session_sandbox(self.store, self.settings.sandbox, session_id, cwd)
            hooks = self.hooks.standing(
                cwd, session_id, self.settings.api_keys(), self.store, emit, sandbox, self.processes
            )
            title = params.get("title") or "a tool call"
            fields = {
                "message": f"Threadline needs your permission: {title}",
                "title": "Threadline",
                "notification_type": "permission_prompt",
            }
            await hooks.run("Notification", fields, tool="permission_prompt")
        except Exception:
            log.warning("the Notification hooks of session %s failed", session_id, exc_info=True)

    async def open(self, warm_search: bool = True) -> None:
        """``warm_search``: start the search workers' warm parent now, so the first search does not wait for it;
        ``threadline exec`` leaves it to the first search (a one-turn run may make none, and starting it competes
        with the run's own start-up for the CPU)."""
        self._store = await open_store(self.settings.database_path)
        # B-TOK-3 calibrations as the last server left them, so a restart plans with the same window (B-CACHE-3)
        self.calibrations = {
            model: Calibration(model, factor, samples)
            for model, factor, samples in await self._store.load_calibrations()
        }
        self._artifacts = ArtifactStore(self.settings.artifacts_dir, self._store, self.settings.pattern_timeout_seconds)
        await self._recover_drafts()
        if warm_search:
            FORK_SERVER.get()

    async def _recover_drafts(self) -> None:
        """Answers cut off by a killed server are kept as ``interrupted`` messages (see ``transcript.drafts``)."""
        try:
            self._lease = Lease(self.settings.home / "leases")
        except OSError as exc:
            raise StorageFailure(f"cannot write in the data folder {self.settings.home}: {exc}") from exc
        self.store.owner = self._lease.id
        for msg in await self.store.recover_drafts(self._lease.owner_alive):
            log.warning("kept the partial answer of interrupted turn %s as message %d", msg.turn_id, msg.seq)
        # What the commands of a server that died (SIGKILL, power loss) left running ends now
        self.processes.own(self.settings.home, self._lease.id)
        self.processes.reap_orphans(self._lease.owner_alive)

    async def close(self) -> None:
        """Stop everything this process runs, then close the store and drop the lease, whatever failed before:
        a store left open keeps aiosqlite's (non-daemon) thread, and with it the process, alive."""
        try:
            try:
                await asyncio.gather(*(session.turns.cancel_all() for session in self.sessions.live()))
            finally:
                try:
                    await self.mcp.close()  # every MCP server, told first (the SDK closes its stdin, then kills)
                finally:
                    # then everything else any process started: the PID namespace ends, whatever it held
                    self.processes.kill_all()
                await self.models.aclose()
        finally:
            if self._store is not None:
                store, self._store = self._store, None
                await asyncio.shield(self._close_store(store))  # a cancel arriving now waits, never cuts it
            if self._lease is not None:
                self._lease.release()
                self._lease = None

    async def _close_store(self, store: Store) -> None:
        try:
            await self._save_unsaved(store)
        finally:
            await store.close()

    async def _save_unsaved(self, store: Store) -> None:
        """What reads learned and no write has kept yet (view snapshots, resume points) is kept as the server
        closes: derived data, so a failure only makes the next server read more."""
        for session in self.sessions.live():
            try:
                await save_unsaved(store, session.view)
            except Exception:
                log.warning("could not keep the view snapshot or resume point of session %s", session.id, exc_info=True)
