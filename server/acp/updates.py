"""Threadline's typed session updates (``protocol.updates``) -> ACP ``session/update`` updates, for one session's
live turns; the update is encoded here, as ACP, and nowhere else.

``assistantDelta``/``reasoningDelta`` stream as ``agent_message_chunk``/``agent_thought_chunk``; ``toolCall``
starts a ``tool_call`` (``pending``), ``toolStarted`` marks it ``in_progress`` and ``toolResult`` ends it with a
``tool_call_update`` (a ``diff`` for file edits);
``usage`` is ``usage_update``; ``plan`` is ACP's ``plan``; compactions and notices, which ACP has no update for yet, are
agent messages
marked in ``_meta.threadline``. What the client already has (its own prompt, the turn's edges) is not sent.

A subagent's updates (B-SUB-1) are not a session the client knows: they update the parent's ``task`` tool call,
``in_progress`` with a short log of what the child does as its content, until the ``task`` result replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    Cost,
    PlanEntry,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)

from protocol import updates as u
from server.acp import tools

META = "threadline"
CHILD_LINES = 20  # the last lines of a subagent's progress shown in its task call


@dataclass
class UpdateMapping:
    """What the mapping keeps between one session's updates: its folder, and files as they were before an edit."""

    cwd: Path
    before: dict[str, str | None] = field(default_factory=dict)  # toolCallId -> file text before the call
    calls: dict[str, tuple[str, Any]] = field(default_factory=dict)  # toolCallId -> (tool, arguments)
    streamed: bool = False  # text deltas arrived since the last whole answer
    children: dict[str, list[str]] = field(default_factory=dict)  # task toolCallId -> its child's progress lines
    child_calls: dict[str, tuple[str, Any]] = field(default_factory=dict)  # a child's toolCallId -> (tool, args)

    def child_progress(self, call_id: str, child_id: str, update: u.Update) -> ToolCallProgress | None:
        """The parent's ``task`` call ``call_id`` updated with what its child just did, or None (nothing new)."""
        lines = self.children.setdefault(call_id, [])
        if isinstance(update, u.ToolResult):
            self.child_calls.pop(update.tool_call_id, None)
        match update:
            case u.TurnStarted():
                lines.append("subagent started")
            case u.ToolCall(title=title, tool=tool, tool_call_id=child_call, arguments=args):
                self.child_calls[child_call] = (tool, args)  # what its approval request is about
                lines.append(f"- {tools.title(tool, args, title)}")  # titled as the parent's own calls
            case u.ToolResult(status=status) if status != "ok":
                lines.append(f"  ({status})")
            case u.TurnCompleted(stop_reason=stop):
                lines.append(f"subagent finished ({stop})")
            case _:
                return None
        return ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=call_id,
            status="in_progress",
            content=[tools.text_content("\n".join(lines[-CHILD_LINES:]))],
            field_meta={META: {"childSessionId": child_id}},
        )

    def translate(self, update: u.Update) -> list[Any]:
        match update:
            case u.AssistantDelta(text=text):
                self.streamed = True
                return [agent_text(text)]
            case u.ReasoningDelta(text=text):
                return [
                    AgentThoughtChunk(
                        session_update="agent_thought_chunk", content=TextContentBlock(type="text", text=text)
                    )
                ]
            case u.AssistantMessage(content=content):
                # A provider that answered without streaming sent no deltas: the whole answer goes out once.
                streamed, self.streamed = self.streamed, False
                return [agent_text(content)] if content and not streamed else []
            case u.ToolCall():
                return [self._tool_call(update)]
            case u.ToolStarted(tool_call_id=call_id):
                # Clients hide pending calls: a long command is visible from here, not only once it ends.
                return [ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress")]
            case u.ToolResult():
                return [self._tool_result(update)]
            case u.Usage():
                return [_usage(update)]
            case u.ContextCompacted():
                return [_compacted(update)]
            case u.ContextCompacting():
                # ACP has no transient status update: an agent message would stay in the answer's text for good,
                # next to the contextCompacted line that follows; so nothing until that line.
                return []
            case u.PlanUpdate():
                return [_plan(update)]
            case u.Notice(level=level, message=message):
                return [agent_text(f"[{level}] {message}\n", {"notice": {"level": level}})]
        return []  # the client has the rest already (its own prompt, the turn's edges)

    def _tool_call(self, call: u.ToolCall) -> ToolCallStart:
        self.calls[call.tool_call_id] = (call.tool, call.arguments)
        if call.tool in tools.EDIT_TOOLS and isinstance(call.arguments, dict):
            self.before[call.tool_call_id] = tools.file_text(tools.resolve(self.cwd, call.arguments.get("path")))
        return tool_call_start(call.tool_call_id, call.tool, call.arguments, call.title, self.cwd)

    def call(self, call_id: str) -> tuple[str, Any] | None:
        """The tool and arguments of a call this session or one of its subagents announced, until it ends."""
        return self.calls.get(call_id) or self.child_calls.get(call_id)

    def _tool_result(self, result: u.ToolResult) -> ToolCallProgress:
        call_id = result.tool_call_id
        self.children.pop(call_id, None)
        name, args = self.calls.pop(call_id, (result.tool, None))
        before = self.before.pop(call_id, None)
        status = tools.status_of(result.status, result.content)
        after = None
        if status == "completed" and name in tools.EDIT_TOOLS and isinstance(args, dict):
            after = tools.file_text(tools.resolve(self.cwd, args.get("path")))
        diff = tools.edit_diff(name, args, self.cwd, before, after) if status == "completed" else None
        return tool_call_end(call_id, status, result.content, diff)


def _usage(usage: u.Usage) -> UsageUpdate:
    totals = msgspec.to_builtins(usage.totals)
    # ACP's cost is the session's so far: Threadline's totals.costUsd, present once a call had a known price
    cost = Cost(amount=totals["costUsd"], currency="USD") if totals.get("costUsd") is not None else None
    return UsageUpdate(
        session_update="usage_update",
        used=max(0, usage.context_tokens),
        size=max(0, usage.context_window_tokens),
        cost=cost,
        field_meta={META: {"totals": totals}},
    )


def _plan(plan: u.PlanUpdate) -> AgentPlanUpdate:
    """ACP's ``plan`` update: every entry each time (ACP replaces the client's plan); Threadline's steps carry no
    priority, so all are "medium"; the explanation travels in ``_meta.threadline``."""
    return AgentPlanUpdate(
        session_update="plan",
        entries=[PlanEntry(content=e.step, priority="medium", status=e.status) for e in plan.entries],
        field_meta={META: {"explanation": plan.explanation}} if plan.explanation else None,
    )


def _compacted(c: u.ContextCompacted) -> AgentMessageChunk:
    text = (
        f"[context compacted ({c.mode}): about {c.before_tokens} -> {c.after_tokens} tokens; "
        "the transcript keeps every message]\n"
    )
    meta = {
        "contextCompacted": {
            "mode": c.mode,
            "beforeTokens": c.before_tokens,
            "afterTokens": c.after_tokens,
            "summary": c.summary,
        }
    }
    return agent_text(text, meta)


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
        title=tools.title(name, args, title),
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
