"""The connection's way to ask the editor: what it advertised at ``initialize`` and the bounded requests.

A client error, a malformed answer or no answer within the timeout is ``EditorUnavailable``, whose message the
tools hand to the model as their result: the editor's trouble never fails a turn.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import msgspec

from protocol.editor import EDITOR_REQUESTS, EditorCapabilities

Ask = Callable[[str, Any], Awaitable[Any]]


class EditorUnavailable(Exception):
    """The editor did not answer usefully; the message says why, for the model."""


def parse_capabilities(experimental: Any) -> EditorCapabilities | None:
    """``capabilities.experimental.threadline.editor`` from ``initialize``; None when absent or malformed (a client
    that advertises nothing gets nothing: no tools, no requests)."""
    threadline = experimental.get("threadline") if isinstance(experimental, dict) else None
    raw = threadline.get("editor") if isinstance(threadline, dict) else None
    if not isinstance(raw, dict):
        return None
    try:
        caps = msgspec.convert(raw, EditorCapabilities)
    except msgspec.ValidationError:
        return None
    return caps if any((caps.diagnostics, caps.definition, caps.references, caps.workspace_symbols)) else None


def path_to_uri(path: Path) -> str:
    return path.as_uri()


def uri_to_path(uri: str) -> Path | None:
    """The local path of a ``file://`` URI; None for any other scheme (an untitled buffer, a remote file)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    return Path(path) if os.path.isabs(path) else None


class EditorLink:
    """What the client can answer and how to ask it, with one timeout for every request."""

    def __init__(self, caps: EditorCapabilities, ask: Ask, timeout: float):
        self.caps, self._ask, self.timeout = caps, ask, timeout

    def offers(self, method: str) -> bool:
        return bool(getattr(self.caps, EDITOR_REQUESTS[method][2]))

    async def request(self, method: str, params: msgspec.Struct) -> Any:
        """Ask the editor; the typed result, or ``EditorUnavailable``."""
        result_type = EDITOR_REQUESTS[method][1]
        try:
            raw = await asyncio.wait_for(self._ask(method, msgspec.to_builtins(params)), self.timeout)
        except TimeoutError:
            raise EditorUnavailable(f"the editor did not answer {method} within {self.timeout:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - client error or disconnected client: a tool result, never a crash
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            raise EditorUnavailable(f"the editor could not answer {method}: {message}") from None
        try:
            return msgspec.convert(raw if raw is not None else {}, result_type)
        except msgspec.ValidationError as exc:
            raise EditorUnavailable(f"the editor's answer to {method} is malformed: {exc}") from None
