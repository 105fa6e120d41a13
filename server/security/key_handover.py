"""Handing provider keys to a server process over a pipe instead of its environment (stdlib only).

``server.security.secret_env`` uses it when the server re-executes itself to hide its keys; a client that starts the server
(``server.cli.client``) uses it first, so the server has nothing to hide and starts once. The client
hands over the built-in key variables only (it reads no configuration); the server hides whatever else it finds.
"""

from __future__ import annotations

import json
import os

KEY_VARS = (
    "THREADLINE_API_KEY",
    "OPENAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "DASHSCOPE_API_KEY",
    "MOONSHOT_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
)
FD_VAR = "THREADLINE_SECRETS_FD"
MAX_PIPE_BYTES = 60_000  # under a pipe's buffer, so the write cannot block before the exec


def hand_over_keys(env: dict[str, str]) -> tuple[dict[str, str], int | None]:
    """``env`` without the built-in key variables (nor any variable holding the same value), naming the read end of
    a pipe that holds them (``secret_env.take_keys`` reads it); that read end, or None when there is nothing to
    hand over."""
    if FD_VAR in env:
        return env, None
    return hand_over(env, {k: env[k] for k in KEY_VARS if env.get(k)})


def hand_over(env: dict[str, str], keys: dict[str, str]) -> tuple[dict[str, str], int | None]:
    """``env`` without ``keys`` (nor their values under other names) and the read end of a pipe holding them."""
    payload = json.dumps(keys).encode()
    if not keys or len(payload) > MAX_PIPE_BYTES:
        return env, None
    values = set(keys.values())
    env = {k: v for k, v in env.items() if k not in keys and v not in values and k != FD_VAR}
    read_end, write_end = os.pipe()
    os.write(write_end, payload)
    os.close(write_end)
    env[FD_VAR] = str(read_end)
    return env, read_end
