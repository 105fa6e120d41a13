"""MCP server configuration: ``[mcp_servers.NAME]`` in config.toml, a project's ``.mcp.json``, and the servers a
client passes to ``createSession`` (the ACP shape).

A config keeps ``env`` and ``headers`` as written (``${VAR}`` unexpanded); the values are expanded only when the
server is started (``expanded``), so what is shown, stored or logged never holds the secret a variable names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from server.errors import McpConfigError

Origin = Literal["user", "project", "client"]
Transport = Literal["stdio", "http"]
PROJECT_FILE = ".mcp.json"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
# Variables that make a process (or the interpreter it runs) load code from where they point: an approval names
# them as such, since "allow" then runs that code (PYTHONPATH into the repository ran its code).
CODE_LOADING_VARS = frozenset(
    {
        "PATH",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PYTHONUSERBASE",
        "PYTHONINSPECT",
        "NODE_OPTIONS",
        "NODE_PATH",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "DYLD_INSERT_LIBRARIES",
        "DYLD_LIBRARY_PATH",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "CLASSPATH",
        "BASH_ENV",
        "ENV",
        "GIT_CONFIG_GLOBAL",
        "GIT_EXEC_PATH",
        "npm_config_userconfig",
    }
)


@dataclass(frozen=True)
class McpServerConfig:
    name: str
    origin: Origin
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    enabled: bool = True
    startup_timeout_s: float = 30.0
    tool_timeout_s: float = 120.0
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    sandbox: str | None = None  # a stdio server that opts in runs confined (B-SBX-1): "workspace-write", "read-only"

    @property
    def command_line(self) -> str:
        """What the user approves: the program and its arguments (or the URL), and the names of the variables and
        headers set (never their values, which may be secrets)."""
        if self.transport == "http":
            shown = str(self.url)
            if self.headers:
                shown += " (headers: " + ", ".join(k for k, _ in self.headers) + ")"
            return shown
        line = shlex.join([str(self.command), *self.args])
        if self.env:
            line += " (env: " + ", ".join(k for k, _ in self.env) + ")"
        line += f" (in {self.cwd})" if self.cwd else ""
        return line + (f" (sandbox: {self.sandbox})" if self.sandbox else "")

    @property
    def approval_detail(self) -> str:
        """What the user approves before a project server starts: the command line and every ``env`` value (or
        header) as written. A ``${VAR}`` stays unexpanded (its value may be a secret) and the line says it comes
        from that variable; a variable that makes the process load code is named as such."""
        stdio = self.transport == "stdio"
        lines = [shlex.join([str(self.command), *self.args]) if stdio else str(self.url)]
        if stdio and self.cwd:
            lines.append(f"in {self.cwd}")
        pairs = self.env if stdio else self.headers
        if pairs:
            lines.append("environment:" if stdio else "headers:")
        for name, value in pairs:
            line = f"  {name}={value}"
            hidden = [m.group(1) for m in _VAR.finditer(value)]
            if hidden:
                line += "   (the value of " + ", ".join(f"${v}" for v in hidden) + " from your environment, not shown)"
            if stdio and name in CODE_LOADING_VARS:
                line += "   <- makes the server load code from there"
            lines.append(line)
        return "\n".join(lines)

    @property
    def key(self) -> str:
        """Sessions whose servers have the same key share one running server."""
        fields = [self.name, self.transport, self.command, self.args, self.env, self.cwd, self.url, self.headers]
        raw = json.dumps(fields + ([self.sandbox] if self.sandbox else []), sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def allows_tool(self, tool: str) -> bool:
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools


def expand(value: str, environ: dict[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from the environment; an unset variable without a default is an error."""
    env = os.environ if environ is None else environ

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise McpConfigError(f"environment variable {name} is not set")

    return _VAR.sub(one, value)


def parse_user_servers(table: Any) -> tuple[McpServerConfig, ...]:
    """``[mcp_servers.NAME]`` tables of config.toml; a bad entry raises ``McpConfigError`` naming it."""
    if table is None:
        return ()
    if not isinstance(table, dict):
        raise McpConfigError("mcp_servers must be a table of [mcp_servers.NAME] entries")
    return tuple(_entry(name, raw, "user") for name, raw in table.items())


