"""The editor's language features as agent tools, offered only for what the client advertised.

Lines and columns are 1-based for the model and become LSP's 0-based, UTF-16 positions on the wire; paths stay
inside the session folder. Whatever goes wrong with the editor reads as ``Tool failed: ...``, never a failed turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from protocol.editor import (
    EditorDiagnosticsParams,
    EditorPositionParams,
    EditorWorkspaceSymbolsParams,
    Position,
)
from server.grounding.link import EditorLink, EditorUnavailable, path_to_uri, uri_to_path
from server.grounding.text import diagnostics_text, locations_text, read_line, symbols_text, utf16_offset
from server.project.workspace import OutsideWorkspace, is_inside, resolve_inside
from server.sandbox.policy import is_hidden
from server.tools.base import Tool, ToolContext, ToolDenied, ToolFailure, require_str, schema

_PATH = {"type": "string", "description": "File path, relative to the session folder"}
_LINE = {"type": "integer", "minimum": 1, "description": "1-based line"}
_COLUMN = {"type": "integer", "minimum": 1, "description": "1-based column of the symbol (a character in it)"}


def _hidden(ctx: ToolContext) -> tuple[str, ...]:
    """What the sandbox hides from commands is hidden from the editor tools too (B-SBX-1), as from the file tools."""
    return ctx.sandbox.policy.deny_read if ctx.sandbox is not None else ()


def _inside(ctx: ToolContext, raw: str) -> Path:
    try:
        path = resolve_inside(ctx.cwd, raw)
    except OutsideWorkspace as exc:
        raise ToolDenied(str(exc)) from None
    if is_hidden(path, _hidden(ctx)):
        raise ToolDenied(f"Permission denied: {raw} is hidden by the sandbox's deny_read")
    return path


def _one_based(args: dict[str, Any], key: str) -> int:
    value = args.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolFailure(f"Invalid arguments: {key!r} must be an integer >= 1 (1-based)")
    return value


def _position(ctx: ToolContext, args: dict[str, Any]) -> tuple[Path, Position]:
    path = _inside(ctx, require_str(args, "path"))
    if not path.is_file():
        raise ToolFailure(f"{require_str(args, 'path')}: no such file")
    line, column = _one_based(args, "line") - 1, _one_based(args, "column") - 1
    text = read_line(path, line)
    if text is None:
        raise ToolFailure(f"{require_str(args, 'path')} has no line {line + 1}")
    return path, Position(line=line, character=utf16_offset(text, column))


async def _ask(link: EditorLink, method: str, params: Any) -> Any:
    try:
        return await link.request(method, params)
    except EditorUnavailable as exc:
        raise ToolFailure(str(exc)) from None


def editor_tools(link: EditorLink) -> dict[str, Tool]:
    """The tools for what ``link``'s client advertised (none for a client that advertised nothing)."""

    async def get_diagnostics(ctx: ToolContext, args: dict[str, Any]) -> str:
        raw = args.get("path")
        if raw is not None and not isinstance(raw, str):
            raise ToolFailure("Invalid arguments: 'path' must be a string")
        uris = [path_to_uri(_inside(ctx, raw))] if raw else None
        result = await _ask(link, "editor/diagnostics", EditorDiagnosticsParams(uris=uris))
        items = [d for d in result.items if _uri_inside(ctx.cwd, d.uri) and _shown(ctx, d.uri)]  # the session's only
        return diagnostics_text(ctx.cwd, items)

    def navigate(method: str, what: str) -> Callable[[ToolContext, dict[str, Any]], Awaitable[str]]:
        async def run(ctx: ToolContext, args: dict[str, Any]) -> str:
            path, position = _position(ctx, args)
            result = await _ask(link, method, EditorPositionParams(uri=path_to_uri(path), position=position))
            # a hidden file is as absent to the model as it is to a command: no name, no source line
            return locations_text(ctx.cwd, what, [loc for loc in result.locations if _shown(ctx, loc.uri)])

        return run

    async def workspace_symbols(ctx: ToolContext, args: dict[str, Any]) -> str:
        query = require_str(args, "query")
        result = await _ask(link, "editor/workspaceSymbols", EditorWorkspaceSymbolsParams(query=query))
        return symbols_text(
            ctx.cwd, query, [s for s in result.symbols if _uri_inside(ctx.cwd, s.uri) and _shown(ctx, s.uri)]
        )

    position_schema = schema(["path", "line", "column"], path=_PATH, line=_LINE, column=_COLUMN)
    tools = [
        (
            "editor/diagnostics",
            Tool(
                "get_diagnostics",
                "The errors and warnings the editor's language servers report, for one file or every file.",
                schema([], path={**_PATH, "description": "A file (relative to the session folder); omit: all"}),
                get_diagnostics,
            ),
        ),
        (
            "editor/definition",
            Tool(
                "find_definition",
                "Where the symbol at a position is defined, from the editor's language servers.",
                position_schema,
                navigate("editor/definition", "definitions"),
            ),
        ),
        (
            "editor/references",
            Tool(
                "find_references",
                "Every reference to the symbol at a position, from the editor's language servers.",
                position_schema,
                navigate("editor/references", "references"),
            ),
        ),
        (
            "editor/workspaceSymbols",
            Tool(
                "workspace_symbols",
                "Find classes, functions and other symbols by name across the workspace (editor's language servers).",
                schema(["query"], query={"type": "string", "description": "Part of the symbol's name"}),
                workspace_symbols,
            ),
        ),
    ]
    return {tool.name: tool for method, tool in tools if link.offers(method)}


def _uri_inside(cwd: Path, uri: str) -> bool:
    path = uri_to_path(uri)
    return path is not None and is_inside(cwd, path)


def _shown(ctx: ToolContext, uri: str) -> bool:
    """Not in a path the sandbox hides (resolved as the hidden list is)."""
    path = uri_to_path(uri)
    if path is None:
        return True
    try:
        return not is_hidden(path.resolve(), _hidden(ctx))
    except (OSError, RuntimeError):  # a link loop: nothing to read there anyway
        return False
