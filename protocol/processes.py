"""Background processes a session's ``run_command {background: true}`` started (``listProcesses``,
``stopProcess``, ``getContextView.processes``)."""

from __future__ import annotations

from typing import Literal

from protocol.base import Base, SafeInt

ProcessStatus = Literal["running", "exited", "stopped"]


class ProcessInfo(Base):
    process_id: str
    pid: SafeInt
    command: str
    status: ProcessStatus
    started_at: str  # ISO 8601, UTC
    exit_code: SafeInt | None = None  # once it ended (a negative number: the signal that ended it)


class ListProcessesParams(Base):
    session_id: str


class ListProcessesResult(Base):
    processes: list[ProcessInfo]  # in the order they were started; those this server process holds


class StopProcessParams(Base):
    session_id: str
    process_id: str


class StopProcessResult(Base):
    process: ProcessInfo  # as it is once stopped
