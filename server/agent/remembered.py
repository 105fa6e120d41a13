"""Remembered "allow always" approvals of one session: what each covers, listing and revoking them.

A scope is a string stored in the ``approvalDecided`` event that granted it:

- ``run_command:<exact command>``: that one simple command, byte for byte;
- ``web_fetch:<host>``: fetching any URL on that one host (B-WEB-1);
- ``<file tool>:<folder>/``: that tool on ordinary files in that folder of the session folder and below it
  (``./`` is the whole folder), the folder of the file the user saw;
- ``<tool>``: the whole tool (tools without a path, and file-tool grants stored before scopes had paths).

They are rebuilt from the stored events (a grant, then an ``approvalRevoked`` event removing it), so a restart
keeps both. An approval's id is ``appr_<id of the event that granted it>``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocol.tool_facts import facts_of
from server.errors import ApprovalNotFound
from server.project.workspace import OutsideWorkspace, resolve_inside
from server.security.approval_rules import simple_command

if TYPE_CHECKING:
    from server.tools import Tool
    from server.transcript import Event, Store

WHOLE_FOLDER = "./"


@dataclass(frozen=True)
class Remembered:
    id: str
    tool: str
    scope: str
    created_at: str

    @property
    def covers(self) -> str:
        return describe(self.scope)


class RememberedApprovals:
    def __init__(self) -> None:
        self._by_scope: dict[str, Remembered] = {}
        self._seen = 0  # the id of the last grant or revocation event applied

    async def refresh(self, store: Store, session_id: str) -> None:
        """Apply the grants and revocations stored since the last look, in order: another server on the same
        data folder may have revoked a grant, and the next call anywhere must honour it. Re-applying
        one this process stored itself changes nothing. An old grant without a scope covered a whole tool; that
        is kept for file tools but never for ``run_command`` (a whole-tool "always" let ``ls; rm ...`` through)."""
        kinds = ("approvalDecided", "approvalRevoked")
        for e in await store.list_events(session_id, kinds=kinds, after_id=self._seen):
            self._seen = max(self._seen, e.id)
            if e.kind == "approvalRevoked":
                self.remove(str(e.payload.get("scope")))
                continue
            if e.payload.get("decision") != "allowAlways":
                continue
            tool = e.payload.get("tool")
            scope = e.payload.get("scope") or (tool if facts_of(str(tool)).grant == "tool" else None)
            if scope and tool:
                self.add(scope, tool, e)

    def allows(self, tool: Tool, args: dict[str, Any], cwd: Path | None) -> bool:
        """Whether a remembered "always" covers this call."""
        if tool.facts.grant != "tool":  # a grant covers one command or one host, never the whole tool
            return always_scope(tool, args, cwd) in self._by_scope
        if tool.name in self._by_scope:  # a whole-tool grant
            return True
        relative = _relative_file(tool, args, cwd)
        if relative is None:
            return False
        return any(
            r.tool == tool.name and r.scope.startswith(f"{tool.name}:") and _under(relative, r.scope)
            for r in self._by_scope.values()
        )

    def add(self, scope: str, tool: str, event: Event) -> Remembered:
        remembered = Remembered(f"appr_{event.id}", tool, scope, event.created_at)
        self._by_scope[scope] = remembered
        return remembered

    def get(self, approval_id: str) -> Remembered:
        for remembered in self._by_scope.values():
            if remembered.id == approval_id:
                return remembered
        raise ApprovalNotFound(f"no remembered approval {approval_id!r} in this session")

    def remove(self, scope: str) -> None:
        self._by_scope.pop(scope, None)

    def list(self) -> list[Remembered]:
        return sorted(self._by_scope.values(), key=lambda r: int(r.id.removeprefix("appr_")))


def always_scope(tool: Tool, args: dict[str, Any], cwd: Path | None) -> str | None:
    """What an "always" for this call would cover; None when nothing broader than this one call may be allowed
    (a compound command, a path outside the session folder, a path that goes through a symlink: the folder the
    user saw is not the one written)."""
    if tool.facts.grant == "command":
        command = simple_command(str(args.get("command", "")))
        return None if command is None else f"{tool.name}:{command}"
    if tool.facts.grant == "host":
        from server.tools.web.fetch import host_of  # the fetch machinery, only for a fetch

        host = host_of(args["url"]) if isinstance(args.get("url"), str) else None
        return None if host is None else f"{tool.name}:{host}"
    if not tool.writes_paths:
        return tool.name
    relative = _relative_file(tool, args, cwd)
    if relative is None or relative != _named_file(tool, args, cwd):
        return None
    folder = os.path.dirname(relative)
    return f"{tool.name}:{folder + '/' if folder else WHOLE_FOLDER}"


def describe(scope: str) -> str:
    tool, _, rest = scope.partition(":")
    if facts_of(tool).grant == "command":
        return f"exactly this command: {rest}"
    if facts_of(tool).grant == "host":
        return f"{tool} of any URL on the host {rest}"
    if not rest:
        return f"{tool} on any ordinary file of this session folder"
    where = "this session folder" if rest == WHOLE_FOLDER else f"{rest} in this session folder"
    return f"{tool} on ordinary files anywhere under {where}"


async def load_remembered(store: Store, session_id: str) -> RememberedApprovals:
    """Replay the session's grants and revocations in order (``RememberedApprovals.refresh`` from nothing)."""
    remembered = RememberedApprovals()
    await remembered.refresh(store, session_id)
    return remembered


async def revoke(store: Store, remembered: RememberedApprovals, session_id: str, approval_id: str) -> Remembered:
    """Forget one grant, now and after a restart (an ``approvalRevoked`` event); ``ApprovalNotFound`` if unknown."""
    grant = remembered.get(approval_id)
    await store.add_event(session_id, "approvalRevoked", {"id": grant.id, "tool": grant.tool, "scope": grant.scope})
    remembered.remove(grant.scope)
    return grant


def _relative_file(tool: Tool, args: dict[str, Any], cwd: Path | None) -> str | None:
    """The written path relative to the session folder, or None. Resolved as the write resolves it (links
    followed, ``server.project.workspace.resolve_inside``), so a grant for ``src/`` never covers ``src/link.txt ->
    ../Makefile``: the scope is checked against the file the write would change."""
    if cwd is None or not tool.writes_paths:
        return None
    raw = args.get(tool.writes_paths[0])
    if not isinstance(raw, str) or not raw:
        return None
    try:
        target = resolve_inside(cwd, raw)
    except OutsideWorkspace:
        return None
    base = cwd.resolve()
    if target == base:
        return None
    return target.relative_to(base).as_posix()


def _named_file(tool: Tool, args: dict[str, Any], cwd: Path | None) -> str | None:
    """The written path relative to the session folder as named (``..`` folded, no link followed)."""
    raw = args.get(tool.writes_paths[0]) if tool.writes_paths else None
    if cwd is None or not isinstance(raw, str) or not raw:
        return None
    base = cwd.resolve()
    target = Path(os.path.abspath(base / raw))
    return target.relative_to(base).as_posix() if base in target.parents else None


def _under(relative: str, scope: str) -> bool:
    folder = scope.partition(":")[2]
    return folder == WHOLE_FOLDER or relative.startswith(folder)
