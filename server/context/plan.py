"""The agent's plan (``update_plan``) as data: parsed from a call's arguments, rendered for the summary (B-SUM-9).

Pure: the plan a summary shows is derived from the transcript's own ``update_plan`` calls (the summary fold keeps
the latest valid one), so it survives every compaction and a restart without any state besides the transcript.
The tool validates with the same ``parse_plan``, so a call the tool refused is never taken for the plan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .tokens import estimate_text_tokens

__all__ = ["PLAN_STATUSES", "PLAN_TOOL", "Plan", "PlanInvalid", "parse_plan", "plan_lines", "plan_of_call"]

PLAN_TOOL = "update_plan"
PLAN_STATUSES = ("pending", "in_progress", "completed")
MAX_STEPS = 100
MAX_STEP_CHARS = 1000
MAX_EXPLANATION_CHARS = 2000
SHORT_STEP_CHARS = 80  # a step's length once a plan over its budget is shortened
ELLIPSIS = "…"


class PlanInvalid(ValueError):
    """The arguments are not a plan; the message says what is wrong, for the model to correct."""


@dataclass(frozen=True)
class Plan:
    entries: tuple[tuple[str, str], ...]  # (step, status) in the model's order
    explanation: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"entries": [{"step": s, "status": st} for s, st in self.entries]}
        if self.explanation:
            out["explanation"] = self.explanation
        return out

    @classmethod
    def from_json(cls, data: Any) -> Plan | None:
        """The plan a stored fold or event describes (``{"entries": [{step, status}], "explanation"?}``)."""
        try:
            return parse_plan({"plan": data["entries"], "explanation": data.get("explanation")})
        except (PlanInvalid, KeyError, TypeError, AttributeError):
            return None


def parse_plan(args: Mapping[str, Any]) -> Plan:
    """``{explanation?: str, plan: [{step, status}]}`` with at most one step ``in_progress``."""
    steps = args.get("plan")
    if not isinstance(steps, list):
        raise PlanInvalid("'plan' must be a list of {step, status}")
    if len(steps) > MAX_STEPS:
        raise PlanInvalid(f"'plan' may hold at most {MAX_STEPS} steps")
    entries = []
    for i, item in enumerate(steps):
        if not isinstance(item, Mapping) or set(item) - {"step", "status"}:
            raise PlanInvalid(f"plan[{i}] must be an object with 'step' and 'status' only")
        step, status = item.get("step"), item.get("status")
        if not isinstance(step, str) or not step.strip():
            raise PlanInvalid(f"plan[{i}].step must be a non-empty string")
        if len(step) > MAX_STEP_CHARS:
            raise PlanInvalid(f"plan[{i}].step must be at most {MAX_STEP_CHARS} characters")
        if status not in PLAN_STATUSES:
            raise PlanInvalid(f"plan[{i}].status must be one of {', '.join(PLAN_STATUSES)}, not {status!r}")
        entries.append((step.strip(), status))
    running = [step for step, status in entries if status == "in_progress"]
    if len(running) > 1:
        raise PlanInvalid(f"at most one step may be in_progress, not {len(running)}")
    explanation = args.get("explanation")
    if explanation is not None and not isinstance(explanation, str):
        raise PlanInvalid("'explanation' must be a string")
    if explanation and len(explanation) > MAX_EXPLANATION_CHARS:
        raise PlanInvalid(f"'explanation' must be at most {MAX_EXPLANATION_CHARS} characters")
    return Plan(tuple(entries), explanation.strip() or None if explanation else None)


def plan_of_call(name: str, arguments: Any) -> Plan | None:
    """The plan an ``update_plan`` call (its JSON ``arguments``) sets, or None (another tool, or invalid)."""
    if name != PLAN_TOOL:
        return None
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
        return parse_plan(args) if isinstance(args, Mapping) else None
    except (ValueError, PlanInvalid):
        return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)].rstrip() + ELLIPSIS


def plan_lines(plan: Plan, budget_tokens: int) -> list[str]:
    """The ``Plan:`` section's lines (B-SUM-9): every step verbatim with its status, then the explanation.

    Within ``budget_tokens`` (the summary's section budget): past it, completed steps are counted instead of
    listed first (what is left to do matters most), then steps are shortened, then the last ones counted."""

    def cost(lines: list[str]) -> int:
        return estimate_text_tokens("Plan:\n" + "".join(f"- {line}\n" for line in lines))

    tail = [f"Explanation: {_clip(plan.explanation, 2 * SHORT_STEP_CHARS)}"] if plan.explanation else []
    lines = [f"[{status}] {step}" for step, status in plan.entries]
    if plan.explanation and cost([*lines, f"Explanation: {plan.explanation}"]) <= budget_tokens:
        return [*lines, f"Explanation: {plan.explanation}"]
    if cost(lines + tail) <= budget_tokens:
        return lines + tail
    done = sum(1 for _, status in plan.entries if status == "completed")
    open_steps = [(step, status) for step, status in plan.entries if status != "completed"]
    head = [f"({done} completed steps not shown)"] if done else []
    lines = head + [f"[{status}] {step}" for step, status in open_steps]
    if cost(lines + tail) > budget_tokens:
        lines = head + [f"[{status}] {_clip(step, SHORT_STEP_CHARS)}" for step, status in open_steps]
    dropped = 0
    while len(lines) > len(head) + 1 and cost([*lines, "(and 100 more steps)", *tail]) > budget_tokens:
        lines.pop()
        dropped += 1
    return [*lines, *([f"(and {dropped} more steps)"] if dropped else []), *tail]
