"""What a session holds, read back: its transcript page by page, its events, a search over every transcript and a
stored artifact (``readTranscript``, ``readEvents``, ``searchTranscript``, ``readArtifact``). Reads only."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from protocol.messages import (
    EventItem,
    ReadArtifactParams,
    ReadArtifactResult,
    ReadEventsParams,
    ReadEventsResult,
    ReadTranscriptParams,
    ReadTranscriptResult,
    SearchHit,
    SearchTranscriptParams,
    SearchTranscriptResult,
)
from server.services.commands import CommandsNeeds, with_typed
from server.services.needs import CoreFiles, CoreStore
from server.transcript import StoredMessage
from server.transcript.convert import to_item
from server.transcript.records import page_size


class HistoryNeeds(CommandsNeeds, CoreFiles, Protocol):
    """What reading a session back uses of the ``Core`` (a command's expansion shows as what the user typed)."""


async def read_transcript(core: HistoryNeeds, params: ReadTranscriptParams) -> ReadTranscriptResult:
    page = await core.store.read_messages(params.session_id, params.after_seq, params.limit)
    items = await with_typed(core, params.session_id, [to_item(m) for m in page.items])
    return ReadTranscriptResult(items=items, next_seq=page.next_seq)


async def read_events(core: HistoryNeeds, params: ReadEventsParams) -> ReadEventsResult:
    await core.store.get_session(params.session_id)  # SessionNotFound
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


async def search_transcript(core: HistoryNeeds, params: SearchTranscriptParams) -> SearchTranscriptResult:
    hits = await core.store.search(params.query, params.session_id, params.limit)
    return SearchTranscriptResult(
        hits=[SearchHit(session_id=h.session_id, seq=h.seq, role=h.role, snippet=h.snippet) for h in hits]
    )


async def read_artifact(core: HistoryNeeds, params: ReadArtifactParams) -> ReadArtifactResult:
    await core.store.get_session(params.session_id)  # SessionNotFound
    kwargs: dict[str, Any] = {}
    if params.search is not None:
        kwargs["search"] = (params.search.pattern, params.search.max_matches)
    elif params.line_range is not None:
        kwargs["line_range"] = (params.line_range.start, params.line_range.end)
    elif params.byte_range is not None:
        kwargs["byte_range"] = (params.byte_range.offset, params.byte_range.length)
    result = await core.artifacts.read(params.session_id, params.artifact_id, **kwargs)
    return msgspec.convert(result, ReadArtifactResult)


async def all_messages(core: CoreStore, session_id: str) -> list[StoredMessage]:
    """Every stored message of the session, in order (what a client's ``session/load`` replays)."""
    return await core.store.all_messages(session_id)
