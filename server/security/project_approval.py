"""Approving what a project's files would run: a ``.mcp.json`` server, a ``.threadline/hooks.toml`` file.

A cloned repository must not run programs by being opened, so such a thing runs only once the user approved it,
by a key that hashes exactly what it runs (a server's command, arguments and environment; a hooks file's content):
an edited file asks again. "Allow always" is kept in a trust file under the data folder, per project
folder (``ProjectTrust``); "allow once" and "reject" hold for the session and that key (the ``decided`` map the
caller's session slot holds: ``server.mcp.service.McpChoices``, ``server.hooks.service.HookChoices``). MCP and
hooks ask through the one ``approve`` below, so the two cannot drift apart.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from protocol import updates as u
from server.emit import Emitter

Ask = Callable[[str, dict[str, Any]], Awaitable[Any]]


class ProjectTrust:
    """The "allow always" grants of one kind of project file, in ``file`` under the data folder: per project folder,
    its entry's name -> the key it was allowed with. Only names and hashes are stored, never a command line or its
    environment. ``revoke`` forgets a grant."""

    def __init__(self, home: Path, file: str):
        self._path = home / file

    def allowed_key(self, project: Path, name: str, key: str) -> bool:
        return self._load().get(str(project), {}).get(name) == key

    def allow_key(self, project: Path, name: str, key: str) -> None:
        data = self._load()
        data.setdefault(str(project), {})[name] = key
        self._save(data)

    def revoke(self, project: Path, name: str) -> bool:
        data = self._load()
        found = data.get(str(project), {}).pop(name, None) is not None
        if found:
            self._save({k: v for k, v in data.items() if v})
        return found

    def _load(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, data: dict[str, Any]) -> None:
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self._path)


@dataclass(frozen=True)
class ProjectItem:
    """One thing a project's files would run, and the question that asks for it (``requestApproval``)."""

    project: Path  # the project folder
    name: str  # its entry in the trust file: the server's name, the hooks file's
    key: str  # the hash of exactly what it runs
    tool_call_id: str
    tool: str  # "mcpServer", "projectHooks"
    title: str
    detail: str
    refused: str  # the notice when the user refused it


async def approve(
    trust: ProjectTrust,
    decided: dict[str, bool],
    item: ProjectItem,
    session_id: str,
    emit: Emitter,
    ask: Ask,
    unattended: str | None = None,
) -> bool:
    """May ``item`` run? Allowed always for this folder and key, else decided in this session for this key, else
    the client is asked: "allow always" is kept in ``trust``, the answer in ``decided``. ``unattended``: nobody
    may be asked; the notice to give, and it does not run. No valid answer is a refusal, never a silent
    allow."""
    if trust.allowed_key(item.project, item.name, item.key):
        return True
    if item.key in decided:
        return decided[item.key]
    if unattended is not None:
        emit(u.Notice(level="warning", message=unattended))
        decided[item.key] = False
        return False
    params = u.RequestApprovalParams(
        session_id=session_id,
        turn_id=emit.turn_id or "",
        tool_call_id=item.tool_call_id,
        tool=item.tool,
        title=item.title,
        detail=item.detail,
    )
    try:
        raw = await ask("requestApproval", msgspec.to_builtins(params))
        decision = msgspec.convert(raw, u.RequestApprovalResult).decision
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - no valid answer: never a silent allow
        decision = "reject"
    if decision == "allowAlways":
        trust.allow_key(item.project, item.name, item.key)
    decided[item.key] = decision != "reject"
    if decision == "reject":
        emit(u.Notice(level="info", message=item.refused))
    return decided[item.key]
