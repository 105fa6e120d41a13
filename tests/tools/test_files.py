"""File tools on a real folder: read_file paging, list_files globs, search_files and .gitignore, edit_file's
exact-and-unique rule, write_file, and what each says when it cannot do what was asked."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from server.artifacts import ArtifactStore
from server.patterns import MAX_LINE_CHARS
from server.tools import run_tool


def make(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


async def test_read_file_numbers_lines_and_pages_with_offset_and_limit(ctx):
    make(ctx.cwd, {"a.txt": "".join(f"line {i}\n" for i in range(1, 11))})
    whole = await run_tool(ctx, "read_file", {"path": "a.txt"})
    assert whole.status == "ok" and whole.content.splitlines()[0] == "     1\tline 1"
    assert "of 10" not in whole.content
    page = await run_tool(ctx, "read_file", {"path": "a.txt", "offset": 4, "limit": 3})
    assert [line.split("\t")[1] for line in page.content.splitlines()[:3]] == ["line 4", "line 5", "line 6"]
    assert "[lines 4-6 of 10; pass offset/limit to read more]" in page.content


async def test_read_file_failures_are_results_not_crashes(ctx):
    (ctx.cwd / "bin.dat").write_bytes(b"\x00\x01\x02")
    (ctx.cwd / "folder").mkdir()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"path": "nope.txt"}, "no such file"),
        ({"path": "bin.dat"}, "binary"),
        ({"path": "folder"}, "is a directory"),
        ({"path": 5}, "Invalid arguments"),
        ({"path": "a", "offset": 0}, "Invalid arguments"),
    ]
    for args, words in cases:
        out = await run_tool(ctx, "read_file", args)
        assert out.status == "error" and out.content.startswith("Tool failed:") and words in out.content, out


async def test_list_files_globs_match_at_any_depth_and_skip_gitignored(ctx):
    make(
        ctx.cwd,
        {
            "src/app.py": "",
            "src/lib/util.py": "",
            "README.md": "",
            "build/out.py": "",
            "notes.log": "",
            ".gitignore": "build/\n*.log\n",
            "src/.gitignore": "lib/\n",
        },
    )
    everything = (await run_tool(ctx, "list_files", {})).content.splitlines()
    assert everything == [".gitignore", "README.md", "src/.gitignore", "src/app.py"]
    assert (await run_tool(ctx, "list_files", {"pattern": "*.py"})).content == "src/app.py"
    assert (await run_tool(ctx, "list_files", {"pattern": "*.rs"})).content == "[no files match]"


async def test_search_files_finds_regex_hits_with_line_numbers_respecting_gitignore(ctx):
    make(
        ctx.cwd,
        {
            "a.py": "x = 1\ndef target():\n    pass\n",
            "ignored/b.py": "def target(): pass\n",
            ".gitignore": "ignored/\n",
            "c.txt": "target text\n",
        },
    )
    out = await run_tool(ctx, "search_files", {"pattern": r"def target"})
    assert out.content == "a.py:2: def target():"
    only_txt = await run_tool(ctx, "search_files", {"pattern": "target", "glob": "*.txt"})
    assert only_txt.content == "c.txt:1: target text"
    bad = await run_tool(ctx, "search_files", {"pattern": "("})
    assert bad.status == "error" and "Invalid regex" in bad.content


async def test_edit_file_needs_one_exact_occurrence(ctx):
    make(ctx.cwd, {"m.py": "a = 1\nb = 1\n"})
    ambiguous = await run_tool(ctx, "edit_file", {"path": "m.py", "old_string": "= 1", "new_string": "= 2"})
    assert ambiguous.status == "error" and "occurs 2 times" in ambiguous.content
    absent = await run_tool(ctx, "edit_file", {"path": "m.py", "old_string": "c = 1", "new_string": "c = 2"})
    assert absent.status == "error" and "was not found" in absent.content
    same = await run_tool(ctx, "edit_file", {"path": "m.py", "old_string": "a", "new_string": "a"})
    assert same.status == "error" and "identical" in same.content
    assert (ctx.cwd / "m.py").read_text() == "a = 1\nb = 1\n", "failed edits change nothing"
    done = await run_tool(ctx, "edit_file", {"path": "m.py", "old_string": "b = 1", "new_string": "b = 3"})
    assert done.status == "ok" and (ctx.cwd / "m.py").read_text() == "a = 1\nb = 3\n"


async def test_write_file_creates_parents_and_overwrites(ctx):
    first = await run_tool(ctx, "write_file", {"path": "deep/new/file.txt", "content": "hello"})
    assert first.content == "Created deep/new/file.txt (5 bytes)"
    again = await run_tool(ctx, "write_file", {"path": "deep/new/file.txt", "content": "bye"})
    assert again.content.startswith("Overwrote") and (ctx.cwd / "deep/new/file.txt").read_text() == "bye"
    assert not list(ctx.cwd.rglob("*.threadline-tmp")), "no temporary file is left behind"


async def test_paths_outside_the_folder_are_permission_denied(ctx, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (ctx.cwd / "link").symlink_to(outside)
    for tool, args in [
        ("read_file", {"path": "../outside.txt"}),
        ("read_file", {"path": str(outside)}),
        ("read_file", {"path": "link"}),
        ("write_file", {"path": "link", "content": "x"}),
        ("edit_file", {"path": "link", "old_string": "secret", "new_string": "x"}),
        ("list_files", {"path": ".."}),
        ("search_files", {"pattern": "s", "path": "../"}),
    ]:
        out = await run_tool(ctx, tool, args)
        assert out.status == "denied" and out.content.startswith("Permission denied"), (tool, out)
    assert outside.read_text() == "secret"


async def test_unknown_tool_is_a_failure_naming_the_tools(ctx):
    out = await run_tool(ctx, "rm_everything", {})
    assert out.status == "error" and "unknown tool" in out.content and "read_file" in out.content


# --- a hostile repository ---------------------------------------------------------------------------


async def test_write_file_never_writes_through_a_planted_temp_file_symlink(ctx, tmp_path):
    """A repository ships ``.notes.txt.threadline-tmp -> ~/.bashrc``; the old temp name was written through."""
    victim = tmp_path / "victim-bashrc"
    victim.write_text("original\n")
    (ctx.cwd / ".notes.txt.threadline-tmp").symlink_to(victim)
    (ctx.cwd / ".a.py.threadline-tmp").symlink_to(victim)
    make(ctx.cwd, {"a.py": "x = 1\n"})
    wrote = await run_tool(ctx, "write_file", {"path": "notes.txt", "content": "echo pwned\n"})
    edited = await run_tool(ctx, "edit_file", {"path": "a.py", "old_string": "1", "new_string": "2"})
    assert wrote.status == "ok" and edited.status == "ok", (wrote, edited)
    assert victim.read_text() == "original\n"
    assert (ctx.cwd / "notes.txt").read_text() == "echo pwned\n" and (ctx.cwd / "a.py").read_text() == "x = 2\n"
    assert (ctx.cwd / "notes.txt").stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert not [p for p in ctx.cwd.iterdir() if p.name.endswith(".threadline-tmp") and not p.is_symlink()]


async def test_write_file_keeps_an_existing_files_mode(ctx):
    make(ctx.cwd, {"run.sh": "echo 1\n"})
    (ctx.cwd / "run.sh").chmod(0o755)
    assert (await run_tool(ctx, "write_file", {"path": "run.sh", "content": "echo 2\n"})).status == "ok"
    assert (ctx.cwd / "run.sh").stat().st_mode & 0o777 == 0o755


async def test_write_file_race_a_folder_swapped_for_a_symlink_never_lands_outside(ctx, tmp_path):
    """Another process swaps ``sub/`` for a link to a folder outside, over and over, while the model writes."""
    import asyncio
    import threading

    outside = tmp_path / "outside"
    outside.mkdir()
    sub, parked = ctx.cwd / "sub", ctx.cwd / "sub-real"
    sub.mkdir()
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            try:
                os.rename(sub, parked)
                os.symlink(outside, sub)
                os.unlink(sub)
                os.rename(parked, sub)
            except OSError:
                pass

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        for i in range(150):
            await run_tool(ctx, "write_file", {"path": f"sub/f{i}.txt", "content": "x"})
            await asyncio.sleep(0)
    finally:
        stop.set()
        thread.join()
    assert list(outside.iterdir()) == []


async def test_read_file_on_a_fifo_or_device_is_a_clear_error_not_a_hang(ctx):
    os.mkfifo(ctx.cwd / "pipe")  # no writer: a blocking open or read would hang the worker thread forever
    (ctx.cwd / "zero").symlink_to("/dev/zero")
    out = await run_tool(ctx, "read_file", {"path": "pipe"})
    assert out.status == "error" and "not a regular file" in out.content, out
    out = await run_tool(ctx, "read_file", {"path": "zero"})
    assert out.status == "denied" and out.content.startswith("Permission denied"), out  # /dev is outside the folder


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def quick_deadline(ctx, seconds: float = 2.0):
    return dataclasses.replace(ctx, settings=dataclasses.replace(ctx.settings, pattern_timeout_seconds=seconds))


async def test_search_files_catastrophic_regex_is_killed_at_its_deadline_and_says_so(ctx):
    """``(a+)+$`` against many a's then '!' backtracks for ever; it runs in a worker that is killed."""
    make(ctx.cwd, {"hits.txt": "plain line\n", "evil.txt": "a" * 60 + "!\n"})
    out = await run_tool(quick_deadline(ctx), "search_files", {"pattern": r"(a+)+$|plain"})
    assert out.status == "ok"
    assert "search stopped after 2 s" in out.content and "partial" in out.content, out.content


