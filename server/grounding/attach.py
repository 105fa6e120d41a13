"""Context in the prompt: what the user points at, attached to the user message.

``submitTurn {context}`` items (a selection, a file, a file's diagnostics) and every ``@relative/path`` in the text
that names a file become ``<context ...>`` blocks after the user's text, stored in the user message, so the pipeline
counts them like any other content and a resumed or compacted session still has them. A file or selection over
``ARTIFACT_THRESHOLD`` becomes an artifact with a preview (``read_artifact`` reads the rest). Anything outside the
session folder, or hidden by the sandbox's ``deny_read``, is refused with a note (to the user and the model) and
never read.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path

from protocol.editor import EditorDiagnosticsParams
from protocol.turns import ContextItem, DiagnosticsContext, FileContext, SelectionContext
from server.artifacts import ArtifactStore
from server.grounding.link import EditorLink, EditorUnavailable, uri_to_path
from server.grounding.text import diagnostics_text
from server.project.workspace import NotRegularFile, is_inside, read_regular_file
from server.sandbox.policy import is_hidden

MAX_FILE_BYTES = 8 * 1024 * 1024  # a file past this is not attached at all (a note says so)
MAX_ITEMS = 50  # context items and mentions in one prompt
# ``@path``: not inside a word or an e-mail address; trailing punctuation ends it (``see @a.py.``)
MENTION = re.compile(r"(?<![\w@/.])@((?:\.{0,2}/)?[\w.\-]+(?:/[\w.\-]+)*)")


@dataclass
class AttachedContext:
    """The user message's text with the blocks after it, and the notes on what was not attached."""

    text: str
    notes: list[str] = field(default_factory=list)


@dataclass
class _Attacher:
    cwd: Path
    session_id: str
    artifacts: ArtifactStore
    editor: EditorLink | None
    hidden: tuple[str, ...] = ()  # the sandbox's deny list, resolved: never attached (B-SBX-1)
    blocks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)

    def _inside(self, uri: str, shown: str) -> Path | None:
        path = uri_to_path(uri) if "://" in uri else None
        if path is None:
            self.notes.append(f"not attached: {shown} is not a local file (file:// URI)")
        elif not is_inside(self.cwd, path):
            self.notes.append(f"not attached: {shown} is outside the session folder {self.cwd}")
        elif (resolved := self._resolved(path, shown)) is not None and not self._hidden(resolved, shown):
            return resolved
        return None

    def _resolved(self, path: Path, shown: str) -> Path | None:
        try:
            return path.resolve()
        except (OSError, RuntimeError) as exc:  # a link loop made meanwhile: a note, never a failed turn
            self.notes.append(f"not attached: {shown} cannot be resolved ({getattr(exc, 'strerror', None) or exc})")
            return None

    def _hidden(self, path: Path, shown: str) -> bool:
        if is_hidden(path, self.hidden):
            self.notes.append(f"not attached: {shown} is hidden from the agent (sandbox deny_read)")
            return True
        return False

    def _name(self, path: Path) -> str:
        return path.relative_to(self.cwd.resolve()).as_posix() or "."

    async def _block(self, attrs: str, body: str) -> None:
        stored = await self.artifacts.keep(self.session_id, None, body)  # past 50 KB: an artifact and a preview
        self.blocks.append(f"<context {attrs}>\n{stored.text}\n</context>")

    async def file(self, path: Path, shown: str) -> None:
        if ("file", str(path)) in self.seen:
            return
        self.seen.add(("file", str(path)))
        try:
            data, size = await asyncio.to_thread(read_regular_file, path, MAX_FILE_BYTES + 1)
        except (NotRegularFile, OSError) as exc:
            self.notes.append(f"not attached: {shown}: {getattr(exc, 'strerror', None) or exc}")
            return
        if size > MAX_FILE_BYTES:
            self.notes.append(f"not attached: {shown} is larger than {MAX_FILE_BYTES} bytes")
        elif b"\x00" in data[:8192]:
            self.notes.append(f"not attached: {shown} looks like a binary file")
        else:
            await self._block(f'kind="file" path="{self._name(path)}"', data.decode("utf-8", errors="replace"))

    async def item(self, item: ContextItem) -> None:
        path = self._inside(item.uri, item.uri)
        if path is None:
            return
        if isinstance(item, FileContext):
            await self.file(path, self._name(path))
        elif isinstance(item, SelectionContext):
            where = ""
            if item.range is not None:
                where = f' lines="{item.range.start.line + 1}-{item.range.end.line + 1}"'
            await self._block(f'kind="selection" path="{self._name(path)}"{where}', item.text)
        elif isinstance(item, DiagnosticsContext):
            await self.diagnostics(path)

    async def diagnostics(self, path: Path) -> None:
        if self.editor is None or not self.editor.caps.diagnostics:
            self.notes.append(f"not attached: diagnostics of {self._name(path)} (the editor does not offer them)")
            return
        try:
            result = await self.editor.request("editor/diagnostics", EditorDiagnosticsParams(uris=[path.as_uri()]))
        except EditorUnavailable as exc:
            self.notes.append(f"not attached: diagnostics of {self._name(path)}: {exc}")
            return
        items = [d for d in result.items if uri_to_path(d.uri) == path]
        await self._block(f'kind="diagnostics" path="{self._name(path)}"', diagnostics_text(self.cwd, items))

    async def mentions(self, text: str) -> None:
        """``@path`` that names a file attaches it; one that names nothing is left alone (a decorator, a handle)."""
        for match in list(MENTION.finditer(text))[:MAX_ITEMS]:
            raw = match.group(1).rstrip(".")
            candidate = self.cwd / raw
            if not is_inside(self.cwd, candidate):
                if candidate.exists() or raw.startswith(("..", "/")):
                    self.notes.append(f"not attached: @{raw} is outside the session folder {self.cwd}")
                continue
            if not candidate.is_file() or (resolved := self._resolved(candidate, f"@{raw}")) is None:
                continue
            if not self._hidden(resolved, f"@{raw}"):
                await self.file(resolved, raw)


async def attach_context(
    cwd: Path,
    session_id: str,
    artifacts: ArtifactStore,
    editor: EditorLink | None,
    text: str,
    items: list[ContextItem],
    hidden: tuple[str, ...] = (),
) -> AttachedContext:
    """The user message with its attachments (see the module doc); the notes say what was refused and why.
    Nothing in ``hidden`` (the sandbox's deny list, resolved) is attached."""
    attacher = _Attacher(cwd, session_id, artifacts, editor, hidden)
    for item in items[:MAX_ITEMS]:
        await attacher.item(item)
    if len(items) > MAX_ITEMS:
        attacher.notes.append(f"not attached: {len(items) - MAX_ITEMS} context items past the first {MAX_ITEMS}")
    await attacher.mentions(text)
    notes = [f"[{note}]" for note in attacher.notes]
    full = "\n\n".join(part for part in [text, *attacher.blocks, *notes] if part)
    return AttachedContext(full, attacher.notes)
