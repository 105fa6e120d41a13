"""B-SBX-4 and B-SBX-1 end to end, as the hostile review did them: the model double asks, the real server runs the
real commands under this machine's kernel sandbox, and the file tools run in the server.

- Every ``.git`` at any depth (a folder, a gitfile and the folder it names, a link) is read-only to commands and
  refused to ``write_file``/``edit_file``, a repository made by one command included for the next.
- With the session folder at a (fake) home, ``read_file``, ``search_files``, ``list_files``, ``@path`` and editor
  context items never send ``~/.ssh/id_rsa`` or ``~/.aws/credentials`` to the provider.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from server.sandbox.runner import support
from tests.e2e.agent_support import API_KEY, Agent, fresh_fixture, new_fake, running_agent

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}"),
]
KEY = "KEY-c4a1e6-PRIVATE"
AWS = "aws_secret_access_key=d00d5ecret"


@pytest.fixture(scope="module")
def user_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("nested") / "userhome"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY}\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"[default]\n{AWS}\n")
    (home / "notes.txt").write_text("nothing secret here\n")
    (home / "docs").mkdir()
    return home


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agent(tmp_path_factory, user_home) -> AsyncIterator[Agent]:
    tlhome = tmp_path_factory.mktemp("tlhome")
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(tlhome, fake, HOME=str(user_home)) as a:
            yield a


fresh = fresh_fixture()


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """A folder of projects: a vendored clone, a repository with a worktree (a gitfile), and a bare one."""
    root = tmp_path / "projects"
    root.mkdir()
    git("init", "-q", str(root / "vendor" / "lib"))
    (root / "vendor" / "lib" / "a.txt").write_text("a\n")
    ident = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    git("-C", str(root / "vendor" / "lib"), "add", ".")
    git("-C", str(root / "vendor" / "lib"), *ident, "commit", "-qm", "init")
    git("-C", str(root / "vendor" / "lib"), "worktree", "add", "-q", str(root / "wt"))
    git("init", "-q", "--bare", str(root / "srv.git"))
    return root


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


async def run(agent: Agent, cwd: Path, *calls: dict[str, Any], policy: str = "autoEdit", **turn: Any):
    agent.fake.push(*calls, {"content": "done"})
    sid = await agent.session(cwd, policy=policy)
    params = {"sessionId": sid, "text": "go", **turn}
    answer = await agent.client.request("submitTurn", params)
    assert answer["stopReason"] == "endTurn", answer
    return sid, agent.updates(sid, "toolResult")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of every git folder below ``root``: what the attacks must leave as it was."""
    places = [p for p in root.rglob("*") if p.is_file() and (".git" in p.parts or "srv.git" in p.parts)]
    return {str(p): p.read_bytes() for p in places}


async def test_B_SBX_4_commands_cannot_plant_hooks_or_fsmonitor_in_nested_repositories(agent, projects):
    before = snapshot(projects)
    lib_git = projects / "vendor" / "lib" / ".git"
    _, results = await run(
        agent,
        projects,
        call("c0", "run_command", command="git -C vendor/lib config core.fsmonitor 'touch /tmp/pwned'"),
        call("c1", "run_command", command="echo 'touch /tmp/pwned' > vendor/lib/.git/hooks/pre-commit"),
        call("c2", "run_command", command="git -C wt config core.fsmonitor 'touch /tmp/pwned'"),  # through a gitfile
        call("c3", "run_command", command="echo 'gitdir: /tmp/evil' > wt/.git"),
        call("c4", "run_command", command="mv vendor/lib/.git vendor/lib/.git-old"),
        call("c5", "run_command", command="echo 'touch /tmp/pwned' > srv.git/hooks/post-receive"),  # a bare one
    )
    assert all(r["status"] == "error" for r in results), results
    assert snapshot(projects) == before
    assert not (lib_git / "hooks" / "pre-commit").exists() and lib_git.is_dir()


async def test_B_SBX_4_a_repository_made_by_one_command_is_read_only_to_the_next(agent, tmp_path):
    folder = tmp_path / "fresh"
    folder.mkdir()
    _, results = await run(
        agent,
        folder,
        call("c0", "run_command", command="git init -q sub && echo made"),
        call("c1", "run_command", command="git -C sub config core.fsmonitor 'touch /tmp/pwned'"),
        call("c2", "run_command", command="echo evil > sub/.git/hooks/pre-commit"),
    )
    assert results[0]["status"] == "ok", results[0]
    assert results[1]["status"] == "error" and results[2]["status"] == "error", results
    assert "fsmonitor" not in (folder / "sub" / ".git" / "config").read_text()
    assert not (folder / "sub" / ".git" / "hooks" / "pre-commit").exists()


