"""File tools: read_file, list_files, search_files, edit_file, write_file. All paths stay inside the session folder."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from server.patterns import ScanError, ScanResult, long_lines_note, run_scan, timeout_note
from server.project.workspace import (
    NotRegularFile,
    Opened,
    OutsideWorkspace,
    ProtectedPath,
    open_inside,
    read_regular_at,
)
from server.tools.base import Tool, ToolContext, ToolDenied, ToolFailure, optional_int, require_str, schema

MAX_READ_BYTES = 8 * 1024 * 1024
DEFAULT_READ_LINES = 2000
MAX_LIST = 1000
MAX_MATCHES = 200
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _hidden(ctx: ToolContext) -> tuple[str, ...]:
    """What the sandbox hides from commands is hidden from the file tools too (B-SBX-1): the same list."""
    return ctx.sandbox.policy.deny_read if ctx.sandbox is not None else ()


def _open(ctx: ToolContext, raw: str, *, writing: bool = False) -> Opened:
    """``raw`` walked from the session folder (``server.project.workspace.open_inside``); the caller closes it."""
    try:
        return open_inside(ctx.cwd, raw, hidden=_hidden(ctx), writing=writing)
    except OutsideWorkspace as exc:
        raise ToolDenied(str(exc)) from None
    except FileNotFoundError:
        raise ToolFailure(f"{raw}: no such file or folder") from None
    except NotADirectoryError:
        raise ToolFailure(f"{raw}: a part of the path is not a folder") from None


def _path(ctx: ToolContext, args: dict[str, Any], key: str = "path") -> Path:
    """A folder to list or search: walked as any path is (hidden ones refused), then named by where it is."""
    opened = _open(ctx, require_str(args, key))
    opened.close()
    return opened.path


def _relative(ctx: ToolContext, path: Path) -> str:
    try:
        return path.relative_to(ctx.cwd.resolve()).as_posix() or "."
    except ValueError:  # a skill file under a read root
        return str(path)


def _read_opened(opened: Opened) -> str:
    name = opened.path.name
    if opened.name is None:
        raise ToolFailure(f"{name} is a directory (use list_files)")
    try:  # only regular files, never more than the cap: a FIFO or /dev/zero must not hang or fill memory
        data, size = read_regular_at(opened, MAX_READ_BYTES + 1)
    except NotRegularFile as exc:
        if "a directory" in str(exc):
            raise ToolFailure(f"{name} is a directory (use list_files)") from None
        raise ToolFailure(f"{exc}; only regular files can be read") from None
    except FileNotFoundError:
        raise ToolFailure(f"{name}: no such file") from None
    except OSError as exc:
        raise ToolFailure(f"{name}: {exc.strerror or exc}") from None
    if size > MAX_READ_BYTES or len(data) > MAX_READ_BYTES:
        raise ToolFailure(f"{name} is larger than {MAX_READ_BYTES} bytes; use search_files or run_command")
    if b"\x00" in data[:8192]:
        raise ToolFailure(f"{name} looks like a binary file")
    return data.decode("utf-8", errors="replace")


def _read_any(ctx: ToolContext, raw: str) -> str:
    """read_file's text: in the session folder, or in a read root (a skill's folder) outside it."""
    try:
        opened = open_inside(ctx.cwd, raw, hidden=_hidden(ctx))
    except ProtectedPath as exc:
        raise ToolDenied(str(exc)) from None
    except OutsideWorkspace as exc:
        for root in ctx.read_roots:  # granted by name (a skill's folder, maybe under the hidden data folder)
            try:
                opened = open_inside(root, raw)
                break
            except OutsideWorkspace:
                continue
        else:
            raise ToolDenied(str(exc)) from None
    except FileNotFoundError:
        raise ToolFailure(f"{raw}: no such file") from None
    except NotADirectoryError:
        raise ToolFailure(f"{raw}: a part of the path is not a folder") from None
    try:
        return _read_opened(opened)
    finally:
        opened.close()


async def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    raw = require_str(args, "path")
    offset = optional_int(args, "offset", 1, minimum=1) or 1
    limit = optional_int(args, "limit", DEFAULT_READ_LINES, minimum=1) or DEFAULT_READ_LINES
    lines = (await asyncio.to_thread(_read_any, ctx, raw)).splitlines()
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
        ctx,
        {
            "op": "list",
            "root": str(ctx.cwd),
            "base": str(base),
            "pattern": pattern,
            "max_items": MAX_LIST,
            "hidden": list(_hidden(ctx)),
        },
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
            "hidden": list(_hidden(ctx)),
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
    raw = require_str(args, "path")
    old = require_str(args, "old_string")
    new = require_str(args, "new_string", allow_empty=True)
    if old == new:
        raise ToolFailure("old_string and new_string are identical; nothing to change")
    opened = await asyncio.to_thread(_open, ctx, raw, writing=True)
    try:  # read and written through the same opened folder: no swap between them can redirect the write
        text = await asyncio.to_thread(_read_opened, opened)
        where = _relative(ctx, opened.path)
        count = text.count(old)
        if count == 0:
            raise ToolFailure(f"old_string was not found in {where}; read the file and copy the text exactly")
        if count > 1:
            raise ToolFailure(f"old_string occurs {count} times in {where}; include more context so it is unique")
        await asyncio.to_thread(write_at, opened, text.replace(old, new, 1))
    finally:
        opened.close()
    return f"Edited {where}: replaced 1 occurrence ({len(old)} -> {len(new)} characters)"


async def write_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    raw = require_str(args, "path")
    content = require_str(args, "content", allow_empty=True)
    opened = await asyncio.to_thread(_open, ctx, raw, writing=True)
    try:
        existed = await asyncio.to_thread(_exists, opened)
        await asyncio.to_thread(write_at, opened, content)
    finally:
        opened.close()
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {_relative(ctx, opened.path)} ({len(content.encode())} bytes)"


def _exists(opened: Opened) -> bool:
    if opened.name is None:
        raise ToolFailure(f"{opened.path.name} is a directory")
    try:
        info = os.stat(opened.name, dir_fd=opened.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(info.st_mode):
        raise ToolFailure(f"{opened.path.name} is a directory")
    return True


def write_at(opened: Opened, text: str | bytes) -> None:
    """Write through a fresh temp file in the folder ``open_inside`` opened, then rename it over the name.

    The temp file is made by ``mkstemp`` (``O_CREAT|O_EXCL``, a random name), so a planted
    ``.name.threadline-tmp`` symlink is never written through; the temp file and the rename are relative to the
    opened folder's descriptor, so a folder swapped for a symlink after the walk cannot redirect them; ``rename``
    replaces a link at the final name itself rather than following it.
    """
    if opened.name is None:
        raise ToolFailure(f"{opened.path.name} is a directory")
    name, dir_fd = opened.name, opened.dir_fd
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".threadline-tmp", dir=f"/proc/self/fd/{dir_fd}")
    tmp_name = os.path.basename(tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text if isinstance(text, bytes) else text.encode("utf-8"))
        try:  # keep an existing file's mode; a new one gets the usual 0666 & ~umask, not mkstemp's 0600
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK
        os.chmod(tmp_name, mode, dir_fd=dir_fd)
        os.replace(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name, dir_fd=dir_fd)
        raise


def write_atomic(root: Path, rel: str, text: str | bytes, hidden: tuple[str, ...] = ()) -> None:
    """``rel`` (relative to ``root``) walked as the tools walk it, then written with ``write_at``."""
    try:
        opened = open_inside(root, rel, hidden=hidden, writing=True)
    except OutsideWorkspace as exc:
        raise ToolDenied(str(exc)) from None
    try:
        write_at(opened, text)
    finally:
        opened.close()


def remove_inside(root: Path, rel: str, hidden: tuple[str, ...] = ()) -> None:
    """Unlink ``rel`` relative to the folder the walk opened (as ``write_at`` writes), never through a link."""
    try:
        opened = open_inside(root, rel, hidden=hidden, writing=True, make_dirs=False)
    except OutsideWorkspace as exc:
        raise ToolDenied(str(exc)) from None
    except FileNotFoundError:
        return
    try:
        if opened.name is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(opened.name, dir_fd=opened.dir_fd)
    finally:
        opened.close()


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
