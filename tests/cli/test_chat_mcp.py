"""``threadline chat`` shows the MCP servers at start and their state changes."""

from __future__ import annotations

import io

from server.cli.chat import Printer, server_lines


def test_servers_are_listed_with_transport_origin_state_and_tools():
    lines = server_lines(
        [
            {"name": "time", "transport": "stdio", "origin": "user", "state": "ready", "tools": [{}, {}]},
            {"name": "proj", "transport": "stdio", "origin": "project", "state": "needsApproval", "tools": []},
            {"name": "web", "transport": "http", "origin": "user", "state": "failed", "tools": [], "reason": "refused"},
        ]
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
