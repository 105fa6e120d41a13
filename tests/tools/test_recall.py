"""read_artifact and search_transcript as the model uses them (R-ART-2, B-SEARCH-1), and save_memory (R-FRZ-2)."""

from __future__ import annotations

from server.tools import run_tool
from server.transcript import NewMessage


async def test_R_ART_2_read_artifact_by_bytes_lines_and_search(ctx):
    text = "".join(f"row {i:05d}\n" for i in range(8000))  # ~80 KB: over the artifact threshold
    kept = await ctx.artifacts.keep(ctx.session_id, "call_1", text)
    assert kept.artifact is not None
    aid = kept.artifact.id
    by_bytes = await run_tool(ctx, "read_artifact", {"artifact_id": aid, "offset": 10, "length": 10})
    assert by_bytes.content.splitlines()[1:] == ["row 00001"]
    by_lines = await run_tool(ctx, "read_artifact", {"artifact_id": aid, "start_line": 3, "end_line": 4})
    assert by_lines.content.splitlines()[1:] == ["row 00002", "row 00003"]
    hits = await run_tool(ctx, "read_artifact", {"artifact_id": aid, "pattern": "row 0799[89]"})
    assert hits.content.splitlines()[1:] == ["7999: row 07998", "8000: row 07999"]
    missing = await run_tool(ctx, "read_artifact", {"artifact_id": "artifact-nope"})
    assert missing.status == "error" and "no artifact" in missing.content


async def test_B_SEARCH_1_search_transcript_finds_history_of_this_session_only(ctx):
    await ctx.store.append_messages(ctx.session_id, [NewMessage("user", "the flaky test is test_widget_resize")])
    other = await ctx.store.create_session(str(ctx.cwd))
    await ctx.store.append_messages(other.id, [NewMessage("user", "test_widget_resize elsewhere")])
    out = await run_tool(ctx, "search_transcript", {"query": "test_widget_resize"})
    assert out.content.startswith("#1 user:") and len(out.content.splitlines()) == 1
    none = await run_tool(ctx, "search_transcript", {"query": "nothing-like-this"})
    assert none.content == "[no matches in this session's transcript]"


async def test_R_FRZ_2_save_memory_appends_to_the_scoped_file_and_says_when_it_applies(ctx):
    project = await run_tool(ctx, "save_memory", {"scope": "project", "text": "use  pnpm,\nnot npm"})
    user = await run_tool(ctx, "save_memory", {"scope": "user", "text": "prefers short answers"})
    assert project.status == user.status == "ok"
    assert "takes effect in new sessions" in project.content
    assert (ctx.cwd / ".threadline" / "memory.md").read_text().startswith("- use pnpm, not npm (")
    assert "prefers short answers" in (ctx.settings.home / "memory.md").read_text()
    bad = await run_tool(ctx, "save_memory", {"scope": "team", "text": "x"})
    assert bad.status == "error" and "scope" in bad.content
