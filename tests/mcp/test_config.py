"""MCP configuration: the three sources, ``${VAR}`` expansion, names the providers accept."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from server.config import load_settings
from server.config_file import ConfigError
from server.errors import McpConfigError
from server.mcp.config import client_server, expand, parse_project_servers, parse_user_servers
from server.mcp.names import model_tool_name


def test_user_servers_from_config_toml(tmp_path: Path):
    (tmp_path / "config.toml").write_text("""
[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time"]
tool_timeout_s = 5
disabled_tools = ["convert_time"]

[mcp_servers.remote]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer ${TOKEN}" }
enabled = false
""")
    settings = load_settings({"THREADLINE_HOME": str(tmp_path)})
    time, remote = settings.mcp_servers
    assert (time.name, time.transport, time.command, time.args) == ("time", "stdio", "uvx", ("mcp-server-time",))
    assert time.tool_timeout_s == 5 and not time.allows_tool("convert_time") and time.allows_tool("get_current_time")
    assert remote.transport == "http" and not remote.enabled
    assert "${TOKEN}" not in remote.command_line and "Authorization" in remote.command_line


def test_a_bad_user_entry_is_a_config_error_naming_it(tmp_path: Path):
    (tmp_path / "config.toml").write_text('[mcp_servers.x]\nargs = ["a"]\n')
    with pytest.raises(ConfigError, match="'x': command"):
        load_settings({"THREADLINE_HOME": str(tmp_path)})


def test_project_servers_claude_code_format(tmp_path: Path):
    servers, problems = parse_project_servers(
        {
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "${HOME}"}},
                "web": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
                "bad": {"type": "sse"},
            }
        },
        tmp_path,
    )
    assert [s.name for s in servers] == ["fs", "web"] and servers[0].cwd == str(tmp_path)
    assert servers[0].origin == "project" and problems and "bad" in problems[0]


def test_client_servers_acp_shape(tmp_path: Path):
    stdio = client_server(
        {"name": "a", "command": "srv", "args": [], "env": [{"name": "T", "value": "s3cr3t"}]}, tmp_path
    )
    http = client_server(
        {"type": "http", "name": "b", "url": "http://h/mcp", "headers": [{"name": "X", "value": "y"}]}, tmp_path
    )
    assert stdio.env == (("T", "s3cr3t"),) and http.headers == (("X", "y"),)
    assert "s3cr3t" not in stdio.command_line and "(env: T)" in stdio.command_line  # names only
    with pytest.raises(McpConfigError):
        client_server({"name": "c"}, tmp_path)


def test_expand():
    env = {"A": "1"}
    assert expand("x${A}y${B:-2}", env) == "x1y2"
    with pytest.raises(McpConfigError, match="B is not set"):
        expand("${B}", env)


def test_same_config_same_key_for_sharing():
    a, b = parse_user_servers({"s": {"command": "c"}}), parse_user_servers({"s": {"command": "c"}})
    c = parse_user_servers({"s": {"command": "c", "args": ["x"]}})
    assert a[0].key == b[0].key != c[0].key


@pytest.mark.parametrize(
    "server,tool", [("fs", "read_file"), ("my server", "do.thing/now"), ("s" * 40, "t" * 40), ("ünï", "çødé")]
)
def test_model_tool_names_follow_the_provider_rules(server, tool):
    name = model_tool_name(server, tool)
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) and name.startswith("mcp__")


def test_long_names_stay_distinct():
    assert model_tool_name("s" * 40, "t" * 40 + "a") != model_tool_name("s" * 40, "t" * 40 + "b")


def test_issue28_the_approval_shows_every_value_names_hidden_variables_and_code_loading_ones():
    [stdio], _ = parse_project_servers(
        {
            "mcpServers": {
                "x": {
                    "command": "node",
                    "args": ["srv.js"],
                    "env": {"NODE_OPTIONS": "--require ./evil.js", "TOKEN": "Bearer ${GH_TOKEN}", "MODE": "fast"},
                }
            }
        },
        Path("/repo"),
    )
    shown = stdio.approval_detail
    lines = {line.strip().split("=")[0]: line for line in shown.splitlines() if "=" in line}
    assert "node srv.js" in shown and "in /repo" in shown
    assert "NODE_OPTIONS=--require ./evil.js" in lines["NODE_OPTIONS"] and "load code" in lines["NODE_OPTIONS"]
    assert "TOKEN=Bearer ${GH_TOKEN}" in lines["TOKEN"] and "$GH_TOKEN from your environment, not shown" in shown
    assert "MODE=fast" in lines["MODE"] and "load code" not in lines["MODE"]
    [remote], _ = parse_project_servers(
        {"mcpServers": {"r": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"}}}},
        Path("/repo"),
    )
    assert "Authorization=Bearer ${API_TOKEN}" in remote.approval_detail
    assert "$API_TOKEN" in remote.approval_detail
