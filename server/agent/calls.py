"""The one decision about a tool call before it runs: the live agent loop and ``checkPolicy`` both call
``decide_call``, so an offline check of a recorded session answers exactly what the live server would.

Order: the ``PreToolUse`` hooks first (they see every call, built-in or MCP: SPEC B-HOOK-1); a block, or a hook
that failed, denies (fail closed). Then plan mode: under policy ``plan`` every call that needs an approval is
refused. Then the deny lists: a forbidden command, or a fetch from a host in ``[web] deny_hosts``, is
refused whatever a hook allowed. A
hook's ``allow`` then skips the approval (the sandbox still applies), its ``ask`` asks under every policy. Else
the approval policy decides, with the protected paths and the session's remembered "always" grants.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from server.agent.approvals import PLAN_MODE, Approvals
from server.hooks.service import Verdict
from server.tools import Tool
from server.tools.command import forbidden_reason

Decision = Literal["allow", "ask", "deny", "forbidden"]
PreHooks = Callable[[Tool, dict[str, Any]], Awaitable[Verdict | None]]
SEVERITY: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2, "forbidden": 3}


@dataclass(frozen=True)
class CallDecision:
    decision: Decision
    by: str  # policy, protected path, remembered rule, deny list, hook: <command>
    reason: str = ""


async def decide_call(
    tool: Tool, args: dict[str, Any], approvals: Approvals, pre_hooks: PreHooks | None
) -> CallDecision:
    verdict = await pre_hooks(tool, args) if pre_hooks is not None else None
    if verdict is not None and verdict.decision == "deny":
        return CallDecision("deny", verdict.by, verdict.reason)
    if refusal := approvals.plan_mode_refusal(tool):  # plan mode: whatever a hook allowed
        return CallDecision("deny", PLAN_MODE, refusal)
    if tool.facts.sandboxed and (why := forbidden_reason(str(args.get("command", "")))):
        return CallDecision("forbidden", "deny list", why)
    if why := approvals.denied_host(tool, args):  # [web] deny_hosts, under every policy (B-WEB-1)
        return CallDecision("forbidden", "deny_hosts", why)
    # A hook's allow never lets a command out of the sandbox unasked (B-SBX-2, B-SBX-3): the sandbox's rules ask.
    if verdict is not None and (
        verdict.decision == "ask" or (verdict.decision == "allow" and not approvals.sandbox_asks(tool, args))
    ):
        return CallDecision(verdict.decision, verdict.by, verdict.reason)  # type: ignore[arg-type]
    decision, by, reason = approvals.judge(tool, args)
    return CallDecision(decision, by, reason)  # type: ignore[arg-type]
