"""``readTranscript {sessionId, afterSeq?, limit?}`` -> ``{items, nextSeq?}``."""

from protocol.messages import ReadTranscriptParams, ReadTranscriptResult
from server.methods.registry import reads
from server.services.commands import with_typed
from server.services.core import Core
from server.transcript.convert import to_item


@reads("readTranscript")
async def read_transcript(core: Core, params: ReadTranscriptParams) -> ReadTranscriptResult:
    page = await core.store.read_messages(params.session_id, params.after_seq, params.limit)
    items = await with_typed(core, params.session_id, [to_item(m) for m in page.items])
    return ReadTranscriptResult(items=items, next_seq=page.next_seq)
