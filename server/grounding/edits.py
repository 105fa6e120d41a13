"""Diagnostics after edits: the editor's problems for a file before and after the agent writes it;
the errors and warnings the write introduced are appended to the tool result, under ``INTRODUCED_MARKER``, which
makes the call a failure for the summary (``server.context.failures.is_failure``). The errors and warnings the
write made go away are appended under ``RESOLVED_MARKER``; when none are left in the file the header says so
(``CLEAN_NOTE``), and the summary's fold drops that file's earlier editor-diagnostics failures (B-SUM-10: they
count only while they persist; docs/EDITOR.md).

"Introduced" compares by what a problem says (severity, message, source, code), not where it is: an edit moves
the lines below it, and a problem that only moved is not new. The language server needs a moment to see the
write: the server asks again, every ``POLL_SECONDS``, until the answer changes or ``settle_ms`` has passed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from protocol.editor import Diagnostic, EditorDiagnosticsParams
from server.context.failures import CLEAN_NOTE, INTRODUCED_MARKER, RESOLVED_MARKER
from server.grounding.link import EditorLink, EditorUnavailable, path_to_uri
from server.grounding.text import counts, diagnostic_line

POLL_SECONDS = 0.25
MAX_LISTED = 20  # problems listed after an edit; the rest are counted

Key = tuple[int, str, str | None, str | int | None]


def _key(item: Diagnostic) -> Key:
    return (item.severity, " ".join(item.message.split()), item.source, item.code)


def introduced(before: list[Diagnostic], after: list[Diagnostic]) -> list[Diagnostic]:
    """The errors and warnings in ``after`` that ``before`` did not have (as many times as they are new)."""
    left = Counter(_key(d) for d in before)
    new = []
    for item in after:
        if item.severity > 2:
            continue
        if left[_key(item)] > 0:
            left[_key(item)] -= 1
        else:
            new.append(item)
    return new


class EditWatch:
    """``server.tools.base.EditWatcher`` over the client's ``editor/diagnostics``."""

    def __init__(self, link: EditorLink):
        self.link = link
        self.active = link.caps.diagnostics and link.caps.diagnostics_after_edit

    async def _ask(self, path: Path) -> list[Diagnostic] | None:
        params = EditorDiagnosticsParams(uris=[path_to_uri(path)])
        try:
            result = await self.link.request("editor/diagnostics", params)
        except EditorUnavailable:
            return None
        uri = path_to_uri(path)
        return [d for d in result.items if d.uri == uri]

    async def before(self, path: Path) -> list[Diagnostic] | None:
        return await self._ask(path) if self.active else None

    async def after(self, cwd: Path, path: Path, before: list[Diagnostic] | None) -> str:
        if not self.active or before is None:
            return ""  # the editor could not say what was there before: nothing to compare with
        settle = self.link.caps.settle_ms / 1000
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settle
        while True:
            await asyncio.sleep(min(POLL_SECONDS, settle))
            now = await self._ask(path)
            if now is None:
                return ""
            if sorted(map(_key, now), key=repr) != sorted(map(_key, before), key=repr) or loop.time() >= deadline:
                break
        return introduced_text(cwd, introduced(before, now)) + resolved_text(cwd, before, now)


def resolved_text(cwd: Path, before: list[Diagnostic], after: list[Diagnostic]) -> str:
    """The errors and warnings ``before`` had that ``after`` has not, with ``CLEAN_NOTE`` when ``after`` has no
    error or warning left ("" when nothing was resolved)."""
    gone = introduced(after, before)
    if not gone:
        return ""
    clean = not any(d.severity <= 2 for d in after)
    return _listed(cwd, f"{RESOLVED_MARKER} ({counts(gone)}{'; ' + CLEAN_NOTE if clean else ''})", gone)


def introduced_text(cwd: Path, new: list[Diagnostic]) -> str:
    if not new:
        return ""
    return _listed(cwd, f"{INTRODUCED_MARKER} ({counts(new)})", new)


def _listed(cwd: Path, header: str, new: list[Diagnostic]) -> str:
    lines = [f"\n\n{header}:"]
    new = sorted(new, key=lambda d: (d.severity, d.range.start.line, d.range.start.character))  # errors first
    for item in new[:MAX_LISTED]:
        lines += diagnostic_line(cwd, item)
    if len(new) > MAX_LISTED:
        lines.append(f"… and {len(new) - MAX_LISTED} more")
    return "\n".join(lines)
