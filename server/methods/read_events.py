"""``readEvents {sessionId, kinds?, afterId?, limit?}`` -> ``{events, nextId?}``: what happened besides messages
(compactions, approval requests and decisions, notices), so a resumed session can show them (R-OBS-1)."""

from protocol.messages import ReadEventsParams, ReadEventsResult
from server.methods.registry import reads
from server.services import history
from server.services.core import Core


@reads("readEvents")
async def read_events(core: Core, params: ReadEventsParams) -> ReadEventsResult:
    return await history.read_events(core, params)
