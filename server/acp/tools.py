"""How a Threadline tool call looks in ACP: its kind, file locations and the content of its result.

Pure functions over the call's name, arguments and result text; the only I/O is reading a file's text for a
diff (``file_text``), bounded and kept inside the session folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from acp.schema import ContentToolCallContent, FileEditToolCallContent, TextContentBlock, ToolCallLocation

from protocol.tool_facts import TOOL_FACTS, AcpKind, facts_of

ToolKind = AcpKind
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]

EDIT_TOOLS = ("edit_file", "write_file")
TASK_TOOL = "task"
# The argument that says what a call is about, first found first: the title starts with it.
TITLE_KEYS = ("command", "path", "pattern", "query", "url", "artifact_id", "processId", "scope")
TITLE_MAX = 2000  # characters of a title; longer is cut and marked
DIFF_MAX_BYTES = 1 << 20  # an editor renders a diff of at most this much; larger files get a text result
FAILED_PREFIXES = ("Tool failed", "Permission denied", "Forbidden", "Tool call interrupted")


def tool_kind(name: str) -> ToolKind:
    """The kind a tool declares (``protocol.tool_facts``); another's (an MCP tool's) guessed from its name."""
    return facts_of(name).acp_kind if name in TOOL_FACTS else "fetch" if "fetch" in name else "other"


def title(name: str, args: Any, fallback: str | None = None) -> str:
    """The call's title with what matters first: the command itself in backticks (`` `npm test` ``), a path or
    pattern followed by the tool (``src/a.py (write_file)``), a subagent's task (``Map the parser (subagent)``).
    Clients keep the title's first part: CodeCompanion shows the text before a ``:`` beside the kind, unless the
    title starts with a backticked span, which it shows whole (Claude Code's ACP titles commands so, and avante
    renders the span as code). So a command is always in backticks (``echo time: now`` survives whole), any other
    value when it holds a ``:``, and the tool's name never leads. One line; cut past TITLE_MAX and marked."""
    text = None
    if isinstance(args, dict):
        if name == TASK_TOOL and isinstance(args.get("description"), str) and args["description"].strip():
            text = f"{_one_line(args['description'])} (subagent)"
        else:
            for key in TITLE_KEYS:
                value = args.get(key)
                if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                    value = _one_line(str(value))
                    command = facts_of(name).sandboxed  # a command is shown as itself, in a code span
                    shown = code(value) if command or ":" in value else value
                    text = shown if command else f"{shown} ({name})"
                    break
    return text or fallback or name


def code(text: str) -> str:
    """``text`` as a backticked span, when it holds no backtick itself (a span cannot hold one: then as it is)."""
    return f"`{text}`" if "`" not in text else text


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TITLE_MAX else flat[: TITLE_MAX - 1] + "…"


def resolve(cwd: Path, raw: Any) -> Path | None:
    """The absolute path a tool argument names, if it is inside the session folder (ACP wants absolute paths)."""
    if not isinstance(raw, str) or not raw:
        return None
    path = Path(os.path.abspath(cwd / raw))
    root = Path(os.path.abspath(cwd))
    return path if path == root or root in path.parents else None


def locations(name: str, args: Any, cwd: Path) -> list[ToolCallLocation] | None:
    if not isinstance(args, dict):
        return None
    path = resolve(cwd, args.get("path"))
    return [ToolCallLocation(path=str(path))] if path is not None else None


def file_text(path: Path | None) -> str | None:
    """A file's text for a diff, or None (absent, not a regular file, too large, not UTF-8, outside the folder)."""
    if path is None:
        return None
    try:
        if not path.is_file() or path.stat().st_size > DIFF_MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def status_of(result_status: str | None, text: str) -> ToolStatus:
    """ACP's final status: from the call's status (live, or stored since schema v5); a result stored before that
    is judged by its text."""
    if result_status is not None:
        return "completed" if result_status == "ok" else "failed"
    return "failed" if text.startswith(FAILED_PREFIXES) else "completed"


def text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def edit_diff(name: str, args: Any, cwd: Path, old: str | None, new: str | None) -> FileEditToolCallContent | None:
    """The diff an editor renders for ``edit_file``/``write_file``: the whole file before and after when both are
    known (``old`` None means a new file), else what the arguments say (``old_string`` -> ``new_string``)."""
    if name not in EDIT_TOOLS or not isinstance(args, dict):
        return None
    path = resolve(cwd, args.get("path"))
    if path is None:
        return None
    if new is None:
        if name == "write_file" and isinstance(args.get("content"), str):
            new = args["content"]
        elif name == "edit_file" and isinstance(args.get("new_string"), str):
            old, new = args.get("old_string") if isinstance(args.get("old_string"), str) else None, args["new_string"]
        else:
            return None
    return FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=new)
