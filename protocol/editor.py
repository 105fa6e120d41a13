"""Editor grounding on the wire: what a client says it can answer, and the server -> client requests
that ask its language features. LSP shapes: 0-based lines and UTF-16 characters, ``file://`` URIs."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from protocol.base import Base, SafeInt

NonNegative = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]


class EditorCapabilities(Base):
    """``initialize``'s ``capabilities.experimental.threadline.editor``: what the client answers. Absent: nothing."""

    diagnostics: bool = False
    definition: bool = False
    references: bool = False
    workspace_symbols: bool = False
    diagnostics_after_edit: bool = True  # the user's choice in the editor: ask for diagnostics after each edit
    settle_ms: Annotated[int, msgspec.Meta(ge=0, le=10_000)] = 1500  # how long the language server may take


class Position(Base):
    line: NonNegative
    character: NonNegative


class Range(Base):
    start: Position
    end: Position


class Location(Base):
    uri: str
    range: Range


Severity = Literal[1, 2, 3, 4]  # LSP DiagnosticSeverity: error, warning, information, hint


class Diagnostic(Base):
    uri: str
    range: Range
    severity: Severity = 1
    message: str = ""
    source: str | None = None
    code: str | SafeInt | None = None


class EditorDiagnosticsParams(Base):
    uris: list[str] | None = None  # None: every file the editor has diagnostics for


class EditorDiagnosticsResult(Base):
    items: list[Diagnostic] = msgspec.field(default_factory=list)


class EditorPositionParams(Base):
    """``editor/definition`` and ``editor/references``."""

    uri: str
    position: Position


class EditorLocationsResult(Base):
    locations: list[Location] = msgspec.field(default_factory=list)


class EditorWorkspaceSymbolsParams(Base):
    query: str


class SymbolInfo(Base):
    name: str
    kind: SafeInt  # LSP SymbolKind
    uri: str
    range: Range
    container_name: str | None = None


class EditorWorkspaceSymbolsResult(Base):
    symbols: list[SymbolInfo] = msgspec.field(default_factory=list)


# method -> (params, result, the capability that enables it)
EDITOR_REQUESTS: dict[str, tuple[type, type, str]] = {
    "editor/diagnostics": (EditorDiagnosticsParams, EditorDiagnosticsResult, "diagnostics"),
    "editor/definition": (EditorPositionParams, EditorLocationsResult, "definition"),
    "editor/references": (EditorPositionParams, EditorLocationsResult, "references"),
    "editor/workspaceSymbols": (EditorWorkspaceSymbolsParams, EditorWorkspaceSymbolsResult, "workspace_symbols"),
}
