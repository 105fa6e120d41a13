"""The provider kinds, registered once: ``[provider] kind`` names a row here, and everything that differs by kind
(which client speaks it, where it lives when no base URL is set, what it refuses) is read from the row. Each client
reports usage in one shape (``Usage``: prompt tokens include the cached ones) whatever its wire says. Adding a kind
is one client module under ``server/providers/`` and one row (docs/ARCHITECTURE.md, "Add a provider kind").

Per-kind cache prices (what a cache read or write costs against plain input) belong on this row too, once the
budget reads them by kind; today a price comes from ``[provider] price`` or the model table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .anthropic import AnthropicProvider
from .base import ChatProvider
from .openai_compat import OpenAICompatibleProvider
from .responses import ResponsesProvider

# base_url, api_key, model, read timeout, max output tokens, thinking budget tokens
Build = Callable[[str, str | None, str, float, int | None, int | None], ChatProvider]


@dataclass(frozen=True)
class ProviderKind:
    name: str
    build: Build
    default_base_url: str | None = None  # None: there is no one server for this kind, a base URL is required
    tools_with_tool_history: bool = False  # refuses a history of tool calls sent without tool definitions


def _openai(url: str, key: str | None, model: str, timeout: float, out: int | None, _: int | None) -> ChatProvider:
    return OpenAICompatibleProvider(url, key, model, read_timeout=timeout, max_output_tokens=out)


def _responses(url: str, key: str | None, model: str, timeout: float, out: int | None, _: int | None) -> ChatProvider:
    return ResponsesProvider(url, key, model, read_timeout=timeout, max_output_tokens=out)


def _anthropic(
    url: str, key: str | None, model: str, timeout: float, out: int | None, think: int | None
) -> ChatProvider:
    return AnthropicProvider(url, key, model, read_timeout=timeout, max_tokens=out, thinking_budget_tokens=think)


# "openai" is Chat Completions (any compatible server: llama.cpp, vLLM, Ollama, DeepSeek, OpenAI itself).
PROVIDER_KINDS: Mapping[str, ProviderKind] = MappingProxyType(
    {
        k.name: k
        for k in (
            ProviderKind("openai", _openai),
            ProviderKind(
                AnthropicProvider.kind,
                _anthropic,
                "https://api.anthropic.com/v1",
                tools_with_tool_history=True,
            ),
            ProviderKind(ResponsesProvider.kind, _responses, "https://api.openai.com/v1"),
        )
    }
)
