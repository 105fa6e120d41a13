"""File tools: read_file, list_files, search_files, edit_file, write_file. All paths stay inside the session folder."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from server.patterns import ScanError, ScanResult, long_lines_note, run_scan, timeout_note
from server.tools.base import Tool, ToolContext, ToolDenied, ToolFailure, optional_int, require_str, schema
from server.workspace import NotRegularFile, OutsideWorkspace, is_inside, read_regular_file, resolve_inside

MAX_READ_BYTES = 8 * 1024 * 1024
DEFAULT_READ_LINES = 2000
MAX_LIST = 1000
MAX_MATCHES = 200
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _path(ctx: ToolContext, args: dict[str, Any], key: str = "path", *, reading: bool = False) -> Path:
    raw = require_str(args, key)
    try:
        return resolve_inside(ctx.cwd, raw)
    except OutsideWorkspace as exc:
        for root in ctx.read_roots if reading else ():
            try:
                return resolve_inside(root, raw)
            except OutsideWorkspace:
                continue
        raise ToolDenied(str(exc)) from None


def _relative(ctx: ToolContext, path: Path) -> str:
    try:
        return path.relative_to(ctx.cwd.resolve()).as_posix() or "."
    except ValueError:  # a skill file under a read root
        return str(path)


def _read_text(path: Path) -> str:
    if not path.exists():
        raise ToolFailure(f"{path.name}: no such file")
    if path.is_dir():
        raise ToolFailure(f"{path.name} is a directory (use list_files)")
    try:  # only regular files, never more than the cap: a FIFO or /dev/zero must not hang or fill memory
        data, size = read_regular_file(path, MAX_READ_BYTES + 1)
    except NotRegularFile as exc:
        raise ToolFailure(f"{exc}; only regular files can be read") from None
    except OSError as exc:
        raise ToolFailure(f"{path.name}: {exc.strerror or exc}") from None
    if size > MAX_READ_BYTES or len(data) > MAX_READ_BYTES:
        raise ToolFailure(f"{path.name} is larger than {MAX_READ_BYTES} bytes; use search_files or run_command")
    if b"\x00" in data[:8192]:
        raise ToolFailure(f"{path.name} looks like a binary file")
    return data.decode("utf-8", errors="replace")


async def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = _path(ctx, args, reading=True)
    offset = optional_int(args, "offset", 1, minimum=1) or 1
    limit = optional_int(args, "limit", DEFAULT_READ_LINES, minimum=1) or DEFAULT_READ_LINES
    lines = (await asyncio.to_thread(_read_text, path)).splitlines()
    chunk = lines[offset - 1 : offset - 1 + limit]
    body = "\n".join(f"{offset + i:>6}\t{line}" for i, line in enumerate(chunk))
    end = offset - 1 + len(chunk)
    if offset > 1 or end < len(lines):
        body += f"\n[lines {offset}-{end} of {len(lines)}; pass offset/limit to read more]"
    return body or "[empty file]"


async def list_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    pattern = args.get("pattern") or "**"
    if not isinstance(pattern, str):
        raise ToolFailure("Invalid arguments: 'pattern' must be a glob string")
    base = _path(ctx, {"path": args.get("path") or "."})
    result = await _scan(
        ctx, {"op": "list", "root": str(ctx.cwd), "base": str(base), "pattern": pattern, "max_items": MAX_LIST}
    )
    names, total = result.items, int(result.done.get("total", len(result.items)))
    more = f"\n[{total - MAX_LIST} more not shown; narrow the pattern]" if total > MAX_LIST else ""
    body = ("\n".join(names) + more) if names else "[no files match]"
    return body + (f"\n{timeout_note(ctx.settings.pattern_timeout_seconds, 'listing')}" if result.timed_out else "")


async def search_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    pattern = require_str(args, "pattern")
    base = _path(ctx, {"path": args.get("path") or "."})
    glob = args.get("glob")
    result = await _scan(
        ctx,
        {
            "op": "search",
            "root": str(ctx.cwd),
            "base": str(base),
            "pattern": pattern,
            "glob": glob if isinstance(glob, str) and glob else None,
            "max_matches": MAX_MATCHES,
            "max_read_bytes": MAX_READ_BYTES,
        },
    )
    hits = result.items
    notes = [f"[more than {MAX_MATCHES} matches; narrow the pattern]"] if len(hits) > MAX_MATCHES else []
    if result.long_lines:
        notes.append(long_lines_note(result.long_lines))
    if result.timed_out:
        notes.append(timeout_note(ctx.settings.pattern_timeout_seconds))
    body = "\n".join(hits[:MAX_MATCHES]) if hits else "[no matches]"
    return "\n".join([body, *notes])


async def _scan(ctx: ToolContext, job: dict[str, Any]) -> ScanResult:
    """Patterns and ignore files come from the model or the repository: run them where they can be killed."""
    try:
        return await run_scan(job, ctx.settings.pattern_timeout_seconds)
    except ScanError as exc:
        raise ToolFailure(str(exc)) from None


async def edit_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = _path(ctx, args)
    old = require_str(args, "old_string")
    new = require_str(args, "new_string", allow_empty=True)
    if old == new:
        raise ToolFailure("old_string and new_string are identical; nothing to change")
    text = await asyncio.to_thread(_read_text, path)
    count = text.count(old)
    if count == 0:
        raise ToolFailure(
            f"old_string was not found in {_relative(ctx, path)}; read the file and copy the text exactly"
        )
    if count > 1:
        raise ToolFailure(
            f"old_string occurs {count} times in {_relative(ctx, path)}; include more context so it is unique"
        )
    await asyncio.to_thread(write_atomic, ctx.cwd, path, text.replace(old, new, 1))
    return f"Edited {_relative(ctx, path)}: replaced 1 occurrence ({len(old)} -> {len(new)} characters)"


async def write_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = _path(ctx, args)
    content = require_str(args, "content", allow_empty=True)
    if path.is_dir():
        raise ToolFailure(f"{_relative(ctx, path)} is a directory")
    existed = path.exists()
    await asyncio.to_thread(write_atomic, ctx.cwd, path, content)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {_relative(ctx, path)} ({len(content.encode())} bytes)"


def write_atomic(root: Path, path: Path, text: str | bytes) -> None:
    """Write through a fresh temp file, relative to a verified directory fd, then rename over ``path``.

    The temp file is made by ``mkstemp`` (``O_CREAT|O_EXCL``, a random name), so a planted
    ``.name.threadline-tmp`` symlink is never written through. The parent is opened once and checked to still be
    inside ``root`` after it is open; the temp file and the rename are relative to that fd, so a folder swapped
    for a symlink between the check and the write cannot redirect it. ``rename`` replaces a link at the final
    name itself rather than following it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        if not is_inside(root, Path(os.readlink(f"/proc/self/fd/{dir_fd}"))):
            raise ToolDenied(f"Permission denied: {path.parent} moved outside the session folder {root}")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".threadline-tmp", dir=f"/proc/self/fd/{dir_fd}")
        tmp_name = os.path.basename(tmp)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(text if isinstance(text, bytes) else text.encode("utf-8"))
            try:  # keep an existing file's mode; a new one gets the usual 0666 & ~umask, not mkstemp's 0600
                mode = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False).st_mode & 0o7777
            except FileNotFoundError:
                mode = 0o666 & ~_UMASK
            os.chmod(tmp_name, mode, dir_fd=dir_fd)
            os.replace(tmp_name, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def remove_inside(root: Path, path: Path) -> None:
    """Unlink ``path`` relative to its verified parent fd (as ``write_atomic`` writes), never through a link."""
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return
    try:
        if not is_inside(root, Path(os.readlink(f"/proc/self/fd/{dir_fd}"))):
            raise ToolDenied(f"Permission denied: {path.parent} moved outside the session folder {root}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


_PATH = {"type": "string", "description": "Path relative to the session folder."}

TOOLS = [
    Tool(
        "read_file",
        "Read a text file. Lines are numbered; use offset (1-based line) and limit for large files.",
        schema(["path"], path=_PATH, offset={"type": "integer", "minimum": 1}, limit={"type": "integer", "minimum": 1}),
        read_file,
    ),
    Tool(
        "list_files",
        "List files in the session folder matching a glob (default all), respecting .gitignore.",
        schema([], pattern={"type": "string", "description": "Glob such as **/*.py"}, path=_PATH),
        list_files,
    ),
    Tool(
        "search_files",
        "Search file contents with a regular expression, respecting .gitignore.",
        schema(["pattern"], pattern={"type": "string"}, path=_PATH, glob={"type": "string"}),
        search_files,
    ),
    Tool(
        "edit_file",
        "Replace one exact, unique occurrence of old_string with new_string in a file.",
        schema(
            ["path", "old_string", "new_string"],
            path=_PATH,
            old_string={"type": "string"},
            new_string={"type": "string"},
        ),
        edit_file,
        approval="edit",
        writes_paths=("path",),
    ),
    Tool(
        "write_file",
        "Create or overwrite a file with the given content.",
        schema(["path", "content"], path=_PATH, content={"type": "string"}),
        write_file,
        approval="edit",
        writes_paths=("path",),
    ),
]
