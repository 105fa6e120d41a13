"""Threadline ``sessionUpdate`` kinds -> ACP ``session/update`` updates, for one session's live turns.

``assistantDelta``/``reasoningDelta`` stream as ``agent_message_chunk``/``agent_thought_chunk``; ``toolCall``
starts a ``tool_call`` and ``toolResult`` ends it with a ``tool_call_update`` (a ``diff`` for file edits);
``usage`` is ``usage_update``; compactions and notices, which ACP has no update for yet, are agent messages
marked in ``_meta.threadline``. What the client already has (its own prompt, the turn's edges) is not sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    Cost,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)

from server.acp import tools

META = "threadline"


@dataclass
class UpdateMapping:
    """What the mapping keeps between one session's updates: its folder, and files as they were before an edit."""

    cwd: Path
    before: dict[str, str | None] = field(default_factory=dict)  # toolCallId -> file text before the call
    calls: dict[str, tuple[str, Any]] = field(default_factory=dict)  # toolCallId -> (tool, arguments)
    streamed: bool = False  # text deltas arrived since the last whole answer

    def translate(self, update: dict[str, Any]) -> list[Any]:
        kind = update.get("kind")
        handler = getattr(self, f"_on_{kind}", None)
        return handler(update) if handler else []

    def _on_assistantDelta(self, u: dict[str, Any]) -> list[Any]:
        self.streamed = True
        return [agent_text(u["text"])]

    def _on_reasoningDelta(self, u: dict[str, Any]) -> list[Any]:
        return [
            AgentThoughtChunk(
                session_update="agent_thought_chunk", content=TextContentBlock(type="text", text=u["text"])
            )
        ]

    def _on_assistantMessage(self, u: dict[str, Any]) -> list[Any]:
        # A provider that answered without streaming sent no deltas: the whole answer goes out once.
        streamed, self.streamed = self.streamed, False
        return [agent_text(u["content"])] if u.get("content") and not streamed else []

    def _on_toolCall(self, u: dict[str, Any]) -> list[Any]:
        name, args, call_id = u["tool"], u.get("arguments"), u["toolCallId"]
        self.calls[call_id] = (name, args)
        if name in tools.EDIT_TOOLS and isinstance(args, dict):
            self.before[call_id] = tools.file_text(tools.resolve(self.cwd, args.get("path")))
        return [tool_call_start(call_id, name, args, u.get("title"), self.cwd)]

    def _on_toolResult(self, u: dict[str, Any]) -> list[Any]:
        call_id = u["toolCallId"]
        name, args = self.calls.pop(call_id, (u["tool"], None))
        before = self.before.pop(call_id, None)
        status = tools.status_of(u["status"], u["content"])
        after = None
        if status == "completed" and name in tools.EDIT_TOOLS and isinstance(args, dict):
            after = tools.file_text(tools.resolve(self.cwd, args.get("path")))
        diff = tools.edit_diff(name, args, self.cwd, before, after) if status == "completed" else None
        return [tool_call_end(call_id, status, u["content"], diff)]

    def _on_usage(self, u: dict[str, Any]) -> list[Any]:
        totals = u.get("totals") or {}
        # ACP's cost is the session's so far: Threadline's totals.costUsd, present once a call had a known price
        cost = Cost(amount=totals["costUsd"], currency="USD") if totals.get("costUsd") is not None else None
        return [
            UsageUpdate(
                session_update="usage_update",
                used=max(0, u["contextTokens"]),
                size=max(0, u["contextWindowTokens"]),
                cost=cost,
                field_meta={META: {"totals": totals}},
            )
        ]

    def _on_contextCompacted(self, u: dict[str, Any]) -> list[Any]:
        text = (
            f"[context compacted ({u['mode']}): about {u['beforeTokens']} -> {u['afterTokens']} tokens; "
            "the transcript keeps every message]\n"
        )
        meta = {"contextCompacted": {k: u.get(k) for k in ("mode", "beforeTokens", "afterTokens", "summary")}}
        return [agent_text(text, meta)]

    def _on_notice(self, u: dict[str, Any]) -> list[Any]:
        return [agent_text(f"[{u['level']}] {u['message']}\n", {"notice": {"level": u["level"]}})]


def agent_text(text: str, meta: dict[str, Any] | None = None) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk",
        content=TextContentBlock(type="text", text=text),
        field_meta={META: meta} if meta else None,
    )


def tool_call_start(
    call_id: str, name: str, args: Any, title: str | None, cwd: Path, status: tools.ToolStatus = "pending"
) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=title or name,
        kind=tools.tool_kind(name),
        status=status,
        raw_input=args,
        locations=tools.locations(name, args, cwd),
    )


def tool_call_end(call_id: str, status: tools.ToolStatus, text: str, diff: Any | None) -> ToolCallProgress:
    content = [diff, tools.text_content(text)] if diff is not None else [tools.text_content(text)]
    return ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, status=status, content=content, raw_output=text
    )
