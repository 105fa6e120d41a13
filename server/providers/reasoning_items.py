"""Reasoning a provider needs back unchanged: kept on the stored assistant message, sent only to its own kind.

Anthropic rejects a tool-use continuation whose assistant message lost its thinking blocks (or their signatures);
the Responses API with ``store: false`` needs each reasoning item's ``encrypted_content`` back. Neither is text:
never shown as the answer, never counted as context (the token estimate reads only the sent OpenAI keys), and a
Chat Completions server never sees them. In a view message they sit under ``reasoning_items``.
"""

from __future__ import annotations

from typing import Any

KEY = "reasoning_items"


def tagged(provider: str, item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "provider": provider}


def items_for(message: dict[str, Any], provider: str) -> list[dict[str, Any]]:
    """The provider's own items of a view message, as that provider sent them (the tag removed)."""
    items = message.get(KEY) or ()
    return [
        {k: v for k, v in item.items() if k != "provider"}
        for item in items
        if isinstance(item, dict) and item.get("provider") == provider
    ]


def without_reasoning_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For Chat Completions, which rejects unknown message keys: the messages without them (copied only if needed)."""
    if not any(KEY in m for m in messages):
        return messages
    return [{k: v for k, v in m.items() if k != KEY} for m in messages]
