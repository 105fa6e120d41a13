"""The change an ``edit_file``/``write_file`` call proposes, as ``{path, oldText, newText}``.

Clients render it as a diff (VS Code's diff editor, Neovim's ``diffthis``) in the approval prompt and the tool
card; ``unified`` is the plain-text form the approval's ``detail`` carries for clients that show only text.
Built from the file as it is now; a file that is not text, or too large to show, gets no diff.
"""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path
from typing import Any

from protocol.updates import FileDiff
from server.project.workspace import NotRegularFile, OutsideWorkspace, read_regular_file, resolve_inside

MAX_DIFF_BYTES = 1024 * 1024  # per side; larger files are approved from the text detail alone
MAX_UNIFIED_CHARS = 4000
# An applied change is stored as a ``fileDiff`` event so a resumed session can show it: both texts together at
# most this many characters; over it, the event keeps the path and a note (the old content is in the checkpoint).
MAX_STORED_DIFF_CHARS = 256 * 1024


async def proposed_diff(cwd: Path, tool: str, args: dict[str, Any]) -> FileDiff | None:
    raw = args.get("path")
    if tool not in ("edit_file", "write_file") or not isinstance(raw, str):
        return None
    try:
        path = resolve_inside(cwd, raw)
    except OutsideWorkspace:
        return None
    old = await asyncio.to_thread(_text, path)
    if tool == "write_file":
        new = args.get("content")
        if not isinstance(new, str) or len(new) > MAX_DIFF_BYTES:
            return None
        return FileDiff(path=raw, old_text=old or "", new_text=new)
    find, replace = args.get("old_string"), args.get("new_string")
    if old is None or not isinstance(find, str) or not isinstance(replace, str) or not find or old.count(find) != 1:
        return None  # the tool will fail and say why
    return FileDiff(path=raw, old_text=old, new_text=old.replace(find, replace, 1))


def stored_diff(call_id: str, tool: str, diff: FileDiff) -> dict[str, Any]:
    """The ``fileDiff`` event's payload: ``{toolCallId, tool, path, diff}``, or ``note`` instead of ``diff`` when the
    texts are over ``MAX_STORED_DIFF_CHARS``."""
    payload: dict[str, Any] = {"toolCallId": call_id, "tool": tool, "path": diff.path}
    size = len(diff.old_text) + len(diff.new_text)
    if size <= MAX_STORED_DIFF_CHARS:
        payload["diff"] = {"path": diff.path, "oldText": diff.old_text, "newText": diff.new_text}
    else:
        payload["note"] = (
            f"diff not kept: {size} characters, over the {MAX_STORED_DIFF_CHARS} stored "
            "(the file's earlier content is in its checkpoint)"
        )
    return payload


def unified(diff: FileDiff) -> str:
    lines = difflib.unified_diff(
        diff.old_text.splitlines(keepends=True),
        diff.new_text.splitlines(keepends=True),
        f"a/{diff.path}",
        f"b/{diff.path}",
    )
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return text if len(text) <= MAX_UNIFIED_CHARS else text[:MAX_UNIFIED_CHARS] + "\n[diff cut; see diff]\n"


def _text(path: Path) -> str | None:
    try:
        data, size = read_regular_file(path, MAX_DIFF_BYTES + 1)
    except (FileNotFoundError, NotRegularFile, OSError):
        return None
    if size > MAX_DIFF_BYTES or b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")
