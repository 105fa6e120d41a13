"""B-WT-1 under this machine's kernel sandbox, attacks performed for real: a worktree task's commands commit on
its branch, and cannot reach the repository's controls (config, hooks, info, other refs, existing objects), the
files that say where its git data is, the data folder or another task's worktree."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from server.sandbox.runner import support
from tests.e2e.agent_support import Agent, agent_fixture, fresh_fixture
from tests.worktrees.support import COMMIT, checkout_state, command, git, make_repo

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.slow,
    pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}"),
]
agent = agent_fixture()
fresh = fresh_fixture()
SECRET = "tl-secret-8d1f0c"


def tree(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """Every file below ``root`` (but ``skip``) by its content's hash: what the attacks must leave as it was."""
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and not any(p.is_relative_to(s) for s in skip)
    }


async def session(agent: Agent, repo: Path, name: str) -> tuple[str, Path, Path]:
    made = await agent.client.request(
        "createSession", {"cwd": str(repo), "worktree": name, "approvalPolicy": "auto", "sandbox": "workspace-write"}
    )
    path = Path(made["worktree"]["path"])
    admin = Path((path / ".git").read_text().split("gitdir:", 1)[1].strip())
    return made["sessionId"], path, admin


async def run(agent: Agent, sid: str, *calls: dict[str, Any]) -> list[dict[str, Any]]:
    agent.fake.push(*calls, {"content": "done"})
    answer = await agent.turn(sid, "go", timeout=90)
    assert answer["stopReason"] == "endTurn", answer
    return agent.updates(sid, "toolResult")[-len(calls) :]


async def test_B_WT_1_a_confined_command_commits_but_cannot_touch_the_repositorys_controls(agent, tmp_path):
    repo = make_repo(tmp_path)
    common = repo / ".git"
    sid, path, admin = await session(agent, repo, "attacker")
    _, other, _ = await session(agent, repo, "bystander")
    obj = next(p for p in (common / "objects").rglob("*") if p.is_file() and len(p.parent.name) == 2)
    (agent.home / "secret.txt").write_text(SECRET)
    before_repo = tree(common, skip=(admin,))
    before_home = tree(agent.home / "worktrees", skip=(path.parent,))
    before_checkout = checkout_state(repo)
    attacks = [
        "git config core.fsmonitor 'touch /tmp/pwned'",
        f"git config --file {common}/config core.hooksPath /tmp",
        f"echo 'touch /tmp/pwned' > {common}/hooks/pre-commit",
        f"echo '*' >> {common}/info/exclude",
        f"chmod u+w {obj}; echo garbage > {obj}",
        f"rm -f {obj}",
        f"mv {obj} {obj}.old",
        "git update-ref refs/heads/main HEAD",
        "git branch evil",
        "git update-ref refs/heads/threadline/bystander HEAD",
        f"echo 'gitdir: /tmp/evil' > {path}/.git",
        f"echo /tmp/evil > {admin}/commondir",
        f"echo /tmp/evil > {admin}/gitdir",
        f"printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > {admin}/config.worktree",
        f"echo hi > {other}/planted.txt",
        f"echo mine > {repo}/a.txt",
        f"cat {agent.home}/secret.txt; ls {other}; cat {agent.home}/threadline.db | head -c 16",
    ]
    results = await run(
        agent,
        sid,
        command("ok", f"echo work > w.txt && git add w.txt && {COMMIT} -m 'confined commit' && git log --oneline -1"),
        *(command(f"a{i}", attack) for i, attack in enumerate(attacks)),
    )
    assert results[0]["status"] == "ok" and "confined commit" in results[0]["content"], results[0]
    for attack, result in zip(attacks[:-1], results[1:-1], strict=True):
        assert result["status"] == "error", (attack, result)
    peek = results[-1]["content"]
    assert SECRET not in peek and "SQLite" not in peek and "a.txt" not in peek, peek
    # Nothing of the repository's changed but what the server itself did after the turn, outside the sandbox:
    # the task's branch moved (its ref and log) and its new objects were brought in; no existing file changed
    after_repo = tree(common, skip=(admin,))
    own = {str(common / "refs/heads/threadline/attacker"), str(common / "logs/refs/heads/threadline/attacker")}
    assert {p: h for p, h in after_repo.items() if p in before_repo and p not in own} == {
        p: h for p, h in before_repo.items() if p not in own
    }
    assert all(p in own or Path(p).is_relative_to(common / "objects") for p in after_repo.keys() - before_repo.keys())
    assert tree(agent.home / "worktrees", skip=(path.parent,)) == before_home
    assert checkout_state(repo) == before_checkout
    assert "fsmonitor" not in (common / "config").read_text()
    assert not Path("/tmp/pwned").exists()
    # the commit was made in the task's own object folder, then brought in: the branch has it
    assert any(p.is_file() for p in (path.parent / "objects").rglob("*"))
    assert git(repo, "log", "-1", "--format=%s", "threadline/attacker").strip() == "confined commit"
    assert git(repo, "fsck", "--no-dangling").strip() == ""
