"""What a llama.cpp server (``llama-server``) says about itself at ``GET /props``, for the two things its answers
leave unsaid.

- ``chat_template_caps.supports_tools`` (and ``supports_tool_calls``): false when the model's chat template has no
  tool section. llama-server then drops the request's ``tools`` without a word and the model cannot call anything,
  so the user is told once (``TOOLS_DROPPED``).
- ``default_generation_settings.n_ctx``: a slot's context size. Its HTTP 500 "Context size has been exceeded."
  (the slots' shared KV cache filled up, as when two sessions run at once) states no size, unlike its 400
  ``exceed_context_size_error``; the slot's size is the window to plan for (R-PTL-1).

Any other server answers 404 (or something that is not these fields), which means: nothing known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

__all__ = [
    "SHARED_CONTEXT_FULL",
    "TOOLS_DROPPED",
    "ServerProps",
    "drops_tools",
    "parse_props",
    "props_url",
    "read_props",
]

PROPS_TIMEOUT = 5.0  # seconds: a local server answers at once; a remote one that does not is not llama-server
SHARED_CONTEXT_FULL = "Context size has been exceeded"  # llama-server's message (HTTP 500, type server_error)
TOOLS_DROPPED = (
    "the model server's chat template has no tool support (llama.cpp /props: chat_template_caps.supports_tools is "
    "false), so it silently drops the tools Threadline sends: the model cannot read, edit or run anything. Start "
    "llama-server with --jinja and a chat template that knows tools (--chat-template-file), or pick a model whose "
    "template does (docs/LOCAL_MODELS.md)"
)


@dataclass(frozen=True)
class ServerProps:
    slot_tokens: int | None  # default_generation_settings.n_ctx: one slot's context
    supports_tools: bool | None  # None: the server does not say


def props_url(base_url: str) -> str:
    """``/props`` at the server's root: llama-server serves the OpenAI API under ``/v1`` and its own beside it."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return f"{root}/props"


def parse_props(payload: Any) -> ServerProps | None:
    if not isinstance(payload, dict):
        return None
    settings = payload.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    caps = payload.get("chat_template_caps")
    supports: bool | None = None
    if isinstance(caps, dict) and any(isinstance(caps.get(k), bool) for k in ("supports_tools", "supports_tool_calls")):
        supports = caps.get("supports_tools") is not False and caps.get("supports_tool_calls") is not False
    slot = n_ctx if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0 else None
    if slot is None and supports is None:
        return None
    return ServerProps(slot, supports)


async def read_props(client: httpx.AsyncClient, base_url: str, headers: dict[str, str]) -> ServerProps | None:
    """The server's props, or None when it has none (any failure: this is a hint, never a reason to fail)."""
    try:
        response = await client.get(props_url(base_url), headers=headers, timeout=PROPS_TIMEOUT)
        if response.status_code != 200 or len(response.content) > 4 * 1024 * 1024:
            return None
        return parse_props(response.json())
    except Exception:  # noqa: BLE001 - a hint asked beside a real call: whatever went wrong, nothing is known
        return None


def drops_tools(provider: object) -> bool:
    """Whether ``provider``'s server said its chat template drops the tools it is sent (llama.cpp ``/props``): the
    tool definitions then hold no room in its requests, so none is reserved for them (the view, the meter and
    compaction planning count the same, the server's)."""
    return getattr(provider, "drops_tools", False) is True
