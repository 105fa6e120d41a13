"""``listProcesses {sessionId}`` -> ``{processes: [{processId, pid, command, status, exitCode?, startedAt}]}``."""

from protocol.messages import ListProcessesParams, ListProcessesResult
from server.methods.registry import reads
from server.services import processes
from server.services.core import Core


@reads("listProcesses")
async def list_processes(core: Core, params: ListProcessesParams) -> ListProcessesResult:
    return await processes.list_processes(core, params.session_id)
