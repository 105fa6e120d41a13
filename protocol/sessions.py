"""Sessions: create, list, update, models, import, fork, delete, and the approvals remembered for them."""

from __future__ import annotations

from typing import Literal

import msgspec

from protocol.base import Base, OpenAIMessage, SafeInt
from protocol.worktrees import WorktreeInfo

# --- sessions --------------------------------------------------------------------------------------------

# "plan": read-only tools and update_plan only; writes, commands and MCP tools are refused
ApprovalPolicy = Literal["ask", "autoEdit", "auto", "plan"]
# B-SBX-1: how run_command's processes are confined (docs/SANDBOX.md)
SandboxMode = Literal["workspace-write", "read-only", "off"]


class SandboxStatus(Base):
    """A session's sandbox as it applies now (B-SBX-2): ``enforced`` false means commands are not confined as
    ``mode`` says (``reason`` says why) and every command asks; ``mechanism`` names what confines them
    (``landlock-v7+userns``, ``none``); ``network`` is whether commands may use the network."""

    mode: SandboxMode
    enforced: bool
    mechanism: str
    network: bool
    reason: str | None = None


class NameValue(Base):
    name: str
    value: str


class McpServerParam(Base):
    """An MCP server a client passes to ``createSession`` (the Agent Client Protocol shape): stdio
    ``{name, command, args, env}`` or ``{type: "http", name, url, headers}``. Kept in memory, never stored."""

    name: str
    type: Literal["stdio", "http"] | None = None
    command: str | None = None
    args: list[str] | None = None
    env: list[NameValue] | None = None
    url: str | None = None
    headers: list[NameValue] | None = None


class CreateSessionParams(Base):
    cwd: str
    title: str | None = None
    approval_policy: ApprovalPolicy | None = None
    mcp_servers: list[McpServerParam] | None = None
    model: str | None = None  # a configured model's name (listModels); absent: the server's default provider
    sandbox: SandboxMode | None = None  # absent: the server's default (config [sandbox] mode, THREADLINE_SANDBOX)
    # B-WT-1: in a new git worktree of cwd's repository, on branch threadline/NAME (true: a name is made up)
    worktree: str | bool | None = None
    base: str | None = None  # what the worktree's branch starts from (a branch, tag or commit); absent: HEAD


class CreateSessionResult(Base):
    session_id: str
    sandbox: SandboxStatus | None = None
    worktree: WorktreeInfo | None = None


class ListSessionsParams(Base):
    cwd: str | None = None
    limit: SafeInt | None = None
    include_children: bool = False  # subagents' sessions too (B-SUB-1); left out by default


class SessionTotals(msgspec.Struct, rename="camel"):
    """A session's stored usage, summed over every model call (the ``usage`` events), across restarts; sent whole,
    as ``usage.totals`` is."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | msgspec.UnsetType = msgspec.UNSET  # absent when no call had a known price (never zero)


class SessionInfo(Base):
    session_id: str
    title: str
    cwd: str
    created_at: str
    updated_at: str
    message_count: int
    parent_session_id: str | None = None  # a fork's source, or the session whose ``task`` call runs this one
    parent_tool_call_id: str | None = None  # a subagent's session: the parent's ``task`` call (B-SUB-1)
    model: str | None = None  # the session's named model; absent: the server's default provider
    approval_policy: ApprovalPolicy | None = None  # absent: the server's default policy
    totals: SessionTotals | None = None  # what its model calls used and cost; absent before the first call
    # B-DAEMON-1: live state in the serving process (always sent by the server; absent from an older one)
    running: bool | None = None  # a turn runs in it now
    waiting_for_approval: bool | None = None  # a running turn waits for an approval answer
    attached_clients: int | None = None  # connections attached to it (``attachSession``) now
    worktree: WorktreeInfo | None = None  # B-WT-1: a worktree session's worktree, branch and diff stat


class ListSessionsResult(Base):
    sessions: list[SessionInfo]


class AttachSessionParams(Base):
    """B-DAEMON-1: subscribe this connection to a session's updates; with ``since_seq``, first replay every update
    whose ``seq`` is greater, in order."""

    session_id: str
    since_seq: SafeInt | None = None


class AttachSessionResult(Base):
    """``seq``: the session's last update number when the attach took effect (replayed updates end there, live
    ones follow it). ``truncated``: updates after ``since_seq`` are no longer held; what was replayed starts later,
    so the client reloads the transcript (``readTranscript``) and goes on from the live updates."""

    session_id: str
    seq: int
    running: bool
    waiting_for_approval: bool
    truncated: bool | None = None


class DetachSessionParams(Base):
    session_id: str


class DetachSessionResult(Base):
    detached: bool  # false: this connection was not attached to it


class UpdateSessionParams(Base):
    """Fields left out are unchanged; ``model: null`` (or ``approvalPolicy: null``) goes back to the server's
    default. Applies from the session's next model call, a running turn's included."""

    session_id: str
    model: str | msgspec.UnsetType | None = msgspec.UNSET
    approval_policy: ApprovalPolicy | msgspec.UnsetType | None = msgspec.UNSET
    sandbox: SandboxMode | msgspec.UnsetType | None = msgspec.UNSET  # from the session's next turn


class UpdateSessionResult(Base):
    """The session's settings now; absent fields mean the server's defaults."""

    session_id: str
    model: str | None = None
    approval_policy: ApprovalPolicy | None = None
    context_window_tokens: int = 0  # the window the next request is built for
    sandbox: SandboxStatus | None = None


class ListModelsParams(Base):
    pass


class ModelPrice(Base):
    """USD per million tokens; ``cachedInput`` and ``cacheWrite`` absent mean the input rate."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None


class ModelInfo(Base):
    name: str | None  # the ``[models.NAME]``; null for the server's default provider
    provider: str  # the provider kind: "openai", "anthropic" or "openai-responses"
    model: str
    context_window_tokens: int
    price: ModelPrice | None = None  # absent when no price is known (no cost is shown)


class ListModelsResult(Base):
    models: list[ModelInfo]  # the configured ``[models.NAME]``, in config order
    default: ModelInfo | None = None  # what a session without a model uses; absent when none is configured


class ImportSessionParams(Base):
    cwd: str
    messages: list[OpenAIMessage]
    title: str | None = None


class ImportSessionResult(Base):
    session_id: str
    message_count: int


class ForkSessionParams(Base):
    session_id: str
    at_seq: SafeInt | None = None


class ForkSessionResult(Base):
    session_id: str


class DeleteSessionParams(Base):
    session_id: str
    force: bool | None = None  # a worktree session with work not merged: delete it anyway (UnmergedWork otherwise)


class EmptyResult(Base):
    pass


class ListApprovalsParams(Base):
    session_id: str


class RememberedApproval(Base):
    """One remembered "allow always": ``scope`` is what it matches, ``covers`` says so in words."""

    id: str
    tool: str
    scope: str
    covers: str
    created_at: str


class ListApprovalsResult(Base):
    approvals: list[RememberedApproval]


class RevokeApprovalParams(Base):
    session_id: str
    id: str


class RevokeApprovalResult(Base):
    revoked: RememberedApproval
