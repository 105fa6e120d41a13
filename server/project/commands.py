"""Slash commands: markdown prompts a user invokes as ``/name args`` at the start of a turn's text.

Project commands are ``.threadline/commands/NAME.md`` in the session folder, user commands
``$THREADLINE_HOME/commands/NAME.md``; a project command wins over a user command of the same name, and the
built-ins (``/compact``, ``/context``, ``/plan``, answered by the server without a model call) win over both, so a
repository cannot take over what they do. A file may start with front matter (``description``, ``argument-hint``);
``$ARGUMENTS`` in its body is replaced by what follows the name (appended after a blank line when the body has
no ``$ARGUMENTS``). Text that only looks like a path (``/usr/bin/env is missing``) is no command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from server.errors import UnknownCommand

Source = Literal["project", "user", "builtin"]

NAME = r"[a-z0-9][a-z0-9_:-]*"
_INVOCATION = re.compile(rf"/({NAME})(?:[ \t\r\n]+|$)")
_NAME_ONLY = re.compile(rf"{NAME}\Z")
MAX_COMMAND_BYTES = 64 * 1024  # a command file past this is skipped: it is a prompt, not a document
MAX_COMMANDS = 500  # per folder


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    source: Source
    argument_hint: str | None = None
    body: str = ""  # the prompt template (empty for built-ins)
    path: Path | None = None


BUILTINS = (
    Command("compact", "Compact the conversation now, keeping an optional focus", "builtin", "[focus]"),
    Command("context", "Show what fills the context window and the compactions so far", "builtin"),
    Command("plan", "Switch this session to plan mode (read and plan only)", "builtin"),
)


def command_folders(cwd: Path, home: Path) -> list[tuple[Path, Source]]:
    """Where commands are looked for, the winning place first."""
    return [(cwd / ".threadline" / "commands", "project"), (home / "commands", "user")]


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """``---`` key: value lines ``---`` at the very start, and the body after it; no front matter: ({}, text)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            fields = {}
            for line in lines[1:end]:
                key, sep, value = line.partition(":")
                if sep and key.strip():
                    fields[key.strip().lower()] = value.strip().strip("\"'")
            return fields, "\n".join(lines[end + 1 :]).lstrip("\n")
    return {}, text  # no closing line: it is all body


def _read_folder(folder: Path, source: Source) -> list[Command]:
    try:
        entries = sorted(p for p in folder.iterdir() if p.suffix == ".md")[:MAX_COMMANDS]
    except OSError:  # no such folder (the usual case), or unreadable
        return []
    found = []
    for path in entries:
        name = path.stem
        if not _NAME_ONLY.match(name):
            continue
        try:
            if not path.is_file() or path.stat().st_size > MAX_COMMAND_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        fields, body = _front_matter(text)
        first_line = next((line.strip() for line in body.splitlines() if line.strip()), "")
        description = fields.get("description") or first_line[:120]
        found.append(Command(name, description, source, fields.get("argument-hint") or None, body, path))
    return found


def load_commands(cwd: Path | None, home: Path) -> dict[str, Command]:
    """Every command a session in ``cwd`` can use, by name (built-ins, then project, then user ones)."""
    commands = {c.name: c for c in BUILTINS}
    folders = command_folders(cwd, home) if cwd is not None else [(home / "commands", "user")]
    for folder, source in folders:
        for command in _read_folder(folder, source):  # type: ignore[arg-type]
            commands.setdefault(command.name, command)
    return commands


def folder_signature(cwd: Path | None, home: Path) -> tuple[tuple[str, int | None, int | None], ...]:
    """What changes when a command file is added, removed or edited (names, sizes, times): a cheap watch."""
    out: list[tuple[str, int | None, int | None]] = []
    folders = command_folders(cwd, home) if cwd is not None else [(home / "commands", "user")]
    for folder, _ in folders:
        try:
            for path in sorted(folder.iterdir()):
                stat = path.stat()
                out.append((str(path), stat.st_size, stat.st_mtime_ns))
        except OSError:
            out.append((str(folder), None, None))
    return tuple(out)


def invocation(text: str) -> tuple[str, str] | None:
    """``(name, arguments)`` when ``text`` starts with ``/name`` followed by white space or its end, else None
    (``/usr/bin/env is missing`` is text: the name runs into a ``/``)."""
    match = _INVOCATION.match(text)
    if match is None:
        return None
    return match.group(1), text[match.end() :].strip()


def resolve(commands: dict[str, Command], name: str) -> Command:
    command = commands.get(name)
    if command is None:
        raise UnknownCommand(name, sorted(commands))
    return command


def expand(command: Command, arguments: str) -> str:
    """The prompt the model sees: the body with ``$ARGUMENTS`` replaced (or the arguments appended)."""
    body = command.body.strip()
    if "$ARGUMENTS" in body:
        return body.replace("$ARGUMENTS", arguments)
    return f"{body}\n\n{arguments}" if arguments else body
