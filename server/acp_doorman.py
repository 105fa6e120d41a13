"""``threadline acp`` answers ``initialize`` before it has loaded anything else.

Loading the agent (the ACP SDK's schema, the settings, the services) takes seconds on a loaded machine, and a
client waits for ``initialize``'s answer before it does anything: avante.nvim, which starts its agents as its
sidebar opens, can then split one chat into two sessions (its own race, whose window our start set). The answer
is fixed (the agent's capabilities do not depend on the client's or on the settings), so it is written here, from
the process's first moments, by a thread that reads stdin's first line; everything after that line, and the
whole input when the first line is not a well-formed ``initialize``, goes on to the agent as read
(``server.edge.stdio.stdin_reader`` reads through ``Doorman.read``). ``tests/acp`` checks that this answer is the
one the agent itself gives. This module imports only the standard library and ``server``'s version.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from server import __version__

PROTOCOL_VERSION = 1  # ACP v1 (the SDK's ``acp.PROTOCOL_VERSION``; the test compares them)
CAPABILITIES: dict[str, Any] = {
    "loadSession": True,
    "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
    "mcpCapabilities": {"http": True, "sse": False},
    "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
}
MAX_FIRST_LINE = 1 << 20  # an initialize is small; a longer first line is left for the agent to judge


def initialize_result() -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": CAPABILITIES,
        "authMethods": [],
        "agentInfo": {"name": "threadline", "title": "Threadline", "version": __version__},
    }


def early_answer(line: bytes) -> bytes | None:
    """The answer to ``line`` when it is an ACP ``initialize`` request the agent would accept, else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    msg_id, params = message.get("id"), message.get("params")
    if isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)) or not isinstance(params, dict):
        return None
    version = params.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int):
        return None  # the agent answers what is wrong with it
    answer = {"jsonrpc": "2.0", "id": msg_id, "result": initialize_result()}
    return json.dumps(answer, separators=(",", ":")).encode() + b"\n"


class Doorman:
    """Reads stdin's first line from the start, answers it when it is ``initialize``, then hands stdin on.

    ``out_fd`` is the protocol's stdout (a copy of fd 1 taken before fd 1 becomes stderr): the agent writes there
    too, after this answer, since it answers nothing before reading what follows the first line."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self._left = b""  # what was read past the first line (or the whole input when it was not answered)
        self._done = threading.Event()
        threading.Thread(target=self._first_line, name="acp-initialize", daemon=True).start()

    def _first_line(self) -> None:
        buffer = b""
        try:
            while b"\n" not in buffer and len(buffer) < MAX_FIRST_LINE:
                chunk = os.read(self.in_fd, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
            line, newline, rest = buffer.partition(b"\n")
            answer = early_answer(line) if newline else None
            if answer is not None:
                _write_all(self.out_fd, answer)
                buffer = rest
        except OSError:
            pass  # stdin or stdout went away: the agent meets it in its turn
        finally:
            self._left = buffer
            self._done.set()

    def read(self, size: int) -> bytes:
        """As ``os.read(stdin, size)``: what the first line's reader left first, then stdin."""
        self._done.wait()
        if self._left:
            chunk, self._left = self._left[:size], self._left[size:]
            return chunk
        return os.read(self.in_fd, size)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
