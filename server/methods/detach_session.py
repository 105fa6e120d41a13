"""``detachSession {sessionId}`` -> ``{detached}``: this connection stops receiving the session's updates and
approval requests; its turns go on (B-DAEMON-1)."""

from protocol.messages import DetachSessionParams, DetachSessionResult
from server.methods.registry import reads
from server.services.core import Core


@reads("detachSession")
async def detach_session(core: Core, params: DetachSessionParams) -> DetachSessionResult:
    return DetachSessionResult(detached=core.clients.detach(params.session_id))
