"""``readEvents {sessionId, kinds?, afterId?, limit?}`` -> ``{events, nextId?}``: what happened besides messages
(compactions, approval requests and decisions, notices), so a resumed session can show them (R-OBS-1)."""

from protocol.messages import EventItem, ReadEventsParams, ReadEventsResult
from server.methods.registry import reads
from server.services.core import Core
from server.transcript.records import page_size


@reads("readEvents")
async def read_events(core: Core, params: ReadEventsParams) -> ReadEventsResult:
    await core.store.get_session(params.session_id)
    size = page_size(params.limit)
    events = await core.store.list_events(
        params.session_id, kinds=params.kinds or (), after_id=params.after_id or 0, limit=size + 1
    )
    page = events[:size]
    return ReadEventsResult(
        events=[
            EventItem(id=e.id, kind=e.kind, created_at=e.created_at, payload=e.payload, turn_id=e.turn_id) for e in page
        ],
        next_id=page[-1].id if len(events) > size else None,
    )