async def test_list_files_pathological_gitignore_is_killed_at_its_deadline_and_says_so(ctx):
    """A repository ``.gitignore`` whose globs backtrack polynomially on a long file name."""
    make(ctx.cwd, {".gitignore": "a*" * 14 + "b\n", "a" * 200: ""})
    out = await run_tool(quick_deadline(ctx), "list_files", {})
    assert out.status == "ok" and "listing stopped after 2 s" in out.content, out.content


async def test_search_files_searches_only_the_first_characters_of_a_huge_line_and_says_so(ctx):
    make(ctx.cwd, {"wide.txt": "x" * (MAX_LINE_CHARS + 50) + "needle\n", "narrow.txt": "needle\n"})
    out = await run_tool(ctx, "search_files", {"pattern": "needle"})
    assert out.content.splitlines()[0] == "narrow.txt:1: needle"
    assert f"1 lines longer than {MAX_LINE_CHARS} characters" in out.content, out.content


async def test_read_artifact_search_with_a_catastrophic_regex_times_out_and_says_so(ctx):
    stored = await ctx.artifacts.keep(ctx.session_id, None, ("a" * 60 + "!\n") * 2000)
    assert stored.artifact is not None
    slow = ArtifactStore(ctx.artifacts.root, ctx.store, pattern_timeout=2.0)
    result = await slow.read(ctx.session_id, stored.artifact.id, search=(r"(a+)+$", 5))
    assert result["matches"] == [] and "search stopped after 2 s" in result["searchNote"]


