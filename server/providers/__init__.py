"""Model providers: the ChatProvider interface and its OpenAI-compatible HTTP implementation."""

from .base import (
    ChatProvider,
    ChatResult,
    OnEvent,
    ReasoningDelta,
    Retrying,
    ServerNotice,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from .capabilities import DEFAULT_CONTEXT_WINDOW, context_window_for
from .errors import ProviderError, is_context_too_long
from .llama_props import drops_tools
from .openai_compat import OpenAICompatibleProvider

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "ChatProvider",
    "ChatResult",
    "OnEvent",
    "OpenAICompatibleProvider",
    "ProviderError",
    "ReasoningDelta",
    "Retrying",
    "ServerNotice",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "Usage",
    "context_window_for",
    "drops_tools",
    "is_context_too_long",
]
