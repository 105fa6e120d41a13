"""``searchTranscript {query, sessionId?, limit?}`` -> ``{hits}`` (B-SEARCH-1)."""

from protocol.messages import SearchHit, SearchTranscriptParams, SearchTranscriptResult
from server.rpc import method
from server.runtime import Runtime


@method("searchTranscript")
async def search_transcript(rt: Runtime, params: SearchTranscriptParams) -> SearchTranscriptResult:
    hits = await rt.store.search(params.query, params.session_id, params.limit)
    return SearchTranscriptResult(
        hits=[SearchHit(session_id=h.session_id, seq=h.seq, role=h.role, snippet=h.snippet) for h in hits]
    )
