"""save_memory: append a fact to the user's or the project's memory file (R-FRZ-2: later sessions only)."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from server.private_files import open_private
from server.tools.base import Tool, ToolContext, ToolFailure, require_str, schema

MAX_MEMORY_ENTRY = 4000


def memory_path(ctx: ToolContext, scope: str) -> Path:
    if scope == "user":
        return ctx.settings.home / "memory.md"
    if scope == "project":
        return ctx.cwd / ".threadline" / "memory.md"
    raise ToolFailure('Invalid arguments: \'scope\' must be "user" or "project"')


async def save_memory(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = memory_path(ctx, require_str(args, "scope"))
    text = " ".join(require_str(args, "text").split())
    if len(text) > MAX_MEMORY_ENTRY:
        raise ToolFailure(f"a memory entry is at most {MAX_MEMORY_ENTRY} characters")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")

    def append() -> None:
        if args["scope"] == "user":  # in the data folder: the user's alone; a project's file is the project's
            stream = os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            stream = path.open("a", encoding="utf-8")
        with stream as fh:
            fh.write(f"- {text} ({stamp})\n")

    await asyncio.to_thread(append)
    return (
        f"Saved to {args['scope']} memory ({path}). It takes effect in new sessions; "
        "this session keeps the memory it started with."
    )


TOOLS = [
    Tool(
        "save_memory",
        'Remember a durable fact for future sessions: scope "project" (this folder) or "user".',
        schema(["scope", "text"], scope={"type": "string", "enum": ["user", "project"]}, text={"type": "string"}),
        save_memory,
        approval="edit",
        writes_paths=(),
    ),
]
