"""What each built-in tool declares about itself, as plain data: the one place its name meets its facts.

The approvals, the remembered grants, the ``[approvals]`` rules, the call checks, the context pipeline's summary
and the ACP front end read a tool's facts here (``facts_of``) instead of keeping their own tables of tool names.
It lives in ``protocol`` because the pipeline (``server.context``) is pure and never imports ``server.tools``;
``server.tools.base.Tool.facts`` reads the same row, and ``tests/test_recipes.py`` checks that every built-in
tool has a row and every row a tool (docs/ARCHITECTURE.md, "Add a tool").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

# What a tool does: reads the workspace or the session, writes files, runs a command, reaches the network.
Kind = Literal["read", "write", "command", "network", "other"]
# How ACP clients show the call (its ToolKind); None: the one the kind implies (ACP_BY_KIND).
AcpKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
# How the summary reads its result: "own" (our own wording: a failure's text counts), "quoted" (someone else's
# text, a file or search hits: only the status and our failure prefixes count), "process" (it tells of background
# processes, B-SUM-11; our own wording too).
ResultKind = Literal["own", "quoted", "process"]
# What an "always" grant for one call covers: the tool (or, for a tool with written paths, a folder), exactly one
# simple command, or one host.
Grant = Literal["tool", "command", "host"]

ACP_BY_KIND: Mapping[Kind, AcpKind] = MappingProxyType(
    {"read": "read", "write": "edit", "command": "execute", "network": "fetch", "other": "other"}
)
WRITTEN_PATH_KEYS = ("path", "file_path")  # where the summary looks for a write tool's path (B-SUM-6)


@dataclass(frozen=True)
class ToolFacts:
    kind: Kind = "other"
    acp: AcpKind | None = None
    result: ResultKind = "own"
    background: bool = False  # it can run in the background (a process the session keeps, B-PROC-*)
    sandboxed: bool = False  # runs its ``command`` argument under the command sandbox: deny list, escalation
    grant: Grant = "tool"
    always_ask: bool = False  # asks under every policy but auto (it changes what every later session is told)
    parallel: bool = False  # calls of it next to each other in one answer run together (B-SUB-1)

    @property
    def acp_kind(self) -> AcpKind:
        return self.acp or ACP_BY_KIND[self.kind]


PLAIN = ToolFacts()  # a tool with no row (an MCP tool, a grounding tool): nothing special

# One row per built-in tool (``server.tools.TOOLS``) and per session tool the server itself defines (``task``).
TOOL_FACTS: Mapping[str, ToolFacts] = MappingProxyType(
    {
        "read_file": ToolFacts("read", result="quoted"),
        "list_files": ToolFacts("read", acp="search", result="quoted"),
        "search_files": ToolFacts("read", acp="search", result="quoted"),
        "edit_file": ToolFacts("write"),
        "write_file": ToolFacts("write"),
        "run_command": ToolFacts("command", result="process", background=True, sandboxed=True, grant="command"),
        "process_output": ToolFacts("read", acp="execute", result="process"),  # a background command's state
        "stop_process": ToolFacts("command", result="process"),
        "read_artifact": ToolFacts("read", result="quoted"),
        "search_transcript": ToolFacts("read", acp="search", result="quoted"),
        "save_memory": ToolFacts("write", always_ask=True),
        "update_plan": ToolFacts("other"),
        "web_fetch": ToolFacts("network", grant="host"),  # both reach the web from the server (B-WEB-1)
        "web_search": ToolFacts("network"),
        "task": ToolFacts("other", result="quoted", parallel=True),  # a sub-agent's report (server.services.subagents)
    }
)


def facts_of(name: str) -> ToolFacts:
    """The facts the tool called ``name`` declares (PLAIN for a tool with no row)."""
    return TOOL_FACTS.get(name, PLAIN)


def named(**wanted: object) -> frozenset[str]:
    """The names of the tools whose facts have every given value (``named(result="quoted")``)."""
    return frozenset(n for n, f in TOOL_FACTS.items() if all(getattr(f, k) == v for k, v in wanted.items()))
