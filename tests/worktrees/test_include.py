"""``.worktreeinclude`` (docs/WORKTREES.md): what a new worktree gets copied from the main checkout: the files a
line names (a path, a folder, a glob; a bare name at any depth), never a link, never over a file, never a git
folder's."""

from __future__ import annotations

from pathlib import Path

from server.worktrees.create import copy_included


def test_B_WT_1_worktreeinclude_copies_what_it_names_and_nothing_it_must_not(tmp_path: Path):
    main, dest = tmp_path / "main", tmp_path / "dest"
    (main / "config" / "local").mkdir(parents=True)
    (main / "pkg" / "deep").mkdir(parents=True)
    (main / ".git").mkdir()
    (dest / "pkg").mkdir(parents=True)
    (main / ".env").write_text("TOKEN=1\n")
    (main / "config" / "local" / "a.json").write_text("{}\n")
    (main / "pkg" / "deep" / ".env").write_text("DEEP=1\n")
    (main / "pkg" / "keep.txt").write_text("main's\n")
    (dest / "pkg" / "keep.txt").write_text("the worktree's\n")
    (main / "secret.key").symlink_to(tmp_path / "elsewhere")
    (main / ".git" / ".env").write_text("git's\n")
    (main / "notes.md").write_text("not named\n")
    (main / ".worktreeinclude").write_text(".env\n# a comment\nconfig/local/\npkg/keep.txt\n*.key\n\n")
    assert copy_included(main, dest) == 3
    assert (dest / ".env").read_text() == "TOKEN=1\n"
    assert (dest / "pkg" / "deep" / ".env").read_text() == "DEEP=1\n"  # a bare name matches at any depth
    assert (dest / "config" / "local" / "a.json").exists()  # a folder: everything in it
    assert (dest / "pkg" / "keep.txt").read_text() == "the worktree's\n"  # never over a file
    assert not (dest / "secret.key").exists() and not (dest / ".git").exists() and not (dest / "notes.md").exists()
    assert copy_included(tmp_path / "none", dest) == 0  # no .worktreeinclude: nothing
