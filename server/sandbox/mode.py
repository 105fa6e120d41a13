"""A session's sandbox: its mode (stored as ``sandboxMode`` events), its policy, and its status on the wire.

The mode is the session's own (``createSession``/``updateSession {sandbox}``) or the server's default
(``[sandbox] mode``, ``THREADLINE_SANDBOX``, ``initializationOptions.sandbox``); a turn reads it when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from protocol.messages import SandboxMode, SandboxStatus
from server.sandbox.policy import SandboxPolicy, SandboxSettings, build_policy
from server.sandbox.runner import Support, private_tmpdir, support

if TYPE_CHECKING:
    from server.transcript import Store

MODE_EVENT = "sandboxMode"
NOTICE_KEY = "sandbox"  # the key a sandbox notice event carries, so it is said once per session


@dataclass(frozen=True)
class CommandSandbox:
    """What a session's commands run under. ``confines``: they are confined as ``mode`` says; ``must_ask``: the
    mode asks for a sandbox this machine cannot give, so every command asks (B-SBX-2)."""

    mode: str
    policy: SandboxPolicy
    support: Support

    @property
    def confines(self) -> bool:
        return self.mode != "off" and self.support.enforced

    @property
    def must_ask(self) -> bool:
        return self.mode != "off" and not self.support.enforced

    @property
    def applies(self) -> bool:
        """Whether commands start confined: fully, or partly (Landlock without namespaces) while they ask."""
        return self.mode != "off" and (self.support.enforced or self.support.partial)

    def status(self) -> SandboxStatus:
        off = self.mode == "off"
        return SandboxStatus(
            mode=cast(SandboxMode, self.mode),
            enforced=self.confines,
            mechanism="none" if off else self.support.mechanism,
            network=off or self.policy.network,
            reason=None if off or self.support.enforced else self.support.reason,
        )

    def notice(self) -> str | None:
        """The warning said once per session when commands cannot be confined (B-SBX-2), else None."""
        if not self.must_ask:
            return None
        return (
            f"The {self.mode} sandbox cannot be enforced here ({self.support.reason}); "
            "every command will ask before it runs, whatever the approval policy."
        )


async def session_mode(store: Store, settings: SandboxSettings, session_id: str) -> str:
    event = await store.latest_event(session_id, MODE_EVENT, "set")
    mode = event.payload.get("mode") if event is not None else None
    return mode if isinstance(mode, str) else settings.mode


async def set_session_mode(store: Store, session_id: str, mode: str | None) -> None:
    """``mode`` None goes back to the server's default."""
    await store.add_event(session_id, MODE_EVENT, {"set": True, "mode": mode})


async def copy_mode(store: Store, source_id: str, fork_id: str) -> None:
    """A fork keeps its source's sandbox mode (as it keeps its policy and model): never looser by forking."""
    event = await store.latest_event(source_id, MODE_EVENT, "set")
    if event is not None:
        await store.add_event(fork_id, MODE_EVENT, dict(event.payload))


def command_sandbox(settings: SandboxSettings, session_id: str, cwd: Path, mode: str) -> CommandSandbox:
    policy = build_policy(
        mode,
        cwd,
        private_tmpdir(session_id),
        network=settings.network,
        writable_roots=settings.writable_roots,
        deny_read=settings.deny_read,
    )
    return CommandSandbox(mode, policy, support())


async def say_once(store: Store, sandbox: CommandSandbox, session_id: str, turn_id: str | None) -> str | None:
    """Store the sandbox notice the first time this session needs it; returns its text then, else None."""
    text = sandbox.notice()
    if text is None or await store.latest_event(session_id, "notice", NOTICE_KEY) is not None:
        return None
    await store.add_event(session_id, "notice", {"level": "warning", "message": text, NOTICE_KEY: True}, turn_id)
    return text