async def test_decomposed_unicode_file_names_are_read_and_written_as_the_filesystem_has_them(ctx):
    """Paths were NFC-normalised, so a decomposed (NFD) name could not be read and write_file created a
    second, precomposed file beside it."""
    nfd, nfc = "cafe\u0301.txt", "caf\u00e9.txt"
    (ctx.cwd / nfd).write_text("decomposed\n", encoding="utf-8")
    read = await run_tool(ctx, "read_file", {"path": nfd})
    assert read.status == "ok" and "decomposed" in read.content, read
    wrote = await run_tool(ctx, "write_file", {"path": nfd, "content": "rewritten\n"})
    assert wrote.status == "ok" and wrote.content.startswith("Overwrote"), wrote
    assert sorted(os.listdir(ctx.cwd)) == [nfd]
    assert (ctx.cwd / nfd).read_text(encoding="utf-8") == "rewritten\n"
    edited = await run_tool(ctx, "edit_file", {"path": nfd, "old_string": "rewritten", "new_string": "edited"})
    assert edited.status == "ok" and sorted(os.listdir(ctx.cwd)) == [nfd], edited
    other = await run_tool(ctx, "read_file", {"path": nfc})  # a different name, as the filesystem sees it
    assert other.status == "error" and "no such file" in other.content
    listed = await run_tool(ctx, "list_files", {})
    assert listed.content == nfd
