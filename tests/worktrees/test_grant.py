"""B-WT-1's sandbox grant as data (``SandboxPolicy.with_git_grant``, ``hidden_around``): which folders a worktree
task may write, what stays read-only inside them, and the data folder hidden around them. The real sandbox
enforcing it is in test_worktree_sandbox.py."""

from __future__ import annotations

from pathlib import Path

from server.sandbox.policy import SandboxPolicy, build_policy, hidden_around


def layout(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    home = tmp_path / "home"
    task = home / "worktrees" / "repo-1" / "t"
    (task / "t").mkdir(parents=True)
    (task / "objects").mkdir()
    (home / "worktrees" / "repo-1" / "other" / "other").mkdir(parents=True)
    (home / "threadline.db").write_text("secret")
    (home / "artifacts").mkdir()
    admin = tmp_path / "repo" / ".git" / "worktrees" / "t"
    admin.mkdir(parents=True)
    return home, task, admin, tmp_path / "tmp"


def test_B_WT_1_the_grant_adds_only_the_tasks_git_folders_and_hides_the_data_folder_around_them(tmp_path):
    home, task, admin, tmp = layout(tmp_path)
    tmp.mkdir()
    base = build_policy("workspace-write", task / "t", tmp, deny_read=(str(home),))
    assert base.deny_read == ()  # the data folder holds the session folder: left visible by the plain policy
    grant = (
        (str(admin), str(task / "objects")),
        (str(admin / "commondir"),),
        ("GIT_OBJECT_DIRECTORY=x",),
        (str(home),),
    )
    policy = base.with_git_grant(*grant)
    assert set(policy.writable) == {str(tmp), str(task / "t"), str(admin), str(task / "objects")}
    assert str(admin / "commondir") in policy.read_only and policy.env == ("GIT_OBJECT_DIRECTORY=x",)
    assert set(policy.deny_read) == {
        str(home / "threadline.db"),
        str(home / "artifacts"),
        str(home / "worktrees" / "repo-1" / "other"),
    }
    assert SandboxPolicy.from_json(policy.to_json()) == policy
    (home / "later.key").write_text("made after the turn began")
    assert str(home / "later.key") in policy.with_nested_git().deny_read  # walked again at each command's start
    assert str(admin) not in policy.with_nested_git().read_only  # the task's own git folder stays writable
    assert build_policy("read-only", task / "t", tmp).with_git_grant(*grant).writable == (str(tmp),)


def test_B_WT_1_hidden_around_keeps_the_way_to_each_kept_folder_and_nothing_else(tmp_path):
    (tmp_path / "a" / "b" / "keep").mkdir(parents=True)
    (tmp_path / "a" / "b" / "sibling").mkdir()
    (tmp_path / "a" / "x.txt").write_text("x")
    (tmp_path / "link").symlink_to("/")
    hidden = hidden_around(str(tmp_path), (str(tmp_path / "a" / "b" / "keep"),))
    assert sorted(hidden) == [str(tmp_path / "a" / "b" / "sibling"), str(tmp_path / "a" / "x.txt")]
    assert hidden_around(str(tmp_path / "a"), (str(tmp_path / "elsewhere"),)) == [str(tmp_path / "a")]
