"""Turns (``submitTurn``, ``steerTurn``, ``cancelTurn``) and the request view (``getContextView``,
``compactSession``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from protocol.base import Base, SafeInt
from protocol.editor import Range
from protocol.processes import ProcessInfo
from protocol.transcript import Image

# --- turns -----------------------------------------------------------------------------------------------

StopReason = Literal["endTurn", "cancelled", "maxIterations", "error"]


class SelectionContext(Base, tag_field="kind", tag="selection"):
    """Text the user selected in the editor; ``range`` None: the whole buffer as the editor holds it
    (an ACP embedded resource)."""

    uri: str
    text: str
    range: Range | None = None


class FileContext(Base, tag_field="kind", tag="file"):
    """A file to attach, read by the server (inside the session folder only)."""

    uri: str


class DiagnosticsContext(Base, tag_field="kind", tag="diagnostics"):
    """The editor's problems for a file, asked with ``editor/diagnostics``."""

    uri: str


ContextItem = SelectionContext | FileContext | DiagnosticsContext


class SubmitTurnParams(Base):
    session_id: str
    text: str
    images: list[Image] | None = None
    context: list[ContextItem] | None = None  # attached to the user message; ``@path`` in text too
    queue: bool = False  # while a turn runs: run right after it (and any queued before) instead of failing
    # At most this many model calls in this turn (default: the server's max_iterations); reaching it ends the turn
    # with stopReason "maxIterations".
    max_model_calls: Annotated[int, msgspec.Meta(ge=1, le=100_000)] | None = None
    # The text is data read from a recording (replay, eval), not typed now: a leading ``/name`` is not a command
    # (B-REC-1).
    literal: bool = False


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


class CommandOutcome(Base):
    """A built-in slash command the server answered without a model call: its name and what it says."""

    name: str
    output: str


class SubmitTurnResult(Base):
    turn_id: str
    stop_reason: StopReason
    usage: TurnUsage
    error: TurnError | None = None
    command: CommandOutcome | None = None  # set when the text was a built-in command (/compact, /context, /plan)


# --- slash commands --------------------------------------------------------------------------------------

CommandSource = Literal["project", "user", "builtin"]


class ListCommandsParams(Base):
    """The commands a session (its folder), or a folder, can use; neither: the user's and the built-ins."""

    session_id: str | None = None
    cwd: str | None = None


class CommandInfo(Base):
    name: str  # without the slash
    description: str
    source: CommandSource
    argument_hint: str | None = None


class ListCommandsResult(Base):
    commands: list[CommandInfo]  # sorted by name


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


PlanStatus = Literal["pending", "in_progress", "completed"]


class PlanEntry(Base):
    """One step of the agent's plan (``update_plan``, B-SUM-9)."""

    step: str
    status: PlanStatus


class Plan(Base):
    """The agent's latest plan: its steps in order, at most one ``in_progress``."""

    entries: list[PlanEntry]
    explanation: str | None = None


class ContextBreakdown(Base):
    """What fills the request, in estimated tokens: ``systemPrompt + projectContext + summary +
    messages + placeholders == estimatedTokens``, ``toolDefinitions == reservedTokens``, and ``free`` is what the
    window has left: ``max(0, contextWindowTokens - estimatedTokens - reservedTokens)``."""

    system_prompt: int
    project_context: int  # AGENTS.md, rules, validation policy, skills index, memory (the frozen context)
    tool_definitions: int  # built-in and MCP tools
    summary: int
    messages: int  # the conversation's messages, placeholders apart
    placeholders: int  # what the placeholders of microcompacted tool outputs still cost
    free: int
    # B-BUDGET-1: the tool outputs the budget cleared in this view, in order, each with why
    cleared: list[ClearedOutputInfo] = msgspec.field(default_factory=list)


class ClearedOutputInfo(Base):
    """One tool output the context budget cleared (B-BUDGET-1): its call, its tokens before and why."""

    tool_call_id: str
    tool: str
    tokens: int
    reason: str


class ContextBudget(Base):
    """B-BUDGET-1: the budget the view is planned against. ``source`` "config": ``[context] budget``, the view size
    past which old tool outputs are cleared; "auto": the rent-or-buy rule on the provider's cache prices, ``tokens``
    being how many tokens of re-reading stale outputs pay for the next clearing. ``reason`` says which and why."""

    tokens: int
    source: Literal["auto", "config"]
    reason: str


CompactionTrigger = Literal["auto", "manual", "promptTooLong"]


class CompactionRecord(Base):
    """One compaction of the session (a stored ``contextCompacted`` event), oldest first."""

    event_id: int
    at: str
    mode: ViewMode
    trigger: CompactionTrigger  # auto: over the threshold; manual: compactSession or /compact; promptTooLong: R-PTL-1
    before_tokens: int
    after_tokens: int
    focus: str | None = None


class TokenCalibration(Base):
    """B-TOK-4: the factor the session's model's figures are scaled by (the provider's reported prompt tokens over
    the server's estimate, learned per model, at least 1) and how many answers taught it; 0 samples: none yet."""

    factor: float = 1.0
    samples: int = 0


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
    # The session's latest plan (the newest planUpdated event); null before the agent made one (B-SUM-9).
    plan: Plan | None = None
    # The session's background processes this server holds, running or ended (listProcesses).
    processes: list[ProcessInfo] = msgspec.field(default_factory=list)
    breakdown: ContextBreakdown | None = None  # what fills the request (always set by the server)
    compactions: list[CompactionRecord] = msgspec.field(default_factory=list)  # the session's, oldest first
    # B-TOK-4: every token figure above is in the provider's tokens: the estimate scaled by this factor.
    calibration: TokenCalibration | None = None
    budget: ContextBudget | None = None  # B-BUDGET-1 (always set by the server)


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
