"""The background-process use cases a client has: list a session's processes, stop one (``listProcesses``,
``stopProcess``, and ``getContextView.processes``)."""

from __future__ import annotations

from protocol.messages import ListProcessesResult, ProcessInfo, StopProcessResult
from server.errors import ProcessNotFound
from server.services.needs import CoreStore
from server.tools.running import BackgroundProcess, BackgroundProcesses


def process_infos(processes: BackgroundProcesses) -> list[ProcessInfo]:
    return [_info(p) for p in processes.all()]


def _info(p: BackgroundProcess) -> ProcessInfo:
    return ProcessInfo(
        process_id=p.id, pid=p.pid, command=p.command, status=p.status, started_at=p.started_at, exit_code=p.exit_code
    )


async def list_processes(core: CoreStore, session_id: str) -> ListProcessesResult:
    _stored, session = await core.session(session_id)
    return ListProcessesResult(processes=process_infos(session.processes))


async def stop_process(core: CoreStore, session_id: str, process_id: str) -> StopProcessResult:
    _stored, session = await core.session(session_id)
    stopped = await session.processes.stop(process_id)
    if stopped is None:
        raise ProcessNotFound(f"session {session_id} has no background process {process_id!r} in this server")
    return StopProcessResult(process=_info(stopped))
