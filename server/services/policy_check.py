"""``checkPolicy``: the decision the live server would make for every tool call of a recorded session, by the
same ``decide_call`` the agent loop uses. The ``PreToolUse`` hooks run with the recorded input; no tool runs and
no model is called (``threadline policy-check``). The session's sandbox (its mode, else the server's
default) and the ``[approvals]`` rules of config.toml count as they would live (B-SBX-2, B-SBX-3)."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from protocol.hooks import CheckPolicyParams, CheckPolicyResult, PolicyCall, PolicySummary
from server.agent import turn_hooks
from server.agent.approvals import Approvals, approval_policy
from server.agent.calls import CallDecision, decide_call
from server.agent.remembered import RememberedApprovals
from server.errors import InvalidParams
from server.hooks.service import SessionHooks
from server.project.workspace import checked_folder
from server.sandbox.mode import command_sandbox
from server.services.needs import CoreExtensions, CoreStore
from server.tools import TOOLS, Tool, parse_arguments
from server.tools.base import ToolFailure
from server.tools.web.tools import search_tools
from server.worktrees.confined import session_sandbox


class PolicyCheckNeeds(CoreStore, CoreExtensions, Protocol):
    """What ``checkPolicy`` uses of the ``Core``."""


async def _nobody(method: str, params: Any) -> Any:
    raise RuntimeError("checkPolicy asks nobody")


async def check_policy(core: PolicyCheckNeeds, params: CheckPolicyParams) -> CheckPolicyResult:
    cwd = checked_folder(params.cwd)
    remembered = RememberedApprovals()
    policy = params.policy or core.settings.approval_policy
    sandbox = command_sandbox(core.settings.sandbox, "policy-check", cwd, core.settings.sandbox.mode)
    if params.session_id is not None:
        stored, session = await core.session(params.session_id)
        messages = [m.to_openai() for m in await core.store.all_messages(stored.id)]
        remembered = await session.approvals()  # the session's "always" grants, as they stand
        policy = params.policy or approval_policy(stored.approval_policy, core.settings.approval_policy)
        sandbox = await session_sandbox(core.store, core.settings.sandbox, stored.id, cwd)
    elif params.messages is not None:
        messages = msgspec.to_builtins(params.messages)
    else:
        raise InvalidParams("checkPolicy needs messages or sessionId")
    rules = core.settings.approval_rules
    approvals = Approvals(
        core.store, _nobody, policy, remembered, cwd, core.settings.home, sandbox, rules, web=core.settings.web
    )
    hooks = core.hooks.offline(
        cwd, params.session_id or "policy-check", core.settings.api_keys(), sandbox, core.processes
    )
    calls: list[PolicyCall] = []
    for call in _tool_calls(messages):
        decided = await _decide(call, approvals, hooks, search_tools(core.settings.web))
        calls.append(
            PolicyCall(
                index=len(calls),
                tool_call_id=str(call.get("id", "")),
                tool=_name(call),
                decision=decided.decision,
                by=decided.by,
                reason=decided.reason,
            )
        )
    summary = PolicySummary(**{d: sum(c.decision == d for c in calls) for d in ("allow", "ask", "deny", "forbidden")})
    return CheckPolicyResult(calls=calls, summary=summary)


def _tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        c for m in messages if m.get("role") == "assistant" for c in (m.get("tool_calls") or []) if isinstance(c, dict)
    ]


def _name(call: dict[str, Any]) -> str:
    return str((call.get("function") or {}).get("name", ""))


async def _decide(
    call: dict[str, Any], approvals: Approvals, hooks: SessionHooks, offered: dict[str, Tool]
) -> CallDecision:
    name = _name(call)
    tool = TOOLS.get(name) or offered.get(name) or _mcp_tool(name)
    if tool is None:  # the live loop runs nothing for it either: the model is told which tools exist
        return CallDecision("deny", "unknown tool", f"no tool named {name!r}")
    try:
        args = parse_arguments(str((call.get("function") or {}).get("arguments") or "{}"))
    except ToolFailure as exc:
        return CallDecision("deny", "invalid arguments", str(exc))
    call_id = str(call.get("id", ""))
    return await decide_call(tool, args, approvals, lambda t, a: turn_hooks.pre_tool(hooks, t, a, call_id))


def _mcp_tool(name: str) -> Tool | None:
    """An MCP tool as the live loop knows one (``server.mcp.service``): approved like a command."""
    if not name.startswith("mcp__") or name.count("__") < 2:
        return None

    async def never(ctx: Any, args: dict[str, Any]) -> str:
        raise ToolFailure("not run by checkPolicy")

    return Tool(name, "", {"type": "object"}, never, approval="command")


__all__ = ["check_policy"]
