"""The frozen session context (R-FRZ-1, R-FRZ-2, R-SUM-5).

Read once, on a new session's first turn: the fixed system prompt, the project's instructions (``AGENTS.md`` then
``.threadline/AGENTS.md``), the validation policy (``.threadline/project.json``), the skill catalog and the user
and project memory. Each becomes a labelled system message, persisted in the transcript, so resume, fork and
replay see exactly what the model saw, and later edits to those files only affect later sessions.

Order matters: the emergency fallback keeps only the first two system messages (R-FALL-1), so the fixed prompt
comes first and the project instructions second.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.project.prompt import SYSTEM_PROMPT
from server.project.workspace import NotRegularFile, is_inside, read_regular_file

MAX_SOURCE_CHARS = 32_000
MAX_SOURCE_BYTES = 4 * MAX_SOURCE_CHARS + 4  # read no more than can be used (UTF-8 is at most 4 bytes a char)
MAX_SKILLS = 100
PROJECT_KEYS = {"validation"}
VALIDATION_KEYS = {"commands", "requiredBeforeDone"}


@dataclass
class FrozenContext:
    messages: list[str] = field(default_factory=list)  # system message texts, in order
    notices: list[str] = field(default_factory=list)  # problems the client should see (the session still starts)
    skill_roots: list[Path] = field(default_factory=list)  # folders read_file may read although outside cwd


def read_frozen_context(cwd: Path, home: Path) -> FrozenContext:
    ctx = FrozenContext(messages=[SYSTEM_PROMPT])
    agents = [
        _labelled(ctx, p, f"Project instructions ({name})", cwd)
        for name, p in (("AGENTS.md", cwd / "AGENTS.md"), (".threadline/AGENTS.md", cwd / ".threadline" / "AGENTS.md"))
    ]
    found = [a for a in agents if a]
    if found:
        ctx.messages.append("\n\n".join(found))
    policy = _validation_policy(ctx, cwd / ".threadline" / "project.json", cwd)
    if policy:
        ctx.messages.append(policy)
    skills = _skill_catalog(ctx, [(cwd / ".threadline" / "skills", cwd), (home / "skills", home)])
    if skills:
        ctx.messages.append(skills)
    for label, path, boundary in (
        ("User memory", home / "memory.md", home),
        ("Project memory", cwd / ".threadline" / "memory.md", cwd),
    ):
        text = _labelled(ctx, path, f"{label} ({path.name}, saved in earlier sessions)", boundary)
        if text:
            ctx.messages.append(text)
    return ctx


def _read(ctx: FrozenContext, path: Path, boundary: Path) -> str | None:
    """A source's text, or None when absent; unreadable sources become a notice, never a failure.

    A source must resolve inside ``boundary`` (the session folder, or ``$THREADLINE_HOME`` for user-level files):
    a repository's ``AGENTS.md -> ~/.aws/credentials`` is skipped, not sent to the provider and stored. Only a
    regular file is read, and only as much as can be used (``/dev/zero`` or a FIFO neither fills memory nor blocks).
    """
    try:
        if not path.exists() and not path.is_symlink():
            return None
        if not is_inside(boundary, path):
            ctx.notices.append(f"{path} points outside {boundary.resolve()} (to {path.resolve()}); it was not read")
            return None
        data, _size = read_regular_file(path.resolve(), MAX_SOURCE_BYTES)
    except NotRegularFile as exc:
        ctx.notices.append(f"{path}: {exc}; it was not read")
        return None
    except (OSError, RuntimeError) as exc:  # RuntimeError: a link loop (Path.resolve before 3.13)
        ctx.notices.append(f"could not read {path}: {getattr(exc, 'strerror', None) or exc}; continuing without it")
        return None
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        ctx.notices.append(f"{path} is not valid UTF-8; unreadable bytes were replaced")
    return text


def _bounded(ctx: FrozenContext, text: str, path: Path) -> str:
    if len(text) <= MAX_SOURCE_CHARS:
        return text
    ctx.notices.append(f"{path} has {len(text)} characters; only the first {MAX_SOURCE_CHARS} are used")
    return (
        text[:MAX_SOURCE_CHARS] + f"\n[... truncated by Threadline: {path.name} has {len(text)} characters, "
        f"only the first {MAX_SOURCE_CHARS} are included; read the file for the rest ...]"
    )


def _labelled(ctx: FrozenContext, path: Path, label: str, boundary: Path) -> str | None:
    text = _read(ctx, path, boundary)
    if text is None or not text.strip():
        return None
    return f"# {label}\n\n{_bounded(ctx, text.strip(), path)}"


def _validation_policy(ctx: FrozenContext, path: Path, boundary: Path) -> str | None:
    text = _read(ctx, path, boundary)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        ctx.notices.append(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); its validation policy is ignored")
        return None
    if not isinstance(data, dict):
        ctx.notices.append(f"{path} must hold a JSON object; its validation policy is ignored")
        return None
    unknown = sorted(set(data) - PROJECT_KEYS)
    raw = data.get("validation")
    validation: dict[str, Any] = raw if isinstance(raw, dict) else {}
    unknown += sorted(f"validation.{k}" for k in set(validation) - VALIDATION_KEYS)
    if unknown:
        ctx.notices.append(f"{path}: unknown keys ignored: {', '.join(unknown)}")
    commands = validation.get("commands", [])
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        ctx.notices.append(f"{path}: validation.commands must be a list of strings; ignored")
        commands = []
    if not commands:
        return None
    required = validation.get("requiredBeforeDone") is True
    lines = "\n".join(f"- `{c}`" for c in commands)
    rule = (
        "Run them and make them pass before you say the task is done."
        if required
        else "Run them when your change could affect them."
    )
    return f"# Validation policy (.threadline/project.json)\n\nThis project validates work with:\n{lines}\n\n{rule}"


_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(\n|\Z)", re.S)


def _skill_catalog(ctx: FrozenContext, roots: list[tuple[Path, Path]]) -> str | None:
    """Skills under each root; a root that resolves outside its boundary (``.threadline/skills -> ../..``) is
    skipped with a notice, so it can never widen what ``read_file`` may read."""
    entries: list[str] = []
    for root, boundary in roots:
        if not root.is_dir():
            continue
        if not is_inside(boundary, root):
            ctx.notices.append(f"skill folder {root} points outside {boundary.resolve()}; its skills were not loaded")
            continue
        root = root.resolve()
        for skill in sorted(p for p in root.iterdir() if (p / "SKILL.md").is_file())[:MAX_SKILLS]:
            if not is_inside(root, skill / "SKILL.md"):
                ctx.notices.append(f"{skill / 'SKILL.md'} points outside its skill folder; it was not loaded")
                continue
            text = _read(ctx, skill / "SKILL.md", root)
            if text is None:
                continue
            meta = _front_matter(text)
            name = meta.get("name") or skill.name
            if not meta.get("description"):
                ctx.notices.append(f"{skill / 'SKILL.md'} has no description in its front matter")
            entries.append(f"- {name}: {meta.get('description', '(no description)')[:300]} ({skill / 'SKILL.md'})")
            if root not in ctx.skill_roots:
                ctx.skill_roots.append(root)
    if not entries:
        return None
    return "# Skills\n\nRead a skill's SKILL.md with read_file when the task calls for it:\n" + "\n".join(entries)


def _front_matter(text: str) -> dict[str, str]:
    match = _FRONT.match(text)
    if not match:
        return {}
    meta = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("name", "description"):
            meta[key.strip()] = value.strip().strip("\"'")
    return meta
