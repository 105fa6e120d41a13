"""The handler table: ``@reads("name")`` or ``@mutates("name")`` registers a wire method's handler, and must say
what the method's row in ``protocol.methods`` declares (its ``access`` and ``exclusive``), or the import fails.

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
    spec = METHODS[name]  # the contract is the row's (protocol.methods); the decorator must say the same
    if mutates != (spec.access == "mutate") or exclusive != spec.exclusive:
        said = f"@{'mutates' if mutates else 'reads'}{'(exclusive=True)' if exclusive else ''}"
        raise TypeError(
            f"{name}'s handler is {said} but its protocol row says access={spec.access!r}, "
            f"exclusive={spec.exclusive}: change one of them"
        )
    if exclusive and "session_id" not in {f.name for f in msgspec.structs.fields(spec.params)}:
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


def unhandled() -> tuple[list[str], list[str]]:
    """The protocol methods with no handler, and the handlers with no protocol row (both empty once
    ``server.methods`` is imported: ``tests/edge/test_method_contract.py``)."""
    return sorted(set(METHODS) - set(HANDLERS)), sorted(set(HANDLERS) - set(METHODS))
