"""``update_plan``: the agent's checklist for multi-step work (B-SUM-9).

The tool only validates (``server.context.plan.parse_plan``, the same check the summary applies); the turn stores
the accepted plan as a ``planUpdated`` event and streams it as a ``plan`` update (``server.agent.loop``).
"""

from __future__ import annotations

from typing import Any

from server.context.plan import PLAN_STATUSES, PLAN_TOOL, PlanInvalid, parse_plan
from server.tools.base import Tool, ToolContext, ToolFailure, schema


async def update_plan(ctx: ToolContext, args: dict[str, Any]) -> str:
    try:
        plan = parse_plan(args)
    except PlanInvalid as exc:
        raise ToolFailure(f"Invalid arguments: {exc}") from None
    done = sum(1 for _, status in plan.entries if status == "completed")
    running = next((step for step, status in plan.entries if status == "in_progress"), None)
    now = f"; in progress: {running}" if running else ""
    return f"Plan updated: {len(plan.entries)} steps, {done} completed{now}."


STEP = schema(["step", "status"], step={"type": "string"}, status={"type": "string", "enum": list(PLAN_STATUSES)})

TOOLS = [
    Tool(
        PLAN_TOOL,
        "Set the plan for multi-step work: the whole list of steps with their status each time "
        "(at most one in_progress). The user sees it as a checklist; it is kept when older history is summarized.",
        schema(["plan"], explanation={"type": "string"}, plan={"type": "array", "items": STEP}),
        update_plan,
    )
]
