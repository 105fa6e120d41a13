"""What each hook event means to a turn: the inputs the agent loop hands its hooks (Claude Code's field
names) and how their answers change the turn. The loop calls these; ``server.hooks`` runs and records the hooks.
"""

from __future__ import annotations

from typing import Any

from protocol import updates as u
from server.hooks.service import SessionHooks, Verdict
from server.tools import Tool

MAX_STOP_BLOCKS = 3  # a Stop hook may send the turn on at most this many times per turn


async def session_start(hooks: SessionHooks | None) -> str | None:
    """``SessionStart``: its ``additionalContext`` joins the frozen session context (R-FRZ-1)."""
    if hooks is None or not hooks.has("SessionStart"):
        return None
    context = (await hooks.run("SessionStart", {"source": "startup"})).context
    return f"Context from SessionStart hooks:\n{context}" if context else None


async def prompt_submit(hooks: SessionHooks | None, prompt: str) -> tuple[str | None, str | None]:
    """``UserPromptSubmit``: (why the prompt is refused, or None; context to store with it, or None)."""
    if hooks is None or not hooks.has("UserPromptSubmit"):
        return None, None
    outcome = await hooks.run("UserPromptSubmit", {"prompt": prompt})
    if (blocked := outcome.blocked) is not None:
        return blocked.reason or f"refused by hook {blocked.spec.command!r}", None
    context = outcome.context
    return None, (f"Context from UserPromptSubmit hooks:\n{context}" if context else None)


async def pre_tool(hooks: SessionHooks | None, tool: Tool, args: dict[str, Any], call_id: str) -> Verdict | None:
    """``PreToolUse`` for one call, built-in or MCP alike (SPEC B-HOOK-1)."""
    if hooks is None or not hooks.has("PreToolUse"):
        return None
    fields = {"tool_name": tool.name, "tool_input": args, "tool_use_id": call_id}
    return (await hooks.run("PreToolUse", fields, tool.name, call_id)).verdict()


def blocked_result(verdict: Verdict) -> str:
    """What the model reads for a call a hook blocked (``Permission denied``: kept as a failure, R-MICRO-2)."""
    return f"Permission denied: blocked by a PreToolUse hook ({verdict.by.removeprefix('hook: ')}): {verdict.reason}"


async def post_tool(
    hooks: SessionHooks | None, tool: Tool, args: dict[str, Any], call_id: str, content: str, status: str
) -> str | None:
    """``PostToolUse``: what the hooks add to the result the model reads (a linter's findings after an edit);
    a ``block`` reason is added the same way (the tool already ran)."""
    if hooks is None or not hooks.has("PostToolUse"):
        return None
    fields = {
        "tool_name": tool.name,
        "tool_input": args,
        "tool_use_id": call_id,
        "tool_response": {"content": content, "status": status},
    }
    outcome = await hooks.run("PostToolUse", fields, tool.name, call_id)
    parts = [
        f"[PostToolUse hook {r.spec.command!r}]\n{r.context or r.reason}"
        for r in outcome.results
        if r.failure is None and (r.context or (r.decision == "block" and r.reason))
    ]
    return "\n\n".join(parts) if parts else None


async def pre_compact(hooks: SessionHooks | None, trigger: str) -> str | None:
    """``PreCompact``: notes the new summary keeps in its ``Hook notes:`` section until the next compaction."""
    if hooks is None or not hooks.has("PreCompact"):
        return None
    return (await hooks.run("PreCompact", {"trigger": trigger})).context


async def post_compact(hooks: SessionHooks | None, trigger: str, summary: str) -> None:
    if hooks is not None and hooks.has("PostCompact"):
        await hooks.run("PostCompact", {"trigger": trigger, "summary": summary})


async def stop(hooks: SessionHooks | None, blocks_so_far: int) -> str | None:
    """``Stop`` when the model answered without tool calls: a ``block`` with a reason sends the turn on with the
    reason as the next user input, at most MAX_STOP_BLOCKS times a turn; past that the turn ends, saying so."""
    if hooks is None or not hooks.has("Stop"):
        return None
    outcome = await hooks.run("Stop", {"stop_reason": "endTurn", "stop_hook_active": blocks_so_far > 0})
    blocked = outcome.blocked
    if blocked is None or not blocked.reason:
        return None
    if blocks_so_far >= MAX_STOP_BLOCKS:
        if hooks.emit is not None:
            hooks.emit(
                u.Notice(
                    level="warning",
                    message=f"a Stop hook sent this turn on {MAX_STOP_BLOCKS} times already; the turn ends here",
                )
            )
        return None
    return blocked.reason
