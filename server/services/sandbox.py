"""A session's sandbox as the use cases need it (B-SBX-1, B-SBX-2): set its mode, read its status, say once when
it cannot be enforced. The mode lives in the session's events (``server.sandbox.mode``), not in live state."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import msgspec

from protocol import updates as u
from protocol.messages import SandboxStatus
from server.emit import Emitter
from server.sandbox.mode import command_sandbox, copy_mode, say_once, session_mode, set_session_mode
from server.services.needs import CoreClient, CoreStore
from server.worktrees.confined import session_sandbox


class SandboxNeeds(CoreStore, CoreClient, Protocol):
    """What the sandbox use case uses of the ``Core``."""


__all__ = ["apply_mode", "copy_mode"]  # copy_mode: a fork keeps its source's mode (forkSession)


async def apply_mode(core: SandboxNeeds, session_id: str, cwd: Path, mode: Any = msgspec.UNSET) -> SandboxStatus:
    """Set the session's mode (``UNSET``: unchanged; None: the default) and return its status now; the first time
    it cannot be enforced a notice says so (stored, and sent to the client)."""
    if mode is not msgspec.UNSET:
        await set_session_mode(core.store, session_id, mode)
    sandbox = await session_sandbox(core.store, core.settings.sandbox, session_id, cwd)
    if notice := await say_once(core.store, sandbox, session_id, None):
        Emitter(core.notify, session_id, None)(u.Notice(level="warning", message=notice))
    return sandbox.status()


async def current_mode(core: SandboxNeeds, session_id: str, cwd: Path) -> tuple[str, SandboxStatus]:
    """The session's sandbox mode and what it means on this machine now (enforced, or why not)."""
    mode = await session_mode(core.store, core.settings.sandbox, session_id)
    return mode, command_sandbox(core.settings.sandbox, session_id, cwd, mode).status()


async def set_mode(core: SandboxNeeds, session_id: str, mode: str) -> None:
    """Store the session's sandbox mode, from its next turn."""
    await set_session_mode(core.store, session_id, mode)
