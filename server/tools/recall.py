"""Tools that recover what compaction left out: read_artifact and search_transcript (R-ART-2, B-SEARCH-1)."""

from __future__ import annotations

from typing import Any

from server.errors import InvalidArtifactRequest
from server.tools.base import Tool, ToolContext, ToolFailure, optional_int, require_str, schema
from server.transcript import ArtifactNotFound


async def read_artifact(ctx: ToolContext, args: dict[str, Any]) -> str:
    artifact_id = require_str(args, "artifact_id")
    kwargs: dict[str, Any] = {}
    if isinstance(args.get("pattern"), str) and args["pattern"]:
        kwargs["search"] = (args["pattern"], optional_int(args, "max_matches", 50, minimum=1))
    elif args.get("start_line") is not None:
        start = optional_int(args, "start_line", 1, minimum=1) or 1
        kwargs["line_range"] = (start, optional_int(args, "end_line", start + 199, minimum=start) or start + 199)
    else:
        kwargs["byte_range"] = (optional_int(args, "offset", 0) or 0, optional_int(args, "length", 20000) or 20000)
    try:
        result = await ctx.artifacts.read(ctx.session_id, artifact_id, **kwargs)
    except ArtifactNotFound:
        raise ToolFailure(f"no artifact {artifact_id!r} in this session") from None
    except InvalidArtifactRequest as exc:
        raise ToolFailure(str(exc)) from None
    head = f"[artifact {artifact_id}: {result['totalBytes']} bytes, {result['totalLines']} lines]"
    if "matches" in result:
        lines = [f"{m['line']}: {m['text']}" for m in result["matches"]]
        note = f"\n{result['searchNote']}" if result.get("searchNote") else ""
        return head + "\n" + ("\n".join(lines) if lines else "[no matches]") + note
    return head + "\n" + str(result["content"])


async def search_transcript(ctx: ToolContext, args: dict[str, Any]) -> str:
    query = require_str(args, "query")
    limit = optional_int(args, "limit", 10, minimum=1) or 10
    hits = await ctx.store.search(query, ctx.session_id, min(limit, 50))
    if not hits:
        return "[no matches in this session's transcript]"
    return "\n".join(f"#{h.seq} {h.role}: {h.snippet}" for h in hits)


TOOLS = [
    Tool(
        "read_artifact",
        "Read a stored large tool output: by byte offset/length, by start_line/end_line, "
        "or lines matching a regex pattern.",
        schema(
            ["artifact_id"],
            artifact_id={"type": "string"},
            offset={"type": "integer"},
            length={"type": "integer"},
            start_line={"type": "integer"},
            end_line={"type": "integer"},
            pattern={"type": "string"},
            max_matches={"type": "integer"},
        ),
        read_artifact,
    ),
    Tool(
        "search_transcript",
        "Full-text search this session's whole transcript, including history that was summarized out of the context.",
        schema(["query"], query={"type": "string"}, limit={"type": "integer"}),
        search_transcript,
    ),
]
