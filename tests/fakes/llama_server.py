"""What the model double answers when it plays ``llama-server`` (llama.cpp), byte for byte where llama-server's
bytes are known. Stdlib only, like the rest of the double.

- ``GET /props``: ``default_generation_settings.n_ctx`` (a slot's context), ``total_slots`` and
  ``chat_template_caps`` (``supports_tools``, ``supports_tool_calls``: false for a template without tools, whose
  server then drops the request's ``tools`` without a word), as tools/server/README.md documents them.
- Slots sharing one KV cache (``kv_unified``: current builds' default when ``-np`` is not given): every slot may
  hold ``n_ctx`` tokens, but together they hold ``n_ctx`` too, so a request arriving while another holds the cache
  fails with HTTP 500 ``{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}``.
  A request is held from its arrival until its answer is sent.
- A path nothing serves: HTTP 404 ``{"error":{"message":"File Not Found","type":"not_found_error","code":404}}``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CONTENT_TYPE", "CONTEXT_EXCEEDED", "NOT_FOUND", "LlamaServer"]

CONTENT_TYPE = "application/json; charset=utf-8"
CONTEXT_EXCEEDED = b'{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}'
NOT_FOUND = b'{"error":{"message":"File Not Found","type":"not_found_error","code":404}}'


@dataclass
class LlamaServer:
    n_ctx: int = 8192  # per slot; with kv_unified the slots' shared total too
    total_slots: int = 4
    kv_unified: bool = True
    supports_tools: bool = True
    _held: int = 0
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

    def hold(self, tokens: int) -> bool:
        """Take ``tokens`` of the shared cache for a request; False: it does not fit beside the others."""
        if not self.kv_unified:
            return True
        with self._lock:
            if self._held + tokens > self.n_ctx:
                return False
            self._held += tokens
            return True

    def release(self, tokens: int) -> None:
        if self.kv_unified:
            with self._lock:
                self._held -= tokens
