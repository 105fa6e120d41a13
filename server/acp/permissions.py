"""Threadline's ``requestApproval`` <-> ACP's ``session/request_permission``.

The four ACP option kinds map onto Threadline's decisions: ``allow_once`` -> ``allowOnce``, ``allow_always`` ->
``allowAlways`` (remembered as Threadline remembers it), ``reject_once`` -> ``reject``, ``reject_always`` ->
``reject`` now and, for the rest of the connection, for that tool without asking. A ``cancelled`` outcome (the
prompt was cancelled) or any answer that is not one of the options is a rejection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp.schema import (
    AllowedOutcome,
    FileEditToolCallContent,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallLocation,
    ToolCallUpdate,
)

from server.acp import tools

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


def tool_call_of(params: dict[str, Any], cwd: Path | None) -> ToolCallUpdate:
    """The ``toolCall`` of the request: the call already announced, with its kind, the approval's title, the
    proposed change as a ``diff`` block first (clients such as CodeCompanion open their diff review only when
    ``content[0]`` is one) and the approval's note after it; ``oldText`` is absent for a new file (Threadline's
    diff has it empty). A subagent's call is not one the client knows: the question is about the parent's
    ``task`` call (B-SUB-1)."""
    if params.get("parentToolCallId"):
        detail = f"A subagent asks to run {params['title']}\n{params.get('detail') or ''}".rstrip()
        return ToolCallUpdate(tool_call_id=params["parentToolCallId"], content=[tools.text_content(detail)])
    content: list[Any] = []
    diff = params.get("diff")
    path = tools.resolve(cwd, diff.get("path")) if isinstance(diff, dict) and cwd is not None else None
    if isinstance(diff, dict) and path is not None:
        old = diff.get("oldText") if diff.get("oldText") or path.exists() else None
        content.append(FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=diff["newText"]))
    if params.get("detail"):
        content.append(tools.text_content(params["detail"]))
    return ToolCallUpdate(
        tool_call_id=params["toolCallId"],
        title=params["title"],
        kind=tools.tool_kind(params["tool"]),
        status="pending",
        content=content or None,
        locations=[ToolCallLocation(path=str(path))] if path is not None else None,
    )


def decision_of(response: RequestPermissionResponse) -> tuple[str, bool]:
    """Threadline's decision, and whether the user rejected the tool for good."""
    outcome = response.outcome
    if isinstance(outcome, AllowedOutcome) and outcome.option_id in DECISIONS:
        return DECISIONS[outcome.option_id], outcome.option_id == "reject_always"
    return "reject", False
