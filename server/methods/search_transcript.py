"""``searchTranscript {query, sessionId?, limit?}`` -> ``{hits}`` (B-SEARCH-1)."""

from protocol.messages import SearchHit, SearchTranscriptParams, SearchTranscriptResult
from server.methods.registry import reads
from server.services.core import Core


@reads("searchTranscript")
async def search_transcript(core: Core, params: SearchTranscriptParams) -> SearchTranscriptResult:
    hits = await core.store.search(params.query, params.session_id, params.limit)
    return SearchTranscriptResult(
        hits=[SearchHit(session_id=h.session_id, seq=h.seq, role=h.role, snippet=h.snippet) for h in hits]
    )
