"""``compactSession {sessionId, focus?}``: compact now, so the next request starts from a fresh summary."""

from protocol.messages import CompactSessionParams, CompactSessionResult
from server.methods.registry import mutates
from server.services import context_view
from server.services.core import Core


@mutates("compactSession", exclusive=True)
async def compact_session(core: Core, params: CompactSessionParams) -> CompactSessionResult:
    return await context_view.compact_session(core, params.session_id, params.focus)
