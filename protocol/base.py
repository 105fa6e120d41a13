"""What every wire type shares: the camelCase ``Base``, the safe integer, and the OpenAI-shaped messages
(snake_case inside, exactly as OpenAI defines them) that sessions are imported from and tool calls travel as."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

# Integers a client sends: JSON's exactly representable range. A huge number (1e30 as an afterSeq) is a -32602
# naming the field, not an overflow deep in SQLite answered -32603.
SafeInt = Annotated[int, msgspec.Meta(ge=-(2**53 - 1), le=2**53 - 1)]


class Base(msgspec.Struct, rename="camel", omit_defaults=True, forbid_unknown_fields=False):
    """Common options: camelCase on the wire, unset optional fields are not sent."""


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
    # A tool message's failure flag as the recorded format has it (Claude Code's ``is_error``): an import keeps it,
    # so the summary and microcompaction know the call failed even when its text does not say so (B-SUM-10).
    is_error: bool | None = None
