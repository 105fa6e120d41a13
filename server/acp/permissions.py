"""Threadline's ``requestApproval`` <-> ACP's ``session/request_permission``.

The four ACP option kinds map onto Threadline's decisions: ``allow_once`` -> ``allowOnce``, ``allow_always`` ->
``allowAlways`` (remembered as Threadline remembers it), ``reject_once`` -> ``reject``, ``reject_always`` ->
``reject`` now and, for the rest of the connection, for that tool without asking. A ``cancelled`` outcome (the
prompt was cancelled) or any answer that is not one of the options is a rejection.
"""

from __future__ import annotations

from typing import Any

from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from server.acp.tools import text_content

OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow always", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Reject always", kind="reject_always"),
]
DECISIONS = {
    "allow_once": "allowOnce",
    "allow_always": "allowAlways",
    "reject_once": "reject",
    "reject_always": "reject",
}


def tool_call_of(params: dict[str, Any]) -> ToolCallUpdate:
    """The ``toolCall`` of the request: the call already announced, with the approval's title and detail. A
    subagent's call is not one the client knows: the question is about the parent's ``task`` call (B-SUB-1)."""
    if params.get("parentToolCallId"):
        detail = f"A subagent asks to run {params['title']}\n{params.get('detail') or ''}".rstrip()
        return ToolCallUpdate(tool_call_id=params["parentToolCallId"], content=[text_content(detail)])
    return ToolCallUpdate(
        tool_call_id=params["toolCallId"],
        title=params["title"],
        status="pending",
        content=[text_content(params["detail"])] if params.get("detail") else None,
    )


def decision_of(response: RequestPermissionResponse) -> tuple[str, bool]:
    """Threadline's decision, and whether the user rejected the tool for good."""
    outcome = response.outcome
    if isinstance(outcome, AllowedOutcome) and outcome.option_id in DECISIONS:
        return DECISIONS[outcome.option_id], outcome.option_id == "reject_always"
    return "reject", False
