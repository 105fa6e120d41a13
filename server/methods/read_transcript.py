"""``readTranscript {sessionId, afterSeq?, limit?}`` -> ``{items, nextSeq?}``."""

from protocol.messages import ReadTranscriptParams, ReadTranscriptResult
from server.rpc import method
from server.runtime import Runtime
from server.transcript.convert import to_item


@method("readTranscript")
async def read_transcript(rt: Runtime, params: ReadTranscriptParams) -> ReadTranscriptResult:
    page = await rt.store.read_messages(params.session_id, params.after_seq, params.limit)
    return ReadTranscriptResult(items=[to_item(m) for m in page.items], next_seq=page.next_seq)
