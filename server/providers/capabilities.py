"""Known models' context windows (R-PIPE-3: used when config gives no explicit window).

Windows are the model's native limit as its maker publishes it. A local server (Ollama, llama.cpp,
vLLM) may run a model with a smaller window than this; explicit config wins over the table.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONTEXT_WINDOW = 32_000

_WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-5-chat": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-oss": 131_072,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    # DeepSeek
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "deepseek-v3": 128_000,
    "deepseek-r1": 128_000,
    # Qwen (DashScope and open weights)
    "qwen-max": 32_768,
    "qwen-plus": 131_072,
    "qwen-turbo": 1_000_000,
    "qwen3-max": 262_144,
    "qwen3-coder-plus": 1_000_000,
    "qwen3-coder": 262_144,
    "qwen3-": 131_072,
    "qwen3:": 40_960,
    "qwq": 131_072,
    "qwen2.5-coder": 32_768,
    "qwen2.5": 32_768,
    # Moonshot / Kimi
    "moonshot-v1-8k": 8_192,
    "moonshot-v1-32k": 32_768,
    "moonshot-v1-128k": 131_072,
    "moonshot-v1-auto": 131_072,
    "kimi-k2": 131_072,
    "kimi-k2-0905": 262_144,
    "kimi-k2-turbo": 262_144,
    "kimi-k2-thinking": 262_144,
    "kimi-latest": 131_072,
    # Meta Llama (Ollama tags and Hugging Face names)
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    # Others commonly reached through OpenAI-compatible gateways
    "claude-": 200_000,
    "gemini-2.5": 1_048_576,
    "gemini-2.0": 1_048_576,
    "mistral-large": 131_072,
    "codestral": 256_000,
    "glm-4.5": 131_072,
    "glm-4.6": 200_000,
}
# Longest prefix first, so "gpt-4o" wins over "gpt-4" and "kimi-k2-0905" over "kimi-k2".
_BY_PREFIX = sorted(_WINDOWS.items(), key=lambda item: len(item[0]), reverse=True)


def context_window_for(model: str) -> int | None:
    """The context window of a known model, or None. Gateway prefixes ("openai/gpt-4o",
    "meta-llama/Llama-3.3-70B") are ignored and matching is case-insensitive."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    for prefix, window in _BY_PREFIX:
        if name.startswith(prefix):
            return window
    return None


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``cached_input`` and ``cache_write`` default to ``input`` when a table omits them."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, prompt: int, output: int, cached: int = 0, cache_write: int = 0) -> float:
        """One call's cost: ``prompt`` includes the cached and cache-written tokens, each billed at its own rate."""
        fresh = max(0, prompt - cached - cache_write)
        read_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        return (fresh * self.input + cached * read_rate + cache_write * write_rate + output * self.output) / 1e6


# List prices as the makers published them (late 2025), USD per million tokens: input, cached input (a cache
# read), cache write, output. Prices change; ``[provider] price`` overrides the table, and a model not listed has
# no cost shown (never a zero).
_PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4": Price(15.0, 75.0, 1.5, 18.75),
    "claude-sonnet-4": Price(3.0, 15.0, 0.3, 3.75),
    "claude-3-7-sonnet": Price(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": Price(0.8, 4.0, 0.08, 1.0),
    "gpt-5": Price(1.25, 10.0, 0.125, 1.25),
    "gpt-5-mini": Price(0.25, 2.0, 0.025, 0.25),
    "gpt-5-nano": Price(0.05, 0.4, 0.005, 0.05),
    "gpt-4.1": Price(2.0, 8.0, 0.5, 2.0),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1, 0.4),
    "gpt-4o": Price(2.5, 10.0, 1.25, 2.5),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075, 0.15),
    "o3": Price(2.0, 8.0, 0.5, 2.0),
    "o4-mini": Price(1.1, 4.4, 0.275, 1.1),
    "deepseek-chat": Price(0.28, 0.42, 0.028, 0.28),
    "deepseek-reasoner": Price(0.28, 0.42, 0.028, 0.28),
}
_PRICES_BY_PREFIX = sorted(_PRICES.items(), key=lambda item: len(item[0]), reverse=True)


def price_for(model: str) -> Price | None:
    """The list price of a known model (matched as context_window_for matches), or None."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    for prefix, price in _PRICES_BY_PREFIX:
        if name.startswith(prefix):
            return price
    return None
