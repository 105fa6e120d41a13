"""A real MCP server (the official SDK) with one tool that writes a file: what an opted-in MCP server may write.

``python tests/sandbox/mcp_writer.py`` serves stdio (run by path, so its folder need not be the repository).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("writer")


@mcp.tool()
def write(path: str, text: str) -> str:
    """Write ``text`` to ``path``; the error's text when the write is refused."""
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as exc:
        return f"refused: {exc.strerror}"
    return "written"


if __name__ == "__main__":
    mcp.run("stdio")
