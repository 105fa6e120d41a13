"""Known models' context windows (R-PIPE-3: used when config gives no explicit window).

Windows are the model's native limit as its maker publishes it. A local server (Ollama, llama.cpp,
vLLM) may run a model with a smaller window than this; explicit config wins over the table.
"""

from __future__ import annotations

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
