"""The session's plan outside the pipeline: the ``planUpdated`` event, the ``plan`` update, what
``getContextView`` reports (B-SUM-9). The summary's copy is derived from the transcript itself
(``server.context.plan``); the event is what clients read back."""

from __future__ import annotations

from typing import Any

from protocol import updates as u
from protocol.messages import Plan as WirePlan
from protocol.messages import PlanEntry
from server.context.plan import Plan
from server.transcript import Store

PLAN_EVENT = "planUpdated"


def plan_update(plan: Plan) -> u.PlanUpdate:
    return u.PlanUpdate(
        entries=[PlanEntry(step=step, status=status) for step, status in plan.entries],  # type: ignore[arg-type]
        explanation=plan.explanation,
    )


def plan_event(plan: Plan, tool_call_id: str) -> dict[str, Any]:
    return {**plan.to_json(), "toolCallId": tool_call_id}


async def stored_plan(store: Store, session_id: str) -> WirePlan | None:
    """The session's latest plan as stored (the newest ``planUpdated`` event), or None."""
    event = await store.latest_event(session_id, PLAN_EVENT, "entries")
    plan = Plan.from_json(event.payload) if event else None
    if plan is None:
        return None
    update = plan_update(plan)
    return WirePlan(entries=update.entries, explanation=update.explanation)
