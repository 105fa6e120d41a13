"""``readTranscript {sessionId, afterSeq?, limit?}`` -> ``{items, nextSeq?}``."""

from protocol.messages import ReadTranscriptParams, ReadTranscriptResult
from server.methods.registry import reads
from server.services import history
from server.services.core import Core


@reads("readTranscript")
async def read_transcript(core: Core, params: ReadTranscriptParams) -> ReadTranscriptResult:
    return await history.read_transcript(core, params)
