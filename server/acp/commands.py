"""ACP's ``available_commands_update``: the slash commands of each session this connection opened, sent
after ``session/new`` and ``session/load`` and again whenever a command file is added, removed or edited (a light
poll of the two command folders' listings; no file is read unless something changed)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from acp.schema import AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, UnstructuredCommandInput

from server.acp.client import AcpClient
from server.project.commands import Command, folder_signature, load_commands

POLL_SECONDS = 1.0


def commands_update(commands: list[Command]) -> AvailableCommandsUpdate:
    return AvailableCommandsUpdate(
        session_update="available_commands_update",
        available_commands=[
            AvailableCommand(
                name=c.name,
                description=c.description or c.name,
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint=c.argument_hint))
                if c.argument_hint
                else None,
            )
            for c in sorted(commands, key=lambda c: c.name)
        ],
    )


class CommandWatch:
    """Announces each open session's commands, and announces them again when its command folders change."""

    def __init__(self, client: AcpClient, home: Path, poll_seconds: float = POLL_SECONDS) -> None:
        self.client, self.home, self.poll_seconds = client, home, poll_seconds
        self._seen: dict[str, tuple[object, ...]] = {}  # session -> the folders' signature last announced
        self._task: asyncio.Task[None] | None = None

    def announce(self, session_id: str, cwd: Path) -> None:
        self._seen[session_id] = folder_signature(cwd, self.home)
        self.client.send_update(session_id, commands_update(list(load_commands(cwd, self.home).values())))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._poll(), name="acp command watch")

    async def _poll(self) -> None:
        while self._seen:
            await asyncio.sleep(self.poll_seconds)
            for session_id in list(self._seen):
                mapping = self.client.live.get(session_id)
                if mapping is None:  # closed: no longer watched
                    self._seen.pop(session_id, None)
                    continue
                with contextlib.suppress(OSError):
                    if folder_signature(mapping.cwd, self.home) != self._seen[session_id]:
                        self.announce(session_id, mapping.cwd)
