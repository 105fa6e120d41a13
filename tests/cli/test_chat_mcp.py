"""``threadline chat`` shows the MCP servers at start and their state changes."""

from __future__ import annotations

import io

import msgspec

from protocol.mcp import McpServerInfo
from server.cli.chat import Printer, server_lines


def test_servers_are_listed_with_transport_origin_state_and_tools():
    tool = {"name": "t", "modelName": "mcp__time__t"}

    def server(name: str, transport: str, origin: str, state: str) -> dict[str, object]:
        return {"name": name, "transport": transport, "origin": origin, "state": state, "commandLine": "x", "tools": []}

    lines = server_lines(
        msgspec.convert(
            [
                {**server("time", "stdio", "user", "ready"), "tools": [tool, tool]},
                server("proj", "stdio", "project", "needsApproval"),
                {**server("web", "http", "user", "failed"), "reason": "refused"},
            ],
            list[McpServerInfo],
        )
    )
    assert lines == [
        "mcp time [stdio, user]: ready, 2 tools",
        "mcp proj [stdio, project]: needsApproval",
        "mcp web [http, user]: failed (refused)",
    ]


def test_state_changes_are_printed():
    out = io.StringIO()
    Printer(out).update(
        {"kind": "mcpServerStatus", "name": "time", "state": "ready", "transport": "stdio", "tools": ["mcp__time__a"]}
    )
    assert out.getvalue() == "mcp time: ready, 1 tools\n"
