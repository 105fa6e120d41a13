"""``searchTranscript {query, sessionId?, limit?}`` -> ``{hits}`` (B-SEARCH-1)."""

from protocol.messages import SearchTranscriptParams, SearchTranscriptResult
from server.methods.registry import reads
from server.services import history
from server.services.core import Core


@reads("searchTranscript")
async def search_transcript(core: Core, params: SearchTranscriptParams) -> SearchTranscriptResult:
    return await history.search_transcript(core, params)
