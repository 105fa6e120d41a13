"""What a running turn asks of the world around the loop, in one small Protocol (``TurnPorts``).

The loop (``server.agent.loop.Turn``) holds its collaborators (store, provider, tools, approvals, views) as
objects, and asks everything else that depends on its session through these ports, at the moment it needs it: its
frozen context, the session's MCP tools and hooks, the model chosen for the next call, what was steered in, and
where a call's usage also counts. ``server.services.turn_factory`` supplies the session's ports; ``NO_PORTS``
answers "nothing" to each (a test's or the bench's turn).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from server.context import ViewSettings
    from server.emit import Emitter
    from server.hooks.service import SessionHooks
    from server.providers import ChatProvider
    from server.providers.capabilities import Price
    from server.tools import Tool
    from server.transcript import NewMessage


@dataclass(frozen=True)
class ModelChoice:
    """What one model call uses, chosen just before it (``TurnPorts.choose_model``)."""

    provider: ChatProvider
    settings: ViewSettings  # for this model's context window
    price: Price | None
    approval_policy: str


class TurnPorts(Protocol):
    async def first_messages(self, emit: Emitter) -> list[NewMessage]:
        """The system messages a session's first turn stores before the user's (the frozen context, R-FRZ-1)."""
        ...

    async def session_tools(self, emit: Emitter) -> dict[str, Tool]:
        """The session's MCP tools, started as the turn begins (``server.mcp``)."""
        ...

    async def hooks(self, emit: Emitter) -> SessionHooks | None:
        """The session's hooks, read (and a project's approved) as the turn begins; None: no hook runs."""
        ...

    async def choose_model(self) -> ModelChoice | None:
        """Asked before each model call, so a model or policy switched mid-turn (``updateSession``) applies from
        the next call; None keeps what the turn was built with."""
        ...

    def take_steers(self, last: bool) -> list[str]:
        """What ``steerTurn`` sent since the last call; ``last``: the turn's last look, closing it to steering
        when it finds nothing."""
        ...

    async def count_usage(self, event: dict[str, Any]) -> None:
        """Each model call's stored usage figures, for whoever also counts them (a subagent's parent, B-SUB-1)."""
        ...


class NoPorts:
    """Ports that give nothing: no frozen context, no session tools or hooks, the model the turn was built with."""

    async def first_messages(self, emit: Emitter) -> list[NewMessage]:
        return []

    async def session_tools(self, emit: Emitter) -> dict[str, Tool]:
        return {}

    async def hooks(self, emit: Emitter) -> SessionHooks | None:
        return None

    async def choose_model(self) -> ModelChoice | None:
        return None

    def take_steers(self, last: bool) -> list[str]:
        return []

    async def count_usage(self, event: dict[str, Any]) -> None:
        return None


NO_PORTS: TurnPorts = NoPorts()
