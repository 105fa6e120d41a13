"""Threadline's ``requestApproval`` <-> ACP's ``session/request_permission``.

The four ACP option kinds map onto Threadline's decisions: ``allow_once`` -> ``allowOnce``, ``allow_always`` ->
``allowAlways`` (remembered as Threadline remembers it), ``reject_once`` -> ``reject``, ``reject_always`` ->
``reject`` now and, for the rest of the connection, for that tool without asking. Only the options the request
offers are sent (no "Allow always" for a call that cannot be allowed always: a protected path, an escalation). A
``cancelled`` outcome (the prompt was cancelled) or any answer that is not one of the options is a rejection.

Every request, a subagent's included, carries the call's kind, a title that starts with the command or the path
(``tools.title``) and ``pending``: clients show the title as the question, and CodeCompanion keeps only the part
before a ``:``.
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
    ToolCallProgress,
    ToolCallUpdate,
)

from server.acp import tools

OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow always", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Reject always", kind="reject_always"),
]
OFFERED = {"allowOnce": ["allow_once"], "allowAlways": ["allow_always"], "reject": ["reject_once", "reject_always"]}
DECISIONS = {
    "allow_once": "allowOnce",
    "allow_always": "allowAlways",
    "reject_once": "reject",
    "reject_always": "reject",
}


def options_of(params: dict[str, Any]) -> list[PermissionOption]:
    """The ACP options for what the request offers (Threadline's ``options``), in ACP's order."""
    offered = {kind for option in params.get("options") or DECISIONS.values() for kind in OFFERED.get(option, [])}
    return [option for option in OPTIONS if option.option_id in offered]


OUTSIDE = "would run OUTSIDE the sandbox, with all your rights"  # as the chat says it (B-SBX-3)


def request_title(params: dict[str, Any], call: tuple[str, Any] | None) -> str:
    """The question's title: the call's own (``tools.title``: the command, the path first); for a command that
    would run outside the sandbox, the whole warning and the model's reason after it. Clients ask with the title
    (CodeCompanion: ``Execute: TITLE ?``), so what the user must weigh is in it, not only in the content."""
    name, args = call if call is not None else (params["tool"], None)
    title = tools.title(name, args, params["title"])
    if not params.get("outsideSandbox"):
        return title
    reason = params.get("reason")
    return f"{title} — {OUTSIDE}" + (f"; the model's reason: {' '.join(str(reason).split())}" if reason else "")


def tool_call_of(params: dict[str, Any], cwd: Path | None, call: tuple[str, Any] | None = None) -> ToolCallUpdate:
    """The ``toolCall`` of the request: the call already announced, with its kind, title and ``pending``, the
    proposed change as a ``diff`` block first (clients such as CodeCompanion open their diff review only when
    ``content[0]`` is one) and the approval's note after it; ``oldText`` is absent for a new file (Threadline's
    diff has it empty). ``call``: the (tool, arguments) announced for it. A subagent's call is not one the client
    knows: the question is about the parent's ``task`` call (B-SUB-1), titled and kinded as the child's call."""
    title, kind = request_title(params, call), tools.tool_kind(params["tool"])
    content: list[Any] = []
    diff = params.get("diff")
    path = tools.resolve(cwd, diff.get("path")) if isinstance(diff, dict) and cwd is not None else None
    if isinstance(diff, dict) and path is not None:  # a subagent's edit too: the same diff to review
        old = diff.get("oldText") if diff.get("oldText") or path.exists() else None
        content.append(FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=diff["newText"]))
    detail = params.get("detail") or ""
    if params.get("parentToolCallId"):
        detail = f"A subagent asks to {VERBS.get(kind, 'use')} {title}\n{detail}".rstrip()
    if detail:
        content.append(tools.text_content(detail))
    return ToolCallUpdate(
        tool_call_id=params.get("parentToolCallId") or params["toolCallId"],
        title=title,
        kind=kind,
        status="pending",
        content=content or None,
        locations=[ToolCallLocation(path=str(path))] if path is not None else None,
    )


VERBS = {"execute": "run", "edit": "change", "read": "read", "search": "search", "fetch": "fetch"}


def task_card(call_id: str, task: tuple[str, Any] | None) -> ToolCallProgress:
    """The parent's ``task`` call as it was before a subagent's question borrowed it: its task, running."""
    name, args = task if task is not None else (tools.TASK_TOOL, None)
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        title=tools.title(name, args),
        kind=tools.tool_kind(name),
        status="in_progress",
    )


def decision_of(response: RequestPermissionResponse) -> tuple[str, bool]:
    """Threadline's decision, and whether the user rejected the tool for good."""
    outcome = response.outcome
    if isinstance(outcome, AllowedOutcome) and outcome.option_id in DECISIONS:
        return DECISIONS[outcome.option_id], outcome.option_id == "reject_always"
    return "reject", False
