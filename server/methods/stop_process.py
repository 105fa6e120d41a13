"""``stopProcess {sessionId, processId}`` -> ``{process}``: a client ends a background process."""

from protocol.messages import StopProcessParams, StopProcessResult
from server.methods.registry import mutates
from server.services import processes
from server.services.core import Core


@mutates("stopProcess")
async def stop_process(core: Core, params: StopProcessParams) -> StopProcessResult:
    return await processes.stop_process(core, params.session_id, params.process_id)
