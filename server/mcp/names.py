"""Model-facing names of MCP tools: ``mcp__<server>__<tool>``, within the providers' ``^[a-zA-Z0-9_-]{1,64}$``."""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
MAX_NAME = 64
_BAD = re.compile(r"[^a-zA-Z0-9_-]")


def model_tool_name(server: str, tool: str) -> str:
    """Characters outside the allowed set become ``_``; a name over 64 characters is cut and given a short hash of
    the full name, so two long names that share a beginning stay distinct."""
    name = f"{PREFIX}{_BAD.sub('_', server)}__{_BAD.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return name[: MAX_NAME - 9] + "_" + digest
