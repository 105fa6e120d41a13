"""Request and result types of every client -> server method (PROTOCOL.md, "Client -> server requests").

Wire names are camelCase (``rename="camel"``); Python attributes are snake_case. Fields that PROTOCOL.md marks
optional default to ``None`` and are omitted on the wire when unset.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

# Integers a client sends: JSON's exactly representable range. A huge number (1e30 as an afterSeq) is a -32602
# naming the field, not an overflow deep in SQLite answered -32603.
SafeInt = Annotated[int, msgspec.Meta(ge=-(2**53 - 1), le=2**53 - 1)]


class Base(msgspec.Struct, rename="camel", omit_defaults=True, forbid_unknown_fields=False):
    """Common options: camelCase on the wire, unset optional fields are not sent."""


# --- OpenAI-shaped messages (snake_case inside, exactly as OpenAI defines them) -----------------------------


class OpenAIFunction(msgspec.Struct, omit_defaults=True):
    name: str
    arguments: str


class OpenAIToolCall(msgspec.Struct):
    """Always encoded with ``type: "function"``: providers reject a tool call without it."""

    id: str
    function: OpenAIFunction
    type: Literal["function"] = "function"


class OpenAIMessage(msgspec.Struct, omit_defaults=True):
    """A Chat Completions message. ``content`` is a string, null, or a list of content parts."""

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[OpenAIToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None


# --- sessions --------------------------------------------------------------------------------------------

ApprovalPolicy = Literal["ask", "autoEdit", "auto"]


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


class CreateSessionResult(Base):
    session_id: str


class ListSessionsParams(Base):
    cwd: str | None = None
    limit: SafeInt | None = None


class SessionInfo(Base):
    session_id: str
    title: str
    cwd: str
    created_at: str
    updated_at: str
    message_count: int
    parent_session_id: str | None = None


class ListSessionsResult(Base):
    sessions: list[SessionInfo]


class ImportSessionParams(Base):
    cwd: str
    messages: list[OpenAIMessage]
    title: str | None = None


class ImportSessionResult(Base):
    session_id: str
    message_count: int


class Image(Base):
    mime_type: str
    data: str  # base64


class TranscriptItem(Base):
    """One stored message. ``reasoning`` is shown to people but never sent to a model (R-SRC-3)."""

    seq: int
    role: str
    content: str | None
    created_at: str
    tool_calls: list[OpenAIToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    images: list[Image] | None = None
    status: Literal["complete", "interrupted"] = "complete"
    turn_id: str | None = None
    tool_status: Literal["ok", "error", "denied"] | None = None  # tool messages: how the call ended


class ReadTranscriptParams(Base):
    session_id: str
    after_seq: SafeInt | None = None
    limit: SafeInt | None = None


class ReadTranscriptResult(Base):
    items: list[TranscriptItem]
    next_seq: int | None = None


class SearchTranscriptParams(Base):
    query: str
    session_id: str | None = None
    limit: SafeInt | None = None


class SearchHit(Base):
    session_id: str
    seq: int
    role: str
    snippet: str


class SearchTranscriptResult(Base):
    hits: list[SearchHit]


class ForkSessionParams(Base):
    session_id: str
    at_seq: SafeInt | None = None


class ForkSessionResult(Base):
    session_id: str


class DeleteSessionParams(Base):
    session_id: str


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


class ReadEventsParams(Base):
    session_id: str
    kinds: list[str] | None = None
    after_id: SafeInt | None = None
    limit: SafeInt | None = None


class EventItem(Base):
    """A stored event: ``contextCompacted``, ``approvalRequested``, ``approvalDecided``, ``notice``..."""

    id: int
    kind: str
    created_at: str
    payload: dict[str, Any]
    turn_id: str | None = None


class ReadEventsResult(Base):
    events: list[EventItem]
    next_id: int | None = None


# --- turns -----------------------------------------------------------------------------------------------

StopReason = Literal["endTurn", "cancelled", "maxIterations", "error"]


class SubmitTurnParams(Base):
    session_id: str
    text: str
    images: list[Image] | None = None
    queue: bool = False  # while a turn runs: run right after it (and any queued before) instead of failing


class SteerTurnParams(Base):
    session_id: str
    text: str


class SteerTurnResult(Base):
    """The text is stored as a user message of the running turn before its next model call."""

    turn_id: str


class TurnUsage(msgspec.Struct, rename="camel"):
    """Always sent whole: a client reads zeros, never missing fields."""

    input_tokens: int = 0
    output_tokens: int = 0
    context_tokens: int = 0
    context_window_tokens: int = 0
    cached_input_tokens: int = 0  # B-CACHE-5: of input_tokens, what the provider served from its prompt cache
    cache_write_tokens: int = 0  # of input_tokens, what the provider wrote to its prompt cache (Anthropic)
    # The turn's model calls at the model's price; absent (never zero) when no price is known.
    cost_usd: float | msgspec.UnsetType = msgspec.UNSET


class TurnError(Base):
    code: str
    message: str


class SubmitTurnResult(Base):
    turn_id: str
    stop_reason: StopReason
    usage: TurnUsage
    error: TurnError | None = None


class CancelTurnParams(Base):
    session_id: str


class CancelTurnResult(Base):
    cancelled: bool


# --- context view ----------------------------------------------------------------------------------------

ViewMode = Literal["full", "microcompacted", "summarized", "fallback"]


class GetContextViewParams(Base):
    session_id: str
    context_window_tokens: SafeInt | None = None
    threshold_ratio: float | None = None
    keep_recent_tokens: SafeInt | None = None


class ContextViewResult(Base):
    messages: list[dict[str, Any]]
    estimated_tokens: int
    threshold_tokens: int
    context_window_tokens: int
    keep_recent_tokens: int
    mode: ViewMode
    compacted_tool_outputs: int
    transcript_messages: int
    before_tokens: int = 0
    summary: str | None = None
    # Tokens every request carries besides its messages (the tool definitions). ``thresholdTokens`` is the
    # messages' share: floor((contextWindowTokens - reservedTokens) * thresholdRatio), further scaled down when
    # the provider's reported usage shows the estimate runs low for this model (B-TOK-3).
    reserved_tokens: int = 0
    # B-CACHE-2: what a summary-path view aims at (floor(usable window * compactTargetRatio), at most the
    # threshold), so a compaction leaves room for many calls before the next one.
    compact_target_tokens: int = 0
    # B-CACHE-1: tokens of the leading messages identical to the last request this server process sent for the
    # session, i.e. what a provider's prompt cache could serve. 0 before the first call since the server started.
    stable_prefix_tokens: int = 0


class CompactSessionParams(Base):
    session_id: str
    focus: str | None = None  # kept verbatim in the summary's Focus: section until the next compaction


class CompactSessionResult(Base):
    """``compacted`` is false when there was nothing older than the recent tail to summarize."""

    compacted: bool
    mode: ViewMode  # "summarized", or "full" when nothing changed
    before_tokens: int
    after_tokens: int
    summary: str | None = None


# --- artifacts -------------------------------------------------------------------------------------------


class ByteRange(Base):
    offset: SafeInt
    length: SafeInt


class LineRange(Base):
    start: SafeInt
    end: SafeInt


class ArtifactSearch(Base):
    pattern: str
    max_matches: SafeInt | None = None


class ReadArtifactParams(Base):
    session_id: str
    artifact_id: str
    byte_range: ByteRange | None = None
    line_range: LineRange | None = None
    search: ArtifactSearch | None = None


class ArtifactMatch(Base):
    line: int
    text: str
    byte_offset: int


class ReadArtifactResult(Base):
    artifact_id: str
    total_bytes: int
    total_lines: int
    content: str | None = None
    matches: list[ArtifactMatch] | None = None
    search_note: str | None = None  # set when the search stopped at its deadline or searched long lines in part


# --- file checkpoints (issue 18) -------------------------------------------------------------------------

FileChange = Literal["created", "modified"]
RewindStatus = Literal["restored", "unchanged", "conflicted", "notRestorable"]


class ListCheckpointsParams(Base):
    session_id: str


class CheckpointFile(Base):
    path: str  # relative to the session folder
    change: FileChange
    restorable: bool
    tool_call_id: str
    note: str | None = None  # why it is not restorable


class TurnCheckpoints(Base):
    """A turn and the files its tool calls changed (in order; a file written twice is listed twice)."""

    turn_id: str
    seq: int  # the turn's first message (its user message); forkSession at seq - 1 drops the turn
    created_at: str
    files: list[CheckpointFile]


class ListCheckpointsResult(Base):
    turns: list[TurnCheckpoints]
    note: str  # what checkpoints cannot cover (run_command)


class RewindFilesParams(Base):
    session_id: str
    to_turn_id: str
    tool_call_id: str | None = None  # rewind from this call of the turn on, instead of from the turn's start
    dry_run: bool = False
    force: bool = False  # overwrite files changed outside Threadline since (reported conflicted otherwise)


class RewoundFile(Base):
    path: str
    status: RewindStatus  # in a dry run: what would happen
    change: Literal["restored", "removed"] | None = None  # restored its old content, or removed a file a turn made
    detail: str | None = None


class RewindFilesResult(Base):
    files: list[RewoundFile]
    dry_run: bool = False
    note: str = ""
# --- MCP servers -----------------------------------------------------------------------------------------

McpServerState = Literal["stopped", "starting", "ready", "failed", "needsApproval"]


class ListMcpServersParams(Base):
    session_id: str | None = None


class McpToolInfo(Base):
    name: str  # as the MCP server names it
    model_name: str  # mcp__<server>__<tool>, what the model calls
    description: str | None = None


class McpServerInfo(Base):
    """``origin``: ``user`` (config.toml), ``project`` (.mcp.json) or ``client`` (createSession)."""

    name: str
    origin: Literal["user", "project", "client"]
    transport: Literal["stdio", "http"]
    state: McpServerState
    command_line: str
    tools: list[McpToolInfo]
    reason: str | None = None
    restarts: int = 0


class ListMcpServersResult(Base):
    servers: list[McpServerInfo]


class RevokeMcpServerApprovalParams(Base):
    """Forget the "allow always" given to a project's ``.mcp.json`` server: it asks again before its next start."""

    cwd: str
    name: str


class RevokeMcpServerApprovalResult(Base):
    revoked: bool
