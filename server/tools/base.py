"""What every agent tool shares: its context, its outcome, and how failures read to the model.

Tool errors are results the model sees (``Tool failed: ...``), never crashes; boundary refusals read
``Permission denied: ...`` and forbidden commands ``Forbidden: ...`` (protocol/README.md, "The fixed contract").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from protocol.tool_facts import ToolFacts, facts_of
from server.tools.web.settings import WebSettings

if TYPE_CHECKING:
    from server.artifacts import ArtifactStore
    from server.sandbox.mode import CommandSandbox
    from server.tools.processes import ProcessGroups
    from server.tools.running import BackgroundProcesses
    from server.transcript import Store

Status = Literal["ok", "error", "denied"]
Approval = Literal["edit", "command", "fetch"] | None  # fetch: per host (server.agent.approvals)


class ToolFailure(Exception):
    """The tool ran and failed; the model reads ``Tool failed: <message>``."""


class ToolDenied(Exception):
    """Refused before running (boundary, forbidden command, rejected approval); the message is the result."""


@dataclass(frozen=True)
class ToolSettings:
    """The few settings the built-in tools read (``server.config.Settings.tool_settings`` picks them out), so the
    tools never see the whole Settings nor import ``server.config``, which aggregates them."""

    home: Path  # the user's memory.md lives here
    command_timeout_seconds: float  # run_command's default timeout
    pattern_timeout_seconds: float  # an untrusted regex/glob job is killed after this (server.patterns)
    max_background_processes: int = 4  # [tools] max_background_processes: running at once per session
    web: WebSettings = field(default_factory=WebSettings)  # [web]: host rules, private endpoints, search provider


@dataclass(frozen=True)
class ToolContext:
    session_id: str
    turn_id: str
    cwd: Path
    settings: ToolSettings
    store: Store
    artifacts: ArtifactStore
    secrets: tuple[str, ...] = ()
    read_roots: tuple[Path, ...] = ()  # outside cwd but readable (skill folders)
    processes: ProcessGroups | None = None  # where run_command registers its groups, killed at server exit
    session_tools: Mapping[str, Tool] = field(default_factory=dict)  # the session's MCP tools, by model name
    tool_call_id: str | None = None  # the call being run (set per call by the loop; ``task`` names its child so)
    allowed: frozenset[str] | None = None  # a named agent's ``tools`` allow-list (B-SUB-1); None: every tool
    sandbox: CommandSandbox | None = None  # how run_command confines its processes (None: not at all)
    edit_watch: EditWatcher | None = None  # the editor's diagnostics around a file write
    background: BackgroundProcesses | None = None  # the session's background processes (its handle's slot)


class EditWatcher(Protocol):
    """Looks at a written file's diagnostics before and after the write (``server.grounding.edits.EditWatch``)."""

    async def before(self, path: Path) -> Any: ...

    async def after(self, cwd: Path, path: Path, before: Any) -> str:
        """What to append to the write's result: the problems it introduced ("" for none)."""
        ...


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    status: Status = "ok"


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[ToolContext, dict[str, Any]], Awaitable[str]]
    approval: Approval = None
    writes_paths: tuple[str, ...] = field(default=())  # argument keys that name written files (B-SUM-6)

    @property
    def facts(self) -> ToolFacts:
        """What this tool declares (its kind, background, result, sandbox and grant: ``protocol.tool_facts``)."""
        return facts_of(self.name)

    def spec(self) -> dict[str, Any]:
        """The Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def title(self, args: dict[str, Any]) -> str:
        for key in ("command", "path", "pattern", "query", "url", "artifact_id", "scope", "processId"):
            if isinstance(args.get(key), str):
                return f"{self.name}: {one_line(args[key])}"
        return self.name


TITLE_CHARS = 120


def one_line(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` on one line (line breaks shown as ⏎), cut at ``limit`` characters with a visible "…": a title
    never hides that something follows (the whole text is in the approval's detail)."""
    flat = " ⏎ ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def schema(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def require_str(args: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = args.get(key)
    if not isinstance(value, str) or (not allow_empty and value == ""):
        raise ToolFailure(f"Invalid arguments: {key!r} must be a {'' if allow_empty else 'non-empty '}string")
    return value


def optional_int(args: dict[str, Any], key: str, default: int | None, *, minimum: int = 0) -> int | None:
    value = args.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolFailure(f"Invalid arguments: {key!r} must be an integer >= {minimum}")
    return value
