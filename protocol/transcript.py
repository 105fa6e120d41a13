"""Reading what a session stored: its messages (``readTranscript``), full-text search and its events."""

from __future__ import annotations

from typing import Any, Literal

from protocol.base import Base, OpenAIToolCall, SafeInt


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
    typed: str | None = None  # a user message that is a slash command's expansion: what the user typed


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
