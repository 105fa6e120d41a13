"""The handler table: ``@reads("name")`` or ``@mutates("name")`` registers a wire method's handler.

Every handler declares which it is (as ruff's server does): a read answers from what is stored and held and never
writes to the store; a mutation may. The edge enforces it (``server.edge.dispatch``): a read that writes fails loudly.
Handlers are plain ``async def handler(core: Core, params: ParamsStruct) -> ResultStruct`` functions; they know
nothing about framing, pygls or wire codes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol import METHODS

if TYPE_CHECKING:
    from server.services.core import Core

HandlerFn = Callable[["Core", Any], Awaitable[Any]]


@dataclass(frozen=True)
class Handler:
    name: str
    run: HandlerFn
    mutates: bool


HANDLERS: dict[str, Handler] = {}


def _register(name: str, mutates: bool) -> Callable[[HandlerFn], HandlerFn]:
    if name not in METHODS:
        raise KeyError(f"{name} is not a protocol method")

    def register(fn: HandlerFn) -> HandlerFn:
        HANDLERS[name] = Handler(name, fn, mutates)
        return fn

    return register


def reads(name: str) -> Callable[[HandlerFn], HandlerFn]:
    """Register the handler of ``name``, a method that never writes to the store."""
    return _register(name, mutates=False)


def mutates(name: str) -> Callable[[HandlerFn], HandlerFn]:
    """Register the handler of ``name``, a method that may write to the store."""
    return _register(name, mutates=True)
