"""The agent's tools, by name. ``run_tool`` turns every failure into a result the model reads."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from server.project.workspace import OutsideWorkspace, resolve_inside
from server.tools import background, command, files, memory, plan, recall
from server.tools.base import EditWatcher, Tool, ToolContext, ToolDenied, ToolFailure, ToolOutcome
from server.tools.web import tools as web

# What runs one tool call: ``run_tool`` below, or a replay's recorded results (``server.replay``).
ToolRunner = Callable[[ToolContext, str, dict[str, Any]], Awaitable[ToolOutcome]]

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in [
        *files.TOOLS,
        *command.TOOLS,
        *background.TOOLS,
        *recall.TOOLS,
        *memory.TOOLS,
        *plan.TOOLS,
        *web.TOOLS,
    ]
}


def tool_specs(extra: Iterable[Tool] = ()) -> list[dict[str, Any]]:
    """The built-in tools' definitions, then a session's own (its MCP tools)."""
    return [t.spec() for t in [*TOOLS.values(), *extra]]


def available_tools(ctx: ToolContext) -> dict[str, Tool]:
    """The tools a turn offers and runs: the built-in ones, then its session's own (MCP tools, ``task``), within a
    named agent's allow-list when it has one."""
    tools = {**TOOLS, **ctx.session_tools}
    return tools if ctx.allowed is None else {name: t for name, t in tools.items() if name in ctx.allowed}


def parse_arguments(raw: str) -> dict[str, Any]:
    try:
        args = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ToolFailure(f"Invalid arguments: not valid JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(args, dict):
        raise ToolFailure("Invalid arguments: expected a JSON object")
    return args


async def run_tool(ctx: ToolContext, name: str, args: dict[str, Any]) -> ToolOutcome:
    tools = available_tools(ctx)
    tool = tools.get(name)
    if tool is None:
        available = ", ".join(tools)
        return ToolOutcome(f"Tool failed: unknown tool {name!r}; available: {available}", "error")
    try:
        if ctx.edit_watch is not None and tool.writes_paths:
            return ToolOutcome(await _watched(ctx, ctx.edit_watch, tool, args), "ok")
        return ToolOutcome(await tool.run(ctx, args), "ok")
    except ToolDenied as exc:
        return ToolOutcome(str(exc), "denied")
    except ToolFailure as exc:
        return ToolOutcome(f"Tool failed: {exc}", "error")
    except (OSError, UnicodeError, ValueError) as exc:
        return ToolOutcome(f"Tool failed: {type(exc).__name__}: {exc}", "error")


async def _watched(ctx: ToolContext, watch: EditWatcher, tool: Tool, args: dict[str, Any]) -> str:
    """Run a file write between two looks at the editor's diagnostics for the file; the problems the write
    introduced are appended to its result."""
    raw = args.get(tool.writes_paths[0])
    try:
        path = resolve_inside(ctx.cwd, raw) if isinstance(raw, str) else None
    except OutsideWorkspace:
        path = None  # the tool itself refuses it
    if path is None:
        return await tool.run(ctx, args)
    before = await watch.before(path)
    result = await tool.run(ctx, args)
    return result + await watch.after(ctx.cwd, path, before)


__all__ = [
    "TOOLS",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolRunner",
    "available_tools",
    "parse_arguments",
    "run_tool",
    "tool_specs",
]
