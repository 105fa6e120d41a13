"""``compactSession {sessionId, focus?}``: compact now, so the next request starts from a fresh summary."""

from protocol.messages import CompactSessionParams, CompactSessionResult
from server.agent.service import compact_session as compact
from server.errors import InvalidParams
from server.rpc import method
from server.runtime import Runtime

MAX_FOCUS_CHARS = 4000


@method("compactSession")
async def compact_session(rt: Runtime, params: CompactSessionParams) -> CompactSessionResult:
    if params.focus is not None and len(params.focus) > MAX_FOCUS_CHARS:
        raise InvalidParams(f"focus must be at most {MAX_FOCUS_CHARS} characters")
    return await compact(rt, params.session_id, params.focus)
