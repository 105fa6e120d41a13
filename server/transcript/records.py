"""Plain records the store reads and writes, and their conversion to the OpenAI message shape."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from server.context.messages import pipeline_message
from server.errors import InvalidMessage

ROLES = ("system", "user", "assistant", "tool")
# the ``messages`` columns a ``StoredMessage`` is read from, in order (the store's ``_message``)
MESSAGE_COLUMNS = (
    "seq, role, content, tool_calls, tool_call_id, name, reasoning, images, status, turn_id, created_at, tokens,"
    " reasoning_items, tool_status"
)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex}"


@dataclass(frozen=True)
class StoredSession:
    id: str
    title: str
    cwd: str
    created_at: str
    updated_at: str
    message_count: int
    parent_id: str | None = None
    approval_policy: str | None = None
    model: str | None = None  # a ``[models.NAME]`` name; None: the server's default provider
    parent_tool_call_id: str | None = None  # a subagent's session: the parent's ``task`` call (B-SUB-1)


TOOL_STATUSES = ("ok", "error", "denied")
MessageStatus = Literal["complete", "interrupted"]
ToolStatus = Literal["ok", "error", "denied"]


@dataclass
class NewMessage:
    """A message about to be appended. ``tool_calls`` are OpenAI dicts; ``images`` are {mimeType, data}."""

    role: str
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    images: list[dict[str, str]] | None = None
    status: MessageStatus = "complete"
    reasoning_items: list[dict[str, Any]] | None = None  # opaque, for the provider that made them
    tool_status: ToolStatus | None = None  # tool messages: ok, error or denied, as the loop knew it

    def validate(self, where: str = "message") -> None:
        if self.role not in ROLES:
            raise InvalidMessage(f"{where}.role: must be one of {', '.join(ROLES)}, got {self.role!r}")
        if self.role == "tool" and not self.tool_call_id:
            raise InvalidMessage(f"{where}.tool_call_id: a tool message needs the id of the call it answers")
        if self.tool_status is not None and (self.role != "tool" or self.tool_status not in TOOL_STATUSES):
            raise InvalidMessage(
                f"{where}.tool_status: only tool messages carry one, one of {', '.join(TOOL_STATUSES)}"
            )
        if self.tool_calls and self.role != "assistant":
            raise InvalidMessage(f"{where}.tool_calls: only assistant messages carry tool calls")
        for i, call in enumerate(self.tool_calls or []):
            fn = call.get("function") if isinstance(call, dict) else None
            if not (
                isinstance(call, dict)
                and isinstance(call.get("id"), str)
                and isinstance(fn, dict)
                and isinstance(fn.get("name"), str)
                and isinstance(fn.get("arguments"), str)
            ):
                raise InvalidMessage(
                    f"{where}.tool_calls[{i}]: expected {{id, type: 'function', function: {{name, arguments: string}}}}"
                )


@dataclass(frozen=True)
class StoredMessage:
    seq: int
    role: str
    content: str | None
    created_at: str
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    images: list[dict[str, str]] | None = None
    status: MessageStatus = "complete"
    turn_id: str | None = None
    tokens: int | None = None
    reasoning_items: list[dict[str, Any]] | None = None
    tool_status: ToolStatus | None = None

    def to_openai(self) -> dict[str, Any]:
        """The pipeline's input shape (``server.context.messages``): OpenAI keys plus ``reasoning``/``seq``/
        ``status``/``tool_status``, never sent."""
        return pipeline_message(
            self.seq,
            self.role,
            self.content,
            tool_calls=self.tool_calls,
            tool_call_id=self.tool_call_id,
            name=self.name,
            reasoning=self.reasoning,
            images=[(img["mimeType"], img["data"]) for img in self.images or ()],
            status=self.status,
            reasoning_items=self.reasoning_items,
            tool_status=self.tool_status,
        )


@dataclass(frozen=True)
class Event:
    id: int
    session_id: str
    kind: str
    payload: dict[str, Any]
    created_at: str
    turn_id: str | None = None


@dataclass(frozen=True)
class Artifact:
    id: str
    session_id: str
    path: str
    total_bytes: int
    total_lines: int
    created_at: str
    tool_call_id: str | None = None


@dataclass(frozen=True)
class SearchHit:
    session_id: str
    seq: int
    role: str
    snippet: str


DEFAULT_PAGE = 200  # items a paged read returns when the client names no limit
MAX_PAGE = 1000  # and at most, whatever it names


def page_size(limit: int | None) -> int:
    """The items a paged read (``readTranscript``, ``readEvents``) returns for a client's ``limit``."""
    return min(limit if limit and limit > 0 else DEFAULT_PAGE, MAX_PAGE)


@dataclass
class TranscriptPage:
    items: list[StoredMessage] = field(default_factory=list)
    next_seq: int | None = None


def dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def loads(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def searchable_text(msg: NewMessage) -> str:
    """What FTS indexes for a message: its text and its tool calls (names and arguments)."""
    parts = [msg.content or ""]
    for call in msg.tool_calls or []:
        fn = call.get("function", {})
        parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return "\n".join(p for p in parts if p)
