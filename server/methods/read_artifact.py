"""``readArtifact``: a stored tool output by byte range, line range or regex search (R-ART-2)."""

from typing import Any

import msgspec

from protocol.messages import ReadArtifactParams, ReadArtifactResult
from server.methods.registry import reads
from server.services.core import Core


@reads("readArtifact")
async def read_artifact(core: Core, params: ReadArtifactParams) -> ReadArtifactResult:
    await core.store.get_session(params.session_id)
    kwargs: dict[str, Any] = {}
    if params.search is not None:
        kwargs["search"] = (params.search.pattern, params.search.max_matches)
    elif params.line_range is not None:
        kwargs["line_range"] = (params.line_range.start, params.line_range.end)
    elif params.byte_range is not None:
        kwargs["byte_range"] = (params.byte_range.offset, params.byte_range.length)
    result = await core.artifacts.read(params.session_id, params.artifact_id, **kwargs)
    return msgspec.convert(result, ReadArtifactResult)
