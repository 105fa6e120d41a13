"""What the model double answers when it plays ``llama-server`` (llama.cpp), byte for byte where llama-server's
bytes are known. Stdlib only, like the rest of the double.

- ``GET /props``: ``default_generation_settings.n_ctx`` (a slot's context), ``total_slots`` and
  ``chat_template_caps`` (``supports_tools``, ``supports_tool_calls``: false for a template without tools, whose
  server then drops the request's ``tools`` without a word), as tools/server/README.md documents them.
- Slots sharing one KV cache (``kv_unified``: current builds' default when ``-np`` is not given): every slot may
  hold ``n_ctx`` tokens, but together they hold ``n_ctx`` too. A request is held from its arrival until its answer
  is sent. When one arrives that does not fit beside the others, the batch that would hold it fails to decode and
  llama-server fails *every* slot being processed, not only the newcomer (server-context.cpp: "Context size has
  been exceeded." is sent to each ``slot.is_processing()``, whose prompt is then cleared): a request that had not
  answered yet gets HTTP 500 ``{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}``,
  one that was streaming gets the same object as its last event (``data: {"error":{...}}``, no ``[DONE]``).
- What the cache holds of a request: its messages and, when the template knows tools (``supports_tools``), the
  tool definitions it renders into the prompt; a template without tools drops them, and they count for nothing.
- A path nothing serves: HTTP 404 ``{"error":{"message":"File Not Found","type":"not_found_error","code":404}}``.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CONTENT_TYPE", "CONTEXT_EXCEEDED", "NOT_FOUND", "Hold", "LlamaServer"]

CONTENT_TYPE = "application/json; charset=utf-8"
CONTEXT_EXCEEDED = b'{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}'
NOT_FOUND = b'{"error":{"message":"File Not Found","type":"not_found_error","code":404}}'


@dataclass(eq=False)
class Hold:
    """One request's share of the shared cache; ``evicted`` is set when another request's arrival failed it."""

    tokens: int
    evicted: threading.Event = field(default_factory=threading.Event)


@dataclass
class LlamaServer:
    n_ctx: int = 8192  # per slot; with kv_unified the slots' shared total too
    total_slots: int = 4
    kv_unified: bool = True
    supports_tools: bool = True
    collisions: int = 0  # how many arrivals overfilled the shared cache (each failed every request being processed)
    _holds: list[Hold] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def props(self) -> bytes:
        payload: dict[str, Any] = {
            "default_generation_settings": {"id": 0, "id_task": -1, "n_ctx": self.n_ctx, "is_processing": False},
            "total_slots": self.total_slots,
            "model_path": "models/fake-model-q4_k_m.gguf",
            "chat_template": "...",
            "chat_template_caps": {
                "supports_tools": self.supports_tools,
                "supports_tool_calls": self.supports_tools,
                "supports_system_role": True,
                "supports_parallel_tool_calls": self.supports_tools,
                "supports_preserve_reasoning": False,
            },
            "modalities": {"vision": False},
            "build_info": "b7000-fake",
            "is_sleeping": False,
        }
        return json.dumps(payload, separators=(",", ":")).encode()

    def prompt_tokens(self, body: dict[str, Any], message_tokens: int) -> int:
        """What the prompt counts: the messages, plus the tool definitions a template with tools renders."""
        tools = body.get("tools") if self.supports_tools else None
        return message_tokens + (math.ceil(len(json.dumps(tools)) / 4) if tools else 0)

    def hold(self, tokens: int) -> Hold | None:
        """Take ``tokens`` of the shared cache for a request; None: it does not fit beside the others, and every
        request being processed fails with it (their holds are ``evicted``)."""
        hold = Hold(tokens)
        if not self.kv_unified:
            return hold
        with self._lock:
            if sum(h.tokens for h in self._holds) + tokens > self.n_ctx:
                self.collisions += 1
                for other in self._holds:
                    other.evicted.set()
                self._holds.clear()
                return None
            self._holds.append(hold)
            return hold

    def release(self, hold: Hold) -> None:
        with self._lock:
            if hold in self._holds:
                self._holds.remove(hold)
