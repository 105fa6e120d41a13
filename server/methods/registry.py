"""The handler table: ``@reads("name")`` or ``@mutates("name")`` registers a wire method's handler.

Every handler declares what it may do (as ruff's and Codex's servers do): a read answers from what is stored and
held and never writes to the store; a mutation may; an ``exclusive`` mutation has its session to itself: it is
refused while a turn runs or waits there, and no turn starts in the session until it ends. ``Handler.call`` enforces
both for every front end that goes through the table: a read that writes fails loudly (it is a bug, not the
request's fault). ``submitTurn`` needs no declaration: the turn it starts is the session's one running turn
(``server.agent.turns.SessionTurns``). Handlers are plain ``async def handler(core: Core, params: ParamsStruct) ->
ResultStruct`` functions; they know nothing about framing, pygls or wire codes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from protocol import METHODS
from server.transcript.store import read_only

if TYPE_CHECKING:
    from server.services.core import Core

HandlerFn = Callable[["Core", Any], Awaitable[Any]]


@dataclass(frozen=True)
class Handler:
    name: str
    run: HandlerFn
    mutates: bool
    exclusive: bool = False  # the session's to itself: no turn runs or starts there meanwhile

    async def call(self, core: Core, params: Any) -> Any:
        """Run the handler as it declared itself (``params`` already decoded)."""
        if self.exclusive:
            with core.sessions.get(params.session_id).turns.exclusive(self.name):
                return await self.run(core, params)
        if self.mutates:
            return await self.run(core, params)
        with read_only(self.name):
            return await self.run(core, params)


HANDLERS: dict[str, Handler] = {}


def _register(name: str, mutates: bool, exclusive: bool = False) -> Callable[[HandlerFn], HandlerFn]:
    if name not in METHODS:
        raise KeyError(f"{name} is not a protocol method")
    if exclusive and "session_id" not in {f.name for f in msgspec.structs.fields(METHODS[name].params)}:
        raise TypeError(f"{name} takes no session: it cannot have one to itself")

    def register(fn: HandlerFn) -> HandlerFn:
        HANDLERS[name] = Handler(name, fn, mutates, exclusive)
        return fn

    return register


def reads(name: str) -> Callable[[HandlerFn], HandlerFn]:
    """Register the handler of ``name``, a method that never writes to the store."""
    return _register(name, mutates=False)


def mutates(name: str, *, exclusive: bool = False) -> Callable[[HandlerFn], HandlerFn]:
    """Register the handler of ``name``, a method that may write to the store; ``exclusive``: with its session
    to itself (refused with ``TurnAlreadyRunning`` while a turn runs or waits there)."""
    return _register(name, mutates=True, exclusive=exclusive)
