"""Server -> client messages: the ``sessionUpdate`` notification and the ``requestApproval`` request.

``update`` is a tagged union on ``kind`` (protocol/README.md, "sessionUpdate").
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from protocol.messages import (
    ApprovalPolicy,
    Base,
    CompactionTrigger,
    Image,
    OpenAIToolCall,
    PlanEntry,
    StopReason,
    TurnError,
    ViewMode,
)


class Update(Base, tag_field="kind"):
    """Base of every update kind."""


class TurnStarted(Update, tag="turnStarted"):
    pass


class UserMessage(Update, tag="userMessage"):
    text: str  # what the model sees (a slash command's expansion)
    typed: str | None = None  # what the user typed, when it was a slash command
    images: list[Image] | None = None
    steered: bool = False  # sent with steerTurn into a running turn


class FileDiff(Base):
    """A file change as whole texts before and after; ``oldText`` is empty for a new file."""

    path: str
    old_text: str
    new_text: str


class AssistantDelta(Update, tag="assistantDelta"):
    text: str


class ReasoningDelta(Update, tag="reasoningDelta"):
    text: str


class AssistantMessage(Update, tag="assistantMessage"):
    content: str
    reasoning: str | None = None
    tool_calls: list[OpenAIToolCall] | None = None
    interrupted: bool = False


class ToolCall(Update, tag="toolCall"):
    tool_call_id: str
    tool: str
    arguments: Any
    title: str | None = None


class ToolStarted(Update, tag="toolStarted"):
    """The announced call starts running (after its approval, if one was asked): clients show it as in progress."""

    tool_call_id: str
    tool: str


ToolStatus = Literal["ok", "error", "denied"]


class ToolResult(Update, tag="toolResult"):
    tool_call_id: str
    tool: str
    status: ToolStatus
    content: str
    artifact_id: str | None = None
    diff: FileDiff | None = None  # an applied edit_file/write_file change


class ArtifactCreated(Update, tag="artifactCreated"):
    artifact_id: str
    tool_call_id: str
    total_bytes: int
    total_lines: int


class ContextCompacting(Update, tag="contextCompacting"):
    """A compaction has started (R-OBS-1): the pipeline is about to compact this request (``auto``), a
    ``compactSession`` began (``manual``), or the R-PTL-1 retry builds its fallback (``promptTooLong``). The
    ``contextCompacted`` of the same compaction follows; clients show it as state until then (a ``/compact`` with
    nothing to compact answers ``compacted: false`` instead)."""

    trigger: CompactionTrigger
    before_tokens: int  # the transcript's estimate, as the contextCompacted that follows reports it


class ContextCompacted(Update, tag="contextCompacted"):
    """R-OBS-1: every compaction, with estimated sizes before and after, and the summary text."""

    mode: ViewMode
    before_tokens: int
    after_tokens: int
    summary: str


class PlanUpdate(Update, tag="plan"):
    """The agent set its plan (``update_plan``): every step with its status, in order (B-SUM-9)."""

    entries: list[PlanEntry]
    explanation: str | None = None


class TokenTotals(msgspec.Struct, rename="camel"):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # B-CACHE-5: the session's input tokens served from the provider's prompt cache
    cache_write_tokens: int = 0  # the session's input tokens written to the provider's prompt cache (Anthropic)
    # The session's model calls in USD; absent until a call had a known price.
    cost_usd: float | msgspec.UnsetType = msgspec.UNSET


class Usage(Update, tag="usage"):
    """B-METER-1: ``contextTokens`` is the size of the last request view, never a cumulative figure.

    B-CACHE-5: ``cachedInputTokens`` is the part of ``inputTokens`` the provider served from its prompt cache;
    absent when the provider reports no such figure. ``cacheWriteTokens`` is the part written to the cache, billed
    apart (Anthropic's ``cache_creation_input_tokens``). ``costUsd`` is this call at the model's price (the table
    in providers/capabilities.py or ``[provider] price``); absent, never zero, when no price is known.
    """

    context_tokens: int
    context_window_tokens: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    totals: TokenTotals = msgspec.field(default_factory=TokenTotals)
    # B-BUDGET-1: the context budget the request was planned against, shown beside the window: its source
    # ("auto": the rent-or-buy rule on the cache prices; "config": [context] budget) and, for "config", its tokens
    budget_source: Literal["auto", "config"] | None = None
    budget_tokens: int | None = None


class TurnCompleted(Update, tag="turnCompleted"):
    stop_reason: StopReason
    error: TurnError | None = None


class Notice(Update, tag="notice"):
    level: Literal["info", "warning", "error"]
    message: str


class McpServerStatus(Update, tag="mcpServerStatus"):
    """An MCP server of the session changed state (``reason`` says why it failed)."""

    name: str
    state: Literal["stopped", "starting", "ready", "failed", "needsApproval"]
    transport: Literal["stdio", "http"]
    reason: str | None = None
    tools: list[str] | None = None  # the model names of its tools, when ready


class HookRun(Update, tag="hookRun"):
    """A hook ran (SPEC B-HOOK-1); stored alike as a ``hookRun`` event. ``decision`` is what it answered
    (``block`` for exit 2), ``failure`` why it failed (then a ``PreToolUse`` call was blocked)."""

    event: str
    command: str
    source: Literal["user", "project"]
    duration_ms: int
    exit_code: int | None = None
    decision: Literal["allow", "deny", "ask", "block"] | None = None
    output: str = ""  # a bounded excerpt of stdout and stderr
    reason: str | None = None
    additional_context: str | None = None
    failure: str | None = None
    tool_call_id: str | None = None
    tool: str | None = None


AnyUpdate = (
    TurnStarted
    | UserMessage
    | AssistantDelta
    | ReasoningDelta
    | AssistantMessage
    | ToolCall
    | ToolStarted
    | ToolResult
    | ArtifactCreated
    | ContextCompacting
    | ContextCompacted
    | Usage
    | TurnCompleted
    | Notice
    | McpServerStatus
    | HookRun
    | PlanUpdate
)


class SessionUpdate(Base):
    session_id: str
    update: AnyUpdate
    turn_id: str | None = None
    # B-DAEMON-1: the session's update number, +1 per update, set where updates leave for Threadline clients
    seq: int | None = None
    message_seq: int | None = None  # the stored transcript message this update announces (``readTranscript``)
    # A subagent's update (B-SUB-1): its session is a child of this one, run by this ``task`` tool call.
    parent_session_id: str | None = None
    parent_tool_call_id: str | None = None


ApprovalOption = Literal["allowOnce", "allowAlways", "reject"]


class RequestApprovalParams(Base):
    session_id: str
    turn_id: str
    tool_call_id: str
    tool: str
    title: str
    detail: str
    options: list[ApprovalOption] = msgspec.field(default_factory=lambda: ["allowOnce", "allowAlways", "reject"])
    diff: FileDiff | None = None  # edit_file/write_file: the proposed change, for a diff view with allow/reject
    parent_session_id: str | None = None  # asked by a subagent (B-SUB-1): its parent session and ``task`` call
    parent_tool_call_id: str | None = None
    # B-SBX-3: true when the command would run outside the OS sandbox (an escalation, or no sandbox here)
    outside_sandbox: bool | None = None
    reason: str | None = None  # the model's reason for an escalation


class RequestApprovalResult(Base):
    decision: ApprovalOption


# --- initialize ------------------------------------------------------------------------------------------


ProviderKind = Literal["openai", "anthropic", "openai-responses"]


class ProviderOptions(Base):
    base_url: str | None = None
    api_key: str | None = None
    model: str | None = None
    context_window_tokens: int | None = None
    kind: ProviderKind | None = None  # default "openai" (Chat Completions), as env THREADLINE_PROVIDER


class InitializationOptions(Base):
    """``initialize``'s ``initializationOptions``: overrides env and config.toml for this connection."""

    provider: ProviderOptions | None = None
    approval_policy: ApprovalPolicy | None = None
    token: str | None = None  # required in TCP mode
    sandbox: Literal["workspace-write", "read-only", "off"] | None = None  # this connection's default mode
    # Nobody can answer requestApproval on this connection (``threadline exec``): a call that would ask is refused
    # at once, and the model reads why.
    unattended: bool = False
