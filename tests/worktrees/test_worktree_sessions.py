"""B-WT-1 through the real server over stdio with real git: a session in its own worktree and branch, its
stats, merge (clean, conflicting, refused), discard and delete. Commands run under this machine's sandbox when it
has one (tests/worktrees/test_worktree_sandbox.py holds the attacks)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from server.cli.client import RpcError
from tests.e2e.agent_support import Agent, agent_fixture, fresh_fixture
from tests.worktrees.support import COMMIT, call, checkout_state, command, commit_in, git, make_repo

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]
agent = agent_fixture()
fresh = fresh_fixture()


async def worktree_session(agent: Agent, cwd: Path, name: str | bool, **extra: Any) -> dict[str, Any]:
    params = {"cwd": str(cwd), "worktree": name, "approvalPolicy": "auto", **extra}
    return await agent.client.request("createSession", params)


async def run(agent: Agent, sid: str, *calls: dict[str, Any]) -> list[dict[str, Any]]:
    agent.fake.push(*calls, {"content": "done"})
    answer = await agent.turn(sid, "go", timeout=60)
    assert answer["stopReason"] == "endTurn", answer
    return agent.updates(sid, "toolResult")[-len(calls) :]


async def listed(agent: Agent, sid: str) -> dict[str, Any]:
    sessions = (await agent.client.request("listSessions", {}))["sessions"]
    return next(s for s in sessions if s["sessionId"] == sid)


async def rpc_error(agent: Agent, method: str, params: dict[str, Any]) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await agent.client.request(method, params)
    return caught.value


async def test_B_WT_1_a_session_in_a_worktree_gets_its_own_branch_and_folder_outside_the_repository(agent, tmp_path):
    repo = make_repo(tmp_path, {"a.txt": "a\n", ".gitignore": ".env\n", ".worktreeinclude": ".env\n# not me\n"})
    (repo / ".env").write_text("TOKEN=local\n")
    (repo / "sub").mkdir()
    before = checkout_state(repo)
    made = await worktree_session(agent, repo / "sub", "fix-1")
    wt = made["worktree"]
    path = Path(wt["path"])
    assert wt["branch"] == "threadline/fix-1" and wt["base"] == "main" and wt["state"] == "active"
    assert path.is_relative_to(agent.home / "worktrees") and not path.is_relative_to(repo)
    assert (path / ".env").read_text() == "TOKEN=local\n"  # .worktreeinclude copied the ignored file
    assert git(repo, "rev-parse", "threadline/fix-1") == git(repo, "rev-parse", "main")
    assert str(path) in git(repo, "worktree", "list")
    info = await listed(agent, made["sessionId"])
    assert info["cwd"] == str(path / "sub")  # cwd's place in the new checkout
    assert info["worktree"]["filesChanged"] == 0 and info["worktree"]["ahead"] == 0
    assert checkout_state(repo) == before


async def test_B_WT_1_a_folder_outside_a_repository_and_a_name_in_use_are_refused_by_code(agent, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    error = await rpc_error(agent, "createSession", {"cwd": str(plain), "worktree": "x"})
    assert error.code == -32602 and error.data["code"] == "NotAGitRepository", error.message
    assert "\n" not in error.message
    repo = make_repo(tmp_path)
    await worktree_session(agent, repo, "same")
    error = await rpc_error(agent, "createSession", {"cwd": str(repo), "worktree": "same"})
    assert error.code == -32602 and error.data["code"] == "WorktreeExists", error.message
    for bad in ("../up", "-x", "a b", ""):
        error = await rpc_error(agent, "createSession", {"cwd": str(repo), "worktree": bad})
        assert error.code == -32602, bad
    error = await rpc_error(agent, "createSession", {"cwd": str(repo), "worktree": "b", "base": "nope"})
    assert error.code == -32602 and "nope" in error.message


async def test_B_WT_1_the_agent_commits_on_its_branch_and_the_main_checkout_is_untouched(agent, tmp_path):
    repo = make_repo(tmp_path)
    before = checkout_state(repo)
    made = await worktree_session(agent, repo, True)
    sid, branch = made["sessionId"], made["worktree"]["branch"]
    results = await run(
        agent,
        sid,
        command("c0", f"echo new > b.txt && echo four >> a.txt && git add -A && {COMMIT} -m 'agent work'"),
        command("c1", "git log --oneline && git diff HEAD~1 --stat"),
    )
    assert [r["status"] for r in results] == ["ok", "ok"], results
    assert "agent work" in results[1]["content"]
    assert checkout_state(repo) == before  # HEAD, index and files of the main checkout
    assert git(repo, "log", "-1", "--format=%s", branch).strip() == "agent work"  # brought in after the turn
    wt = (await listed(agent, sid))["worktree"]
    assert (wt["filesChanged"], wt["insertions"], wt["deletions"], wt["ahead"]) == (2, 2, 0, 1)


async def test_B_WT_1_a_clean_branch_merges_and_the_session_stays_readable(agent, tmp_path):
    repo = make_repo(tmp_path)
    sid = (await worktree_session(agent, repo, "clean"))["sessionId"]
    await run(agent, sid, command("c0", f"echo merged > m.txt && git add m.txt && {COMMIT} -m 'add m'"))
    (Path((await listed(agent, sid))["worktree"]["path"]) / "left.txt").write_text("uncommitted\n")
    done = await agent.client.request("mergeWorktree", {"sessionId": sid})
    assert done["merged"] is True and done["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert (repo / "m.txt").read_text() == "merged\n" and (repo / "left.txt").read_text() == "uncommitted\n"
    assert git(repo, "status", "--porcelain") == ""
    assert (await listed(agent, sid))["worktree"]["state"] == "merged"
    assert await agent.transcript(sid)


@pytest.mark.parametrize("strategy", ["merge", "squash", "rebase"])
async def test_B_WT_1_a_conflicting_merge_names_the_files_and_leaves_the_checkout_exactly_as_it_was(
    agent, tmp_path, strategy
):
    repo = make_repo(tmp_path)
    sid = (await worktree_session(agent, repo, f"conflict-{strategy}"))["sessionId"]
    await run(agent, sid, command("c0", f"echo theirs > a.txt && git add a.txt && {COMMIT} -m theirs"))
    commit_in(repo, "a.txt", "ours\n", "ours")
    (repo / "untracked.txt").write_text("mine\n")
    before = checkout_state(repo)
    done = await agent.client.request("mergeWorktree", {"sessionId": sid, "strategy": strategy})
    assert done == {"merged": False, "conflicts": ["a.txt"]}
    assert checkout_state(repo) == before
    assert "<<<<<<<" not in (repo / "a.txt").read_text()
    assert not (repo / ".git" / "MERGE_HEAD").exists()


async def test_B_WT_1_squash_and_rebase_bring_the_work_in(agent, tmp_path):
    repo = make_repo(tmp_path)
    for strategy in ("squash", "rebase"):
        sid = (await worktree_session(agent, repo, strategy))["sessionId"]
        await run(
            agent, sid, command("c0", f"echo {strategy} > {strategy}.txt && git add -A && {COMMIT} -m {strategy}")
        )
        commit_in(repo, f"main-{strategy}.txt", "main moved on\n")
        done = await agent.client.request("mergeWorktree", {"sessionId": sid, "strategy": strategy})
        assert done["merged"] is True, done
        assert (repo / f"{strategy}.txt").read_text() == f"{strategy}\n"
        parents = git(repo, "log", "-1", "--format=%p").split()
        assert len(parents) == 1  # neither makes a merge commit
    assert git(repo, "status", "--porcelain") == ""


async def test_B_WT_1_a_dirty_or_busy_checkout_or_another_branch_is_not_merged_into(agent, tmp_path):
    repo = make_repo(tmp_path)
    sid = (await worktree_session(agent, repo, "wait"))["sessionId"]
    await run(agent, sid, command("c0", f"echo w > w.txt && git add -A && {COMMIT} -m w"))
    (repo / "a.txt").write_text("dirty\n")
    error = await rpc_error(agent, "mergeWorktree", {"sessionId": sid})
    assert error.code == -32602 and error.data["code"] == "CheckoutNotClean"
    git(repo, "checkout", "-q", "--", "a.txt")
    git(repo, "checkout", "-q", "-b", "other")
    error = await rpc_error(agent, "mergeWorktree", {"sessionId": sid})
    assert error.data["code"] == "CheckoutNotClean" and "main" in error.message
    git(repo, "checkout", "-q", "main")
    (repo / ".git" / "MERGE_HEAD").write_text(git(repo, "rev-parse", "HEAD"))
    error = await rpc_error(agent, "mergeWorktree", {"sessionId": sid})
    assert error.data["code"] == "CheckoutNotClean"
    (repo / ".git" / "MERGE_HEAD").unlink()
    assert not (repo / "w.txt").exists()


async def test_B_WT_1_discard_removes_the_worktree_and_the_session_stays_readable(agent, tmp_path):
    repo = make_repo(tmp_path)
    made = await worktree_session(agent, repo, "gone")
    sid, path = made["sessionId"], Path(made["worktree"]["path"])
    await run(agent, sid, command("c0", f"echo g > g.txt && git add -A && {COMMIT} -m kept"))
    done = await agent.client.request("discardWorktree", {"sessionId": sid})
    assert done == {"discarded": True}
    assert not path.exists() and str(path) not in git(repo, "worktree", "list")
    assert git(repo, "log", "-1", "--format=%s", "threadline/gone").strip() == "kept"  # the branch stays
    info = (await listed(agent, sid))["worktree"]
    assert info["state"] == "discarded" and info["ahead"] == 1
    assert await agent.transcript(sid)
    made = await worktree_session(agent, repo, "gone-too")
    await agent.client.request("discardWorktree", {"sessionId": made["sessionId"], "deleteBranch": True})
    assert "gone-too" not in git(repo, "branch", "--list")


async def test_B_WT_1_deleting_a_session_with_unmerged_work_needs_force(agent, tmp_path):
    repo = make_repo(tmp_path)
    made = await worktree_session(agent, repo, "keep-me")
    sid, path = made["sessionId"], Path(made["worktree"]["path"])
    await run(agent, sid, command("c0", f"echo k > k.txt && git add -A && {COMMIT} -m k"))
    error = await rpc_error(agent, "deleteSession", {"sessionId": sid})
    assert error.code == -32602 and error.data["code"] == "UnmergedWork"
    assert path.exists() and await agent.transcript(sid)
    await agent.client.request("deleteSession", {"sessionId": sid, "force": True})
    assert not path.exists() and "keep-me" not in git(repo, "branch", "--list")
    clean = await worktree_session(agent, repo, "nothing-done")
    await agent.client.request("deleteSession", {"sessionId": clean["sessionId"]})  # no work: no force needed
    assert not Path(clean["worktree"]["path"]).exists()


async def test_B_WT_1_two_worktree_sessions_of_one_repository_run_at_once_each_on_its_own_branch(agent, tmp_path):
    repo = make_repo(tmp_path)
    before = checkout_state(repo)
    go = tmp_path / "go"
    a, b = [await worktree_session(agent, repo, name) for name in ("left", "right")]
    # Each command says it started, then waits for both to have started: the two turns are running at once
    work = (
        f"n=$(basename $PWD) && touch started && until [ -e {go} ]; do sleep 0.05; done && "
        f"echo $n > $n.txt && git add -A && {COMMIT} -m $n && git log --format=%s"
    )
    agent.fake.push(command("c0", work), command("c1", work), {"content": "done"}, {"content": "done"})
    turns = [asyncio.create_task(agent.turn(s["sessionId"], "go", timeout=120)) for s in (a, b)]
    await agent.wait_for(lambda: all((Path(s["worktree"]["path"]) / "started").exists() for s in (a, b)), 60)
    go.touch()
    answers = await asyncio.gather(*turns)
    assert [x["stopReason"] for x in answers] == ["endTurn", "endTurn"], answers
    for name in ("left", "right"):
        files = git(repo, "ls-tree", "--name-only", f"threadline/{name}").split()
        assert f"{name}.txt" in files and f"{'right' if name == 'left' else 'left'}.txt" not in files
        assert git(repo, "log", "-1", "--format=%s", f"threadline/{name}").strip() == name
    assert checkout_state(repo) == before


async def test_B_WT_1_merge_and_discard_wait_for_no_turn_they_are_refused_while_one_runs(agent, tmp_path):
    repo = make_repo(tmp_path)
    sid = (await worktree_session(agent, repo, "busy"))["sessionId"]
    agent.fake.push({"content": "thinking", "delay": 15})
    turn = asyncio.create_task(agent.turn(sid, "go", timeout=60))
    await agent.wait_for(lambda: bool(agent.updates(sid, "turnStarted")), 30)
    for method in ("mergeWorktree", "discardWorktree"):
        error = await rpc_error(agent, method, {"sessionId": sid})
        assert error.code == -32602 and error.data["code"] == "TurnAlreadyRunning", (method, error.message)
    await agent.client.request("cancelTurn", {"sessionId": sid})
    assert (await turn)["stopReason"] == "cancelled"
    assert (await agent.client.request("discardWorktree", {"sessionId": sid}))["discarded"] is True


async def test_B_WT_1_a_subagent_with_isolation_worktree_commits_on_its_own_branch_merged_only_when_asked(
    agent, tmp_path
):
    repo = make_repo(tmp_path)
    before = checkout_state(repo)
    parent = (await agent.client.request("createSession", {"cwd": str(repo), "approvalPolicy": "auto"}))["sessionId"]
    agent.fake.push(
        call("t0", "task", description="isolated fix", prompt="fix it", isolation="worktree"),
        command("c0", f"echo child > child.txt && git add -A && {COMMIT} -m 'child work'"),
        {"content": "child done"},
        {"content": "parent done"},
    )
    assert (await agent.turn(parent, "delegate", timeout=90))["stopReason"] == "endTurn"
    result = next(r for r in agent.updates(parent, "toolResult") if r["toolCallId"] == "t0")
    assert result["status"] == "ok" and "child done" in result["content"] and "threadline/task-" in result["content"]
    sessions = (await agent.client.request("listSessions", {"includeChildren": True}))["sessions"]
    child = next(s for s in sessions if s.get("parentSessionId") == parent)
    assert child["worktree"]["ahead"] == 1 and child["cwd"] == child["worktree"]["path"]
    assert checkout_state(repo) == before and not (repo / "child.txt").exists()  # nothing merged on its own
    error = await rpc_error(agent, "deleteSession", {"sessionId": parent})  # the child's work is not lost silently
    assert error.data["code"] == "UnmergedWork"
    done = await agent.client.request("mergeWorktree", {"sessionId": child["sessionId"]})
    assert done["merged"] is True and (repo / "child.txt").read_text() == "child\n"