def parse_project_servers(data: Any, folder: Path) -> tuple[list[McpServerConfig], list[str]]:
    """A ``.mcp.json`` document (``{"mcpServers": {NAME: {...}}}``); bad entries become problems, not failures."""
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        return [], [f'{PROJECT_FILE}: expected an object with an "mcpServers" object']
    servers, problems = [], []
    for name, raw in data.get("mcpServers", {}).items():
        try:
            servers.append(_entry(name, raw, "project", default_cwd=str(folder)))
        except McpConfigError as exc:
            problems.append(f"{PROJECT_FILE}: {exc}")
    return servers, problems


def read_project_servers(folder: Path) -> tuple[list[McpServerConfig], list[str]]:
    path = folder / PROJECT_FILE
    if not path.is_file() or path.is_symlink():
        return [], []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, json.JSONDecodeError) as exc:
        return [], [f"{PROJECT_FILE}: cannot read it: {exc}"]
    return parse_project_servers(data, folder)


def client_server(raw: dict[str, Any], folder: Path) -> McpServerConfig:
    """One server from ``createSession {mcpServers}`` (ACP: ``env``/``headers`` as ``[{name, value}]``)."""
    entry = dict(raw)
    for key in ("env", "headers"):
        if isinstance(entry.get(key), list):
            entry[key] = {str(p.get("name")): str(p.get("value")) for p in entry[key] if isinstance(p, dict)}
    return _entry(str(entry.pop("name", "")), entry, "client", default_cwd=str(folder))


def _entry(name: str, raw: Any, origin: Origin, default_cwd: str | None = None) -> McpServerConfig:
    if not _NAME.match(name):
        raise McpConfigError(f"server name {name!r} must be 1-64 letters, digits, '_', '-' or '.'")
    if not isinstance(raw, dict):
        raise McpConfigError(f"server {name!r} must be a table/object")
    kind = raw.get("type") or ("http" if raw.get("url") else "stdio")
    if kind in ("streamable-http", "streamableHttp"):
        kind = "http"
    if kind not in ("stdio", "http"):
        raise McpConfigError(f'server {name!r}: type must be "stdio" or "http", got {kind!r}')
    common: dict[str, Any] = dict(
        name=name,
        origin=origin,
        transport=kind,
        enabled=_bool(raw.get("enabled", True), name, "enabled"),
        startup_timeout_s=_seconds(raw.get("startup_timeout_s", 30.0), name, "startup_timeout_s"),
        tool_timeout_s=_seconds(raw.get("tool_timeout_s", 120.0), name, "tool_timeout_s"),
        enabled_tools=_strings(raw["enabled_tools"], name, "enabled_tools") if "enabled_tools" in raw else None,
        disabled_tools=_strings(raw.get("disabled_tools", []), name, "disabled_tools"),
    )
    if kind == "http":
        url = raw.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise McpConfigError(f"server {name!r}: url must be an http(s) URL")
        return McpServerConfig(url=url, headers=_pairs(raw.get("headers", {}), name, "headers"), **common)
    command = raw.get("command")
    if not isinstance(command, str) or not command:
        raise McpConfigError(f"server {name!r}: command must be a non-empty string")
    cwd = raw.get("cwd", default_cwd)
    if cwd is not None and not isinstance(cwd, str):
        raise McpConfigError(f"server {name!r}: cwd must be a string")
    sandbox = raw.get("sandbox")
    if sandbox not in (None, "off", "workspace-write", "read-only"):
        raise McpConfigError(f'server {name!r}: sandbox must be "workspace-write", "read-only" or "off"')
    return McpServerConfig(
        sandbox=None if sandbox == "off" else sandbox,
        command=command,
        args=_strings(raw.get("args", []), name, "args"),
        env=_pairs(raw.get("env", {}), name, "env"),
        cwd=cwd,
        **common,
    )


def _strings(value: Any, name: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"server {name!r}: {key} must be a list of strings")
    return tuple(value)


def _pairs(value: Any, name: str, key: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"server {name!r}: {key} must map names to strings")
    return tuple(sorted((str(k), v) for k, v in value.items()))


def _bool(value: Any, name: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise McpConfigError(f"server {name!r}: {key} must be true or false")
    return value


def _seconds(value: Any, name: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise McpConfigError(f"server {name!r}: {key} must be a positive number of seconds")
    return float(value)
