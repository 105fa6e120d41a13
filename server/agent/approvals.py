"""Approvals before commands and file writes (PROTOCOL.md ``requestApproval``).

Policy ``ask`` asks for both, ``autoEdit`` asks only for commands, ``auto`` asks for neither. ``allowAlways``
is remembered for the session (kept in memory and rebuilt from the stored events after a restart). Every request
and decision is stored as an event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from protocol.updates import RequestApprovalParams, RequestApprovalResult
from server.tools import Tool
from server.transcript import Store

Ask = Callable[[str, dict[str, Any]], Awaitable[Any]]


class Approvals:
    def __init__(self, store: Store, ask: Ask, policy: str, always: set[str]):
        self.store, self._ask, self.policy, self.always = store, ask, policy, always

    def needed(self, tool: Tool) -> bool:
        if tool.approval is None or self.policy == "auto" or tool.name in self.always:
            return False
        return not (self.policy == "autoEdit" and tool.approval == "edit")

    async def decide(self, session_id: str, turn_id: str, call_id: str, tool: Tool, args: dict[str, Any]) -> str:
        """Ask the client; any failure to get a valid answer counts as a rejection (never a silent allow)."""
        params = RequestApprovalParams(session_id=session_id, turn_id=turn_id, tool_call_id=call_id, tool=tool.name,
                                       title=tool.title(args), detail=_detail(tool, args))
        await self.store.add_event(session_id, "approvalRequested", msgspec.to_builtins(params), turn_id)
        try:
            raw = await self._ask("requestApproval", msgspec.to_builtins(params))
            decision = msgspec.convert(raw, RequestApprovalResult).decision
            note = None
        except Exception as exc:  # client error, bad answer, disconnected client
            decision, note = "reject", f"no valid answer from the client: {exc}"
        if decision == "allowAlways":
            self.always.add(tool.name)
        payload = {"toolCallId": call_id, "tool": tool.name, "decision": decision}
        if note:
            payload["note"] = note
        await self.store.add_event(session_id, "approvalDecided", payload, turn_id)
        return decision


async def remembered_always(store: Store, session_id: str) -> set[str]:
    return {e.payload["tool"] for e in await store.list_events(session_id, "approvalDecided")
            if e.payload.get("decision") == "allowAlways"}


def _detail(tool: Tool, args: dict[str, Any]) -> str:
    if tool.name == "run_command":
        return str(args.get("command", ""))
    if tool.name == "edit_file":
        return f"{args.get('path')}\n--- old\n{args.get('old_string', '')}\n+++ new\n{args.get('new_string', '')}"
    if tool.name == "write_file":
        content = str(args.get("content", ""))
        return f"{args.get('path')} ({len(content)} characters)\n{content[:2000]}"
    return msgspec.json.encode(args).decode()[:4000]
