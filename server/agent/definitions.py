"""Named agents for the ``task`` tool (B-SUB-1): ``.threadline/agents/NAME.md`` and ``$THREADLINE_HOME/agents/NAME.md``.

A file's front matter gives ``description`` (listed in the ``task`` tool's description), ``tools`` (a
comma-separated allow-list of tool names; absent: every built-in tool) and ``model`` (a ``[models.NAME]``; absent:
the parent's model). Its body is added to the child's system prompt. The project's file wins over the user's of
the same name. A file is read as the frozen context's sources are (``server.project.frozen``): inside its folder, a regular
file, bounded; one that cannot be used is skipped with a notice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from server.project.frozen import FrozenContext, _bounded, _read

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)
MAX_AGENTS = 50


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    instructions: str  # the file's body, for the child's system prompt
    tools: frozenset[str] | None = None  # None: every built-in tool
    model: str | None = None  # a ``[models.NAME]``; None: the parent's
    path: Path | None = None


@dataclass
class AgentCatalog:
    agents: dict[str, AgentDefinition] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)


def load_agents(cwd: Path, home: Path) -> AgentCatalog:
    """The named agents a session in ``cwd`` can use: the user's, then the project's over them."""
    catalog = AgentCatalog()
    for folder, boundary in ((home / "agents", home), (cwd / ".threadline" / "agents", cwd)):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.md"))[:MAX_AGENTS]:
            if not NAME.match(path.stem):
                catalog.notices.append(f"{path}: an agent's name is letters, digits, '.', '_' or '-'; skipped")
                continue
            agent = _parse(catalog, path, boundary)
            if agent is not None:
                catalog.agents[agent.name] = agent
    return catalog


def _parse(catalog: AgentCatalog, path: Path, boundary: Path) -> AgentDefinition | None:
    ctx = FrozenContext(messages=[])
    text = _read(ctx, path, boundary)
    catalog.notices.extend(ctx.notices)
    if text is None:
        return None
    match = _FRONT.match(text)
    meta: dict[str, str] = {}
    for line in (match.group(1) if match else "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip()] = value.strip().strip("\"'")
    if not meta.get("description"):
        catalog.notices.append(f"{path} has no description in its front matter; skipped")
        return None
    body = text[match.end() :] if match else text
    tools = meta.get("tools")
    return AgentDefinition(
        name=path.stem,
        description=meta["description"][:300],
        instructions=_bounded(ctx, body.strip(), path),
        tools=frozenset(t.strip() for t in tools.split(",") if t.strip()) if tools is not None else None,
        model=meta.get("model") or None,
        path=path,
    )
