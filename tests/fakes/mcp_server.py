"""A small real MCP server (the official SDK's ``MCPServer``, FastMCP's name in mcp 2) for the MCP tests.

``python -m tests.fakes.mcp_server`` serves stdio. Behaviour the tests need comes from the environment:
``FAKE_MCP_START_DELAY`` (seconds before serving), ``FAKE_MCP_FAIL_START=1`` (exit at once with a message on
stderr), ``FAKE_MCP_PIDFILE`` (append this process's pid, so a test can check nothing outlives the server).
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import time

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

mcp = MCPServer("fake")


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
def big(kilobytes: int) -> str:
    """Return that many kilobytes of numbered lines."""
    lines, size, i = [], 0, 0
    while size < kilobytes * 1024:
        line = f"line {i:06d} " + "x" * 50
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


@mcp.tool()
def huge(megabytes: int) -> str:
    """Return that many megabytes of text (the SDK sends it twice: in content and in structuredContent)."""
    line = "0123456789" * 10 + "\n"
    return line * (megabytes * 1024 * 1024 // len(line))


@mcp.tool()
def fail(message: str) -> str:
    """Always fails (the result has isError set)."""
    raise ValueError(message)


@mcp.tool()
def crash() -> str:
    """Exit the server process without answering."""
    os._exit(3)


@mcp.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "done"


@mcp.tool()
def env_digest(name: str) -> str:
    """The SHA-256 of one environment variable of this server (so a test checks a secret without showing it)."""
    return hashlib.sha256(os.environ.get(name, "<unset>").encode()).hexdigest()


@mcp.tool()
def pixel() -> Image:
    """A 1x1 PNG."""
    return Image(
        data=base64.b64decode(
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
        ),
        format="png",
    )


@mcp.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


def main() -> None:
    if os.environ.get("FAKE_MCP_PIDFILE"):
        with open(os.environ["FAKE_MCP_PIDFILE"], "a") as fh:
            # The pid /proc knows it by: inside the server's PID namespace getpid() is not the host's pid
            fh.write(f"{os.readlink('/proc/self')}\n")
    if os.environ.get("FAKE_MCP_FAIL_START") == "1":
        print("fake MCP server: refusing to start (FAKE_MCP_FAIL_START)", file=sys.stderr)
        sys.exit(2)
    time.sleep(float(os.environ.get("FAKE_MCP_START_DELAY") or 0))
    mcp.run("stdio")


if __name__ == "__main__":
    main()
