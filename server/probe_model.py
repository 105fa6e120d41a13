"""The configured model, called in process for ``threadline eval``: one request, no tools, bounded.

``threadline eval`` is a client-side tool (``server.cli.eval``): the recorded session goes through a real server
(``threadline replay``'s machinery), but the probes are asked of the model directly, with a view the server never
built (codex-style, naive) and no tools. This module is its one way into the provider code, as ``server.serve`` is
``threadline serve``'s: it reads the settings (``[provider]`` or ``[models.NAME]``, any kind), builds the same
provider a session would get, and turns every failure into ``ModelFailed`` with a message for the user. Nothing is
stored: no database is opened.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from server.agent.models import model_not_found, window_of
from server.config import ProviderSettings, load_settings
from server.config_file import ConfigError
from server.context.tokens import estimate_message_tokens
from server.providers import ChatProvider, ProviderError
from server.providers.kinds import PROVIDER_KINDS
from server.services.models import new_provider

__all__ = ["ModelFailed", "ProbeAnswer", "ProbeModel", "open_model"]


STUB_TOOL = {
    "type": "function",
    "function": {"name": "no_tools", "description": "Not available now: answer in text, without calling a tool."},
}


class ModelFailed(Exception):
    """The model could not be asked (nothing configured, an unknown model) or a call failed or timed out."""


@dataclass(frozen=True)
class ProbeAnswer:
    text: str
    input_tokens: int  # the provider's usage when it reports one, else the estimate of the request
    output_tokens: int


class ProbeModel:
    """One provider client; ``ask`` sends a message list with no tools and returns the text and its cost."""

    def __init__(self, provider: ChatProvider, settings: ProviderSettings, timeout: float):
        self.provider = provider
        self.settings = settings
        self.timeout = timeout
        self.calls = 0

    @property
    def window(self) -> int:
        return window_of(self.settings)

    @property
    def name(self) -> str:
        return f"{self.settings.kind}:{self.settings.model}"

    async def ask(self, messages: list[dict[str, Any]]) -> ProbeAnswer:
        self.calls += 1
        try:
            result = await asyncio.wait_for(
                self.provider.stream_chat(messages, self._tools(messages), None), self.timeout
            )
        except TimeoutError:
            raise ModelFailed(f"the model did not answer within {self.timeout:.0f} s (call {self.calls})") from None
        except ProviderError as exc:
            raise ModelFailed(f"the model call failed ({exc.kind}): {exc.message}") from None
        usage = result.usage
        if usage is not None:
            return ProbeAnswer(result.content, usage.prompt_tokens, usage.completion_tokens)
        sent = sum(estimate_message_tokens(m) for m in messages)
        return ProbeAnswer(
            result.content, sent, estimate_message_tokens({"role": "assistant", "content": result.content})
        )

    def _tools(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """None (no tools), except where the kind refuses a history of tool calls without tool definitions
        (Anthropic: "Requests which include tool_use or tool_result blocks must define tools"): there, one stub
        that says it is not available, so the model answers in text. Nothing is run whatever the model asks."""
        kind = PROVIDER_KINDS.get(self.settings.kind)
        if kind is None or not kind.tools_with_tool_history:
            return None
        if not any(m.get("tool_calls") or m.get("role") == "tool" for m in messages):
            return None
        return [STUB_TOOL]

    async def aclose(self) -> None:
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()


def open_model(name: str | None, timeout: float) -> ProbeModel:
    """The provider of ``[models.NAME]`` (or the default ``[provider]``) as the environment and config.toml say;
    each call is bounded by ``timeout`` seconds, retries included."""
    try:
        settings = load_settings()
    except (ConfigError, ValueError) as exc:
        raise ModelFailed(f"cannot read the settings: {exc}") from None
    if name is not None and name not in settings.models:
        raise ModelFailed(str(model_not_found(name, settings)))
    p = settings.models[name] if name is not None else settings.provider
    if not p.configured:
        raise ModelFailed(
            "no model is configured: set THREADLINE_BASE_URL and THREADLINE_MODEL (or [provider] in config.toml)"
        )
    return ProbeModel(new_provider(p, settings.provider_read_timeout_seconds), p, timeout)
