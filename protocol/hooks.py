"""Hooks (``listHooks``, ``revokeHooksApproval``) and the offline policy check (``checkPolicy``)."""

from __future__ import annotations

from typing import Literal

from protocol.base import Base, OpenAIMessage
from protocol.sessions import ApprovalPolicy

HookSource = Literal["user", "project"]
CallDecision = Literal["allow", "ask", "deny", "forbidden"]


class ListHooksParams(Base):
    cwd: str


class HookInfo(Base):
    """One configured hook; ``approved`` is false for a project's hook whose file (as it is now) was not
    approved "always" (user hooks from config.toml are always approved)."""

    event: str
    command: str
    source: HookSource
    approved: bool
    timeout: float
    matcher: str | None = None


class ListHooksResult(Base):
    hooks: list[HookInfo]
    problems: list[str] | None = None  # a project hook file that cannot be used, and why


class RevokeHooksApprovalParams(Base):
    """Forget the "allow always" given to a project's ``.threadline/hooks.toml``: it asks again before it runs."""

    cwd: str


class RevokeHooksApprovalResult(Base):
    revoked: bool


class CheckPolicyParams(Base):
    """The decision the live server would make for every tool call of a recorded session (``messages``, as
    ``importSession`` takes them, or a stored ``sessionId``), in ``cwd`` under ``policy``; no tool runs, no model
    is called, the ``PreToolUse`` hooks run with the recorded input."""

    cwd: str
    policy: ApprovalPolicy | None = None
    messages: list[OpenAIMessage] | None = None
    session_id: str | None = None


class PolicyCall(Base):
    index: int
    tool_call_id: str
    tool: str
    decision: CallDecision
    by: str
    reason: str


class PolicySummary(Base):
    allow: int
    ask: int
    deny: int
    forbidden: int


class CheckPolicyResult(Base):
    calls: list[PolicyCall]
    summary: PolicySummary
