"""How editor answers read to the model: relative paths, 1-based lines and columns, one source line per
location, capped with a count of the rest. Positions on the wire count UTF-16 code units (LSP)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from protocol.editor import Diagnostic, Location, SymbolInfo
from server.grounding.link import uri_to_path
from server.project.workspace import is_inside

MAX_ITEMS = 50  # locations, symbols or diagnostics listed; the rest are counted
MAX_SOURCE_CHARS = 200  # a source line longer than this is cut
SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}
SYMBOL_KINDS = [
    "file",
    "module",
    "namespace",
    "package",
    "class",
    "method",
    "property",
    "field",
    "constructor",
    "enum",
    "interface",
    "function",
    "variable",
    "constant",
    "string",
    "number",
    "boolean",
    "array",
    "object",
    "key",
    "null",
    "enum-member",
    "struct",
    "event",
    "operator",
    "type-parameter",
]


def utf16_offset(line: str, column: int) -> int:
    """The UTF-16 offset of 0-based character ``column`` in ``line`` (past the end: the end)."""
    return len(line[:column].encode("utf-16-le")) // 2


def char_column(line: str, utf16: int) -> int:
    """The 0-based character index of UTF-16 offset ``utf16`` in ``line``."""
    units = 0
    for index, char in enumerate(line):
        if units >= utf16:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def read_line(path: Path, line: int) -> str | None:
    """Line ``line`` (0-based) of a text file, or None when it cannot be read."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for index, text in enumerate(handle):
                if index == line:
                    return text.rstrip("\r\n")
    except OSError:
        return None
    return None


class Place:
    """Where a URI points, as the model reads it: a path relative to the session folder (or the URI as given,
    outside it: no source is read from there)."""

    def __init__(self, cwd: Path, uri: str, line: int, utf16: int):
        path = uri_to_path(uri)
        self.inside = path is not None and is_inside(cwd, path)
        self.source = read_line(path, line) if self.inside and path is not None else None
        column = char_column(self.source, utf16) if self.source is not None else utf16
        if self.inside and path is not None:
            self.name = path.resolve().relative_to(cwd.resolve()).as_posix()
        else:
            self.name = str(path) if path is not None else uri
        self.label = f"{self.name}:{line + 1}:{column + 1}"

    def source_line(self) -> list[str]:
        if self.source is None:
            return [] if self.inside else ["    (outside the session folder)"]
        text = self.source.strip()
        return [f"    {text[:MAX_SOURCE_CHARS]}{'…' if len(text) > MAX_SOURCE_CHARS else ''}"]


def _capped(lines_per_item: Iterable[list[str]], total: int) -> list[str]:
    out: list[str] = []
    for index, lines in enumerate(lines_per_item):
        if index == MAX_ITEMS:
            break
        out += lines
    if total > MAX_ITEMS:
        out.append(f"… and {total - MAX_ITEMS} more")
    return out


def locations_text(cwd: Path, what: str, locations: list[Location]) -> str:
    if not locations:
        return f"The editor found no {what}."
    head = f"{len(locations)} {what}:" if len(locations) != 1 else f"1 {what.rstrip('s')}:"
    items = (_location_lines(cwd, loc) for loc in locations)
    return "\n".join([head, *_capped(items, len(locations))])


def _location_lines(cwd: Path, loc: Location) -> list[str]:
    place = Place(cwd, loc.uri, loc.range.start.line, loc.range.start.character)
    return [place.label, *place.source_line()]


def diagnostic_line(cwd: Path, item: Diagnostic) -> list[str]:
    place = Place(cwd, item.uri, item.range.start.line, item.range.start.character)
    tag = ", ".join(str(x) for x in (item.source, item.code) if x not in (None, ""))
    message = " ".join(item.message.split())
    return [f"{place.label} {SEVERITY[item.severity]}: {message}{f' [{tag}]' if tag else ''}", *place.source_line()]


def counts(items: list[Diagnostic]) -> str:
    parts = []
    for severity, name in SEVERITY.items():
        n = sum(1 for d in items if d.severity == severity)
        if n:
            parts.append(f"{n} {name}{'s' if n != 1 else ''}")
    return ", ".join(parts)


def diagnostics_text(cwd: Path, items: list[Diagnostic]) -> str:
    if not items:
        return "The editor reports no problems."
    ordered = sorted(items, key=lambda d: (d.severity, d.uri, d.range.start.line, d.range.start.character))
    head = f"{len(items)} problem{'s' if len(items) != 1 else ''} ({counts(items)}):"
    return "\n".join([head, *_capped((diagnostic_line(cwd, d) for d in ordered), len(items))])


def symbols_text(cwd: Path, query: str, symbols: list[SymbolInfo]) -> str:
    if not symbols:
        return f"The editor found no symbols matching {query!r}."

    def lines(sym: SymbolInfo) -> list[str]:
        place = Place(cwd, sym.uri, sym.range.start.line, sym.range.start.character)
        kind = SYMBOL_KINDS[sym.kind - 1] if 1 <= sym.kind <= len(SYMBOL_KINDS) else "symbol"
        container = f" in {sym.container_name}" if sym.container_name else ""
        return [f"{sym.name} ({kind}{container}) {place.label}"]

    head = f"{len(symbols)} symbol{'s' if len(symbols) != 1 else ''} matching {query!r}:"
    return "\n".join([head, *_capped((lines(s) for s in symbols), len(symbols))])
