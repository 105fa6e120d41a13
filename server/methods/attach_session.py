"""``attachSession {sessionId, sinceSeq?}`` -> ``{sessionId, seq, running, waitingForApproval, truncated?}``
(B-DAEMON-1): the updates after ``sinceSeq`` are replayed on this connection, then live ones follow."""

from protocol.messages import AttachSessionParams, AttachSessionResult
from server.methods.registry import reads
from server.services import sessions
from server.services.core import Core


@reads("attachSession")
async def attach_session(core: Core, params: AttachSessionParams) -> AttachSessionResult:
    await sessions.stored(core, params.session_id)  # SessionNotFound
    attached = core.clients.attach(params.session_id, params.since_seq)
    return AttachSessionResult(
        session_id=params.session_id,
        seq=attached.seq,
        running=sessions.is_running(core, params.session_id),
        waiting_for_approval=attached.waiting_for_approval,
        truncated=True if attached.truncated else None,
    )
