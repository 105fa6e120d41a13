"""Hook configuration: ``[[hooks.EVENT]]`` tables in config.toml and in a project's ``.threadline/hooks.toml``.

Each table has ``command`` (run by ``/bin/bash -c`` in the session folder), an optional ``matcher`` (a regular
expression that must match a tool's whole name, for the tool events; absent, ``""`` or ``"*"``: every tool) and
``timeout`` (seconds, default 60) and ``sandbox`` (default true: the hook runs under the session's sandbox, as
``run_command`` does, because what it runs may be a file the agent can change; ``false`` runs it unconfined, and a
project file's approval says so). A project's file is identified by the SHA-256 of its bytes: that is what the
user approves (SPEC B-HOOK-1), so an edited file asks again.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "Stop",
    "Notification",
)
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
MATCHED_EVENTS = (*TOOL_EVENTS, "Notification")  # a Notification's matcher is matched to its notification_type
PROJECT_FILE = ".threadline/hooks.toml"
DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 600.0
MAX_PROJECT_FILE_BYTES = 256 * 1024
Source = Literal["user", "project"]


class HookConfigError(ValueError):
    """A hook table that cannot be used; the message names the table and the field."""


@dataclass(frozen=True)
class HookSpec:
    event: str
    command: str
    source: Source
    matcher: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    sandbox: bool = True

    def matches(self, tool: str | None) -> bool:
        if self.event not in MATCHED_EVENTS or self.matcher in (None, "", "*"):
            return True
        return tool is not None and re.fullmatch(str(self.matcher), tool) is not None


def parse_hooks(tables: Any, source: Source, where: str = "hooks") -> tuple[HookSpec, ...]:
    """The hooks of a ``hooks`` table (``{EVENT: [{command, matcher?, timeout?}, ...]}``), in file order."""
    if tables is None:
        return ()
    if not isinstance(tables, dict):
        raise HookConfigError(f"{where} must be a table of [[{where}.EVENT]] entries")
    specs: list[HookSpec] = []
    for event, entries in tables.items():
        if event not in EVENTS:
            raise HookConfigError(f"{where}.{event}: unknown event; known: {', '.join(EVENTS)}")
        if not isinstance(entries, list):
            raise HookConfigError(f"{where}.{event} must be written [[{where}.{event}]] (a list of tables)")
        for i, entry in enumerate(entries):
            specs.append(_one(entry, event, source, f"{where}.{event}[{i}]"))
    return tuple(specs)


def _one(entry: Any, event: str, source: Source, where: str) -> HookSpec:
    if not isinstance(entry, dict):
        raise HookConfigError(f"{where} must be a table")
    unknown = set(entry) - {"command", "matcher", "timeout", "sandbox"}
    if unknown:
        raise HookConfigError(f"{where}: unknown field {sorted(unknown)[0]}; known: command, matcher, timeout, sandbox")
    sandbox = entry.get("sandbox", True)
    if not isinstance(sandbox, bool):
        raise HookConfigError(f"{where}.sandbox must be true or false")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise HookConfigError(f"{where}.command is required (a non-empty string)")
    matcher = entry.get("matcher")
    if matcher is not None:
        if not isinstance(matcher, str):
            raise HookConfigError(f"{where}.matcher must be a string (a regular expression over tool names)")
        if matcher not in ("", "*"):
            try:
                re.compile(matcher)
            except re.error as exc:
                raise HookConfigError(f"{where}.matcher is not a valid regular expression: {exc}") from None
    timeout = entry.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise HookConfigError(f"{where}.timeout must be a number of seconds in (0, {MAX_TIMEOUT_S:g}]")
    return HookSpec(event, command, source, matcher, float(timeout), sandbox)


@dataclass(frozen=True)
class ProjectHooks:
    """A project's ``.threadline/hooks.toml`` as read now: its hooks, the digest of its bytes, or why it is
    unusable (``problem``; a file that cannot be used runs nothing)."""

    path: Path
    digest: str
    hooks: tuple[HookSpec, ...] = ()
    problem: str | None = None


def read_project_hooks(cwd: Path) -> ProjectHooks | None:
    """The project's hook file, or None when it has none."""
    path = cwd / PROJECT_FILE
    try:
        data = path.read_bytes()[: MAX_PROJECT_FILE_BYTES + 1]
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ProjectHooks(path, "", problem=f"cannot read {PROJECT_FILE}: {exc}")
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_PROJECT_FILE_BYTES:
        return ProjectHooks(path, digest, problem=f"{PROJECT_FILE} is larger than {MAX_PROJECT_FILE_BYTES} bytes")
    try:
        tables = tomllib.loads(data.decode("utf-8")).get("hooks")
        return ProjectHooks(path, digest, parse_hooks(tables, "project"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, HookConfigError) as exc:
        return ProjectHooks(path, digest, problem=f"{PROJECT_FILE}: {exc}")
