"""One tool call of a turn (``server.agent.loop``): approval and hooks, the run, then its stored result.

Every tool call takes this one path, built-in or MCP (SPEC B-HOOK-1). It reads the turn through ``CallTurn``
rather than importing ``Turn``, so the two modules stay apart (tests/test_imports.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol

from protocol import updates as u
from protocol.messages import OpenAIToolCall
from protocol.updates import FileDiff
from server.agent import cut, turn_hooks
from server.agent.approvals import PLAN_MODE, Approvals
from server.agent.calls import decide_call
from server.agent.diffs import proposed_diff, stored_diff
from server.agent.plans import record_plan
from server.checkpoints import Checkpointer
from server.context.plan import PLAN_TOOL
from server.emit import Emitter
from server.hooks.service import SessionHooks
from server.tools import Tool, ToolContext, ToolOutcome, ToolRunner, available_tools, parse_arguments
from server.tools.base import Status, ToolFailure
from server.transcript import NewMessage, Store


class CallTurn(Protocol):
    """What a tool call needs of its turn (``server.agent.loop.Turn``), read as the call runs: the turn may
    have changed its tools (MCP) or hooks since it began."""

    store: Store
    tools: ToolContext
    approvals: Approvals
    emit: Emitter
    checkpoints: Checkpointer | None
    hooks: SessionHooks | None
    turn_id: str

    @property
    def run_tool(self) -> ToolRunner: ...

    @property
    def session_id(self) -> str: ...


@dataclass(frozen=True)
class _Outcome:
    """A tool's outcome with the change it proposed (edit_file/write_file), for the tool card."""

    content: str
    status: Status = "ok"
    diff: FileDiff | None = None


async def run_call(turn: CallTurn, call: OpenAIToolCall, unfinished: set[str]) -> None:
    """Run one tool call of the model's answer, store its result, and tell the client (tool card, diff,
    artifact); ``unfinished``: ids of calls cut off at the output limit, which never run."""
    name = call.function.name
    failure: ToolOutcome | None = None
    try:
        args = parse_arguments(call.function.arguments)
    except ToolFailure as exc:
        args, failure = {}, ToolOutcome(f"Tool failed: {exc}", "error")
    if call.id in unfinished:
        failure = ToolOutcome(cut.CUT_CALL_RESULT, "error")
    tool = available_tools(turn.tools).get(name)
    turn.emit(
        u.ToolCall(
            tool_call_id=call.id,
            tool=name,
            arguments=args or call.function.arguments,
            title=tool.title(args) if tool else name,
        )
    )
    if failure is None:
        outcome = await _approved_run(turn, call, tool, args)
    else:
        outcome = _Outcome(failure.content, failure.status)
    kept = await turn.tools.artifacts.keep(turn.session_id, call.id, outcome.content)
    stored = await turn.store.append_messages(
        turn.session_id,
        [NewMessage("tool", kept.text, tool_call_id=call.id, name=name, tool_status=outcome.status)],
        turn.turn_id,
    )
    applied = outcome.diff if outcome.status == "ok" else None
    if applied is not None:  # kept for a resumed session's tool card (readEvents), before the live update
        await turn.store.add_event(turn.session_id, "fileDiff", stored_diff(call.id, name, applied), turn.turn_id)
    if kept.artifact:
        turn.emit(
            u.ArtifactCreated(
                artifact_id=kept.artifact.id,
                tool_call_id=call.id,
                total_bytes=kept.artifact.total_bytes,
                total_lines=kept.artifact.total_lines,
            )
        )
    if kept.storage_error:
        turn.emit(
            u.Notice(
                level="warning",
                message=f"could not store a large tool output as an artifact "
                f"({kept.storage_error}); the model got a truncated copy",
            )
        )
    turn.emit(
        u.ToolResult(
            tool_call_id=call.id,
            tool=name,
            status=outcome.status,
            content=kept.text,
            artifact_id=kept.artifact.id if kept.artifact else None,
            diff=applied,
        ),
        seq=stored[0].seq,
    )
    if name == PLAN_TOOL and outcome.status == "ok":
        await record_plan(turn.store, turn.emit, call.id, call.function.arguments)


async def _approved_run(turn: CallTurn, call: OpenAIToolCall, tool: Tool | None, args: dict[str, Any]) -> _Outcome:
    """The one path every tool call takes, built-in or MCP: hooks, deny list and approval (``decide_call``),
    the run, then the ``PostToolUse`` hooks (SPEC B-HOOK-1)."""
    if tool is None:  # nothing runs: the model reads which tools exist
        done = await turn.run_tool(turn.tools, call.function.name, args)
        return _Outcome(done.content, done.status)
    diff = await proposed_diff(turn.tools.cwd, tool.name, args)
    if tool.approval is not None and turn.approvals.policy != "auto":
        await turn.approvals.refresh(turn.session_id)  # a revoke by another server counts now
    verdict = await decide_call(tool, args, turn.approvals, lambda t, a: turn_hooks.pre_tool(turn.hooks, t, a, call.id))
    if verdict.decision == "deny":  # plan mode's refusal says itself how to leave plan mode
        blocked = verdict.reason if verdict.by == PLAN_MODE else turn_hooks.blocked_result(verdict)  # type: ignore[arg-type]
        return _Outcome(blocked, "denied")
    if verdict.decision == "ask":
        decision = await turn.approvals.decide(turn.session_id, turn.turn_id, call.id, tool, args, diff)
        if decision == "reject":
            return _Outcome(turn.approvals.denial(tool, args), "denied")
    outcome = await _run(turn, call, tool, args, diff)  # a forbidden command is refused by the tool itself
    added = await turn_hooks.post_tool(turn.hooks, tool, args, call.id, outcome.content, outcome.status)
    return dataclasses.replace(outcome, content=f"{outcome.content}\n\n{added}") if added else outcome


async def _run(
    turn: CallTurn, call: OpenAIToolCall, tool: Tool, args: dict[str, Any], diff: FileDiff | None
) -> _Outcome:
    turn.emit(u.ToolStarted(tool_call_id=call.id, tool=call.function.name))
    ctx = dataclasses.replace(turn.tools, tool_call_id=call.id)
    if turn.checkpoints is None or not tool.writes_paths:
        done = await turn.run_tool(ctx, call.function.name, args)
        return _Outcome(done.content, done.status, diff)
    kept = await turn.checkpoints.before(call.id, tool, args)
    done = await turn.run_tool(ctx, call.function.name, args)
    notes = await turn.checkpoints.after(kept, wrote=done.status == "ok")
    return _Outcome("\n".join([done.content, *notes]), done.status, diff)