async def test_B_SBX_4_a_linked_git_folder_at_depth_is_read_only(agent, tmp_path):
    folder = tmp_path / "linked"
    (folder / "store" / "real-git" / "hooks").mkdir(parents=True)
    (folder / "sub").mkdir()
    (folder / "sub" / ".git").symlink_to(folder / "store" / "real-git")
    _, results = await run(agent, folder, call("c0", "run_command", command="echo evil > sub/.git/hooks/pre-commit"))
    assert results[0]["status"] == "error"
    assert not (folder / "store" / "real-git" / "hooks" / "pre-commit").exists()


async def test_B_SBX_4_file_tools_never_write_into_any_git_folder(agent, projects):
    before = snapshot(projects)
    (projects / "store").mkdir()
    (projects / "store" / "cfg").symlink_to(projects / "vendor" / "lib" / ".git" / "config")
    (projects / "gitlink").symlink_to("vendor/lib/.git")
    evil = "[core]\n\tfsmonitor = touch /tmp/pwned\n"
    targets = [
        "vendor/lib/.git/config",
        "vendor/lib/.git/hooks/pre-commit",
        "vendor/lib/.GIT/config",
        "wt/.git",  # the gitfile itself
        "srv.git/hooks/post-receive",  # a bare repository: laid out as one, whatever its name
        "store/cfg",  # a link to a git folder's file
        "gitlink/config",  # a link to a git folder
        "new/.git/config",  # a repository the tool would create
        f"{projects}/vendor/lib/.git/config",
    ]
    calls = [call(f"w{i}", "write_file", path=p, content=evil) for i, p in enumerate(targets)]
    calls.append(call("e0", "edit_file", path="vendor/lib/.git/config", old_string="[core]", new_string=evil))
    _, results = await run(agent, projects, *calls, policy="auto")
    for result in results:
        assert result["status"] == "denied" and "git folder" in result["content"], result
    assert snapshot(projects) == before
    assert not (projects / "new").exists()


async def test_B_SBX_4_a_write_into_a_git_folder_is_refused_without_asking_first(agent, projects):
    """Under ``ask`` the user is not asked to approve a write the tool then refuses under every policy."""
    before = snapshot(projects)
    agent.approvals.clear()
    evil = "[core]\n\tfsmonitor = touch /tmp/pwned\n"
    _, results = await run(
        agent, projects, call("w0", "write_file", path="vendor/lib/.git/config", content=evil), policy="ask"
    )
    assert [r["status"] for r in results] == ["denied"] and "git folder" in results[0]["content"], results
    assert agent.approvals == []
    assert snapshot(projects) == before


async def test_B_SBX_1_file_tools_attachments_and_context_items_never_send_hidden_files(agent, user_home):
    calls = [
        call("r0", "read_file", path=".ssh/id_rsa"),
        call("r1", "read_file", path=f"{user_home}/.aws/credentials"),
        call("r2", "read_file", path="docs/../.ssh/id_rsa"),
        call("s0", "search_files", pattern="PRIVATE|aws_secret"),
        call("s1", "search_files", pattern=".", path=".ssh"),
        call("l0", "list_files", pattern="**"),
        call("l1", "list_files", path=".aws"),
    ]
    context = [
        {"kind": "file", "uri": (user_home / ".ssh" / "id_rsa").as_uri()},
        {"kind": "selection", "uri": (user_home / ".aws" / "credentials").as_uri(), "text": AWS},
    ]
    sid, results = await run(agent, user_home, *calls, context=context, text="look at @.ssh/id_rsa and @notes.txt")
    by_id = {r["toolCallId"]: r for r in results}
    for name in ("r0", "r1", "r2", "s1", "l1"):
        assert by_id[name]["status"] == "denied" and "hidden" in by_id[name]["content"], by_id[name]
    assert "notes.txt" in by_id["l0"]["content"] and "id_rsa" not in by_id["l0"]["content"]
    sent = json.dumps([r["body"] for r in agent.chat_requests()])
    assert KEY not in sent and "d00d5ecret" not in sent
    assert "nothing secret here" in sent  # the ordinary @mention was attached
    notices = [u["message"] for u in agent.updates(sid, "notice")]
    assert any("hidden" in n and "id_rsa" in n for n in notices), notices
