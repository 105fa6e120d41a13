"""Background processes as the transcript tells them (B-SUM-11): which are still running, derived by the fold.

Pure: the background tools' results start with fixed lines (written by ``server.tools.background`` with the
functions below), so the summary fold can tell from the transcript alone which process was started (its id and
the start of its command) and which was later seen to end (a ``process_output`` or ``stop_process`` result that
reports an exit, or an id the server no longer holds).
"""

from __future__ import annotations

import re
from typing import Literal

from protocol.tool_facts import named

__all__ = [
    "PROCESS_CHARS",
    "exited_line",
    "process_event",
    "processes_after",
    "running_line",
    "started_line",
    "stopped_line",
    "unknown_line",
]

PROCESS_CHARS = 120  # the command start a summary line keeps
# The tools whose results tell of background processes, and how many running ones the fold keeps.
PROCESS_TOOLS = named(result="process")
MAX_STORED_PROCESSES = 256
_STARTED = re.compile(r"^Started background process (?P<id>[\w-]+) \(pid \d+\): (?P<command>.*)$")
_ENDED = re.compile(r"^Process (?P<id>[\w-]+) (?:exited with code -?\d+|was stopped\b)")
_UNKNOWN = re.compile(r"^(?:Tool failed: )?no background process (?P<id>[\w-]+) in this session")


def started_line(process_id: str, pid: int, command: str) -> str:
    return f"Started background process {process_id} (pid {pid}): {' '.join(command.split())[:200]}"


def running_line(process_id: str) -> str:
    return f"Process {process_id} is running"


def exited_line(process_id: str, code: int | None) -> str:
    return f"Process {process_id} exited with code {code}"


def stopped_line(process_id: str, code: int | None) -> str:
    return f"Process {process_id} was stopped (exit code {code})"


def unknown_line(process_id: str) -> str:
    return f"no background process {process_id} in this session (it may have ended with an earlier server)"


def process_event(text: str) -> tuple[Literal["start", "end"], str, str] | None:
    """What a tool result's first line says of a background process: ``("start", id, command)``,
    ``("end", id, "")``, or None."""
    first = text.split("\n", 1)[0].strip()
    if m := _STARTED.match(first):
        return "start", m.group("id"), m.group("command")
    if m := _ENDED.match(first) or _UNKNOWN.match(first):
        return "end", m.group("id"), ""
    return None


Running = tuple[tuple[str, str], ...]  # (id, command start) of the processes running, in the order they started


def processes_after(running: Running, tool_name: str, text: str) -> Running:
    """The running processes after a ``tool_name`` result reading ``text``: a started process joins them, one seen
    to end leaves them; ``running`` itself (the same object) when the result tells nothing of a process."""
    event = process_event(text) if tool_name in PROCESS_TOOLS else None
    if event is None:
        return running
    kind, process_id, command = event
    kept = tuple(p for p in running if p[0] != process_id)
    return (*kept, (process_id, command))[-MAX_STORED_PROCESSES:] if kind == "start" else kept
