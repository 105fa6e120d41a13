"""The session's plan outside the pipeline: the ``planUpdated`` event, the ``plan`` update, what
``getContextView`` reports (B-SUM-9). The summary's copy is derived from the transcript itself
(``server.context.plan``); the event is what clients read back."""

from __future__ import annotations

from typing import Any

from protocol import updates as u
from protocol.messages import Plan as WirePlan
from protocol.messages import PlanEntry
from server.context.plan import PLAN_TOOL, Plan, plan_of_call
from server.emit import Emitter
from server.transcript import Store

PLAN_EVENT = "planUpdated"


def plan_update(plan: Plan) -> u.PlanUpdate:
    return u.PlanUpdate(
        entries=[PlanEntry(step=step, status=status) for step, status in plan.entries],  # type: ignore[arg-type]
        explanation=plan.explanation,
    )


def plan_event(plan: Plan, tool_call_id: str) -> dict[str, Any]:
    return {**plan.to_json(), "toolCallId": tool_call_id}


async def record_plan(store: Store, emit: Emitter, call_id: str, arguments: str) -> None:
    """B-SUM-9: an accepted ``update_plan`` call is stored as a ``planUpdated`` event and streamed as a ``plan``
    update (the tool has already validated it; the same check runs here on the stored arguments)."""
    plan = plan_of_call(PLAN_TOOL, arguments)
    if plan is not None:
        await store.add_event(emit.session_id, PLAN_EVENT, plan_event(plan, call_id), emit.turn_id)
        emit(plan_update(plan))


async def stored_plan(store: Store, session_id: str) -> WirePlan | None:
    """The session's latest plan as stored (the newest ``planUpdated`` event), or None."""
    event = await store.latest_event(session_id, PLAN_EVENT, "entries")
    plan = Plan.from_json(event.payload) if event else None
    if plan is None:
        return None
    update = plan_update(plan)
    return WirePlan(entries=update.entries, explanation=update.explanation)
