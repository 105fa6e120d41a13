"""B-SBX-1..3 end to end: every attack goes through the real server, the real run_command and this machine's kernel.

The model double asks for the commands; the server confines them (Landlock + user/mount/net namespaces). ``HOME``
of the server points at a temp folder holding a fake ``~/.ssh``, so the default ``deny_read`` is tested without
touching the real one. Needs Landlock and user namespaces (skipped, with the probe's reason, where they are absent).
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from server.sandbox.runner import support
from tests.e2e.agent_support import API_KEY, Agent, fresh_fixture, new_fake, running_agent, start_agent

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(not support().enforced, reason=f"no sandbox on this machine: {support().reason}"),
]
CANARY = "canary-7f3e9b"


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sbx")
    user_home = root / "userhome"
    (user_home / ".ssh").mkdir(parents=True)
    (user_home / ".ssh" / "id_rsa").write_text(CANARY + "\n")
    outside = root / "outside"
    outside.mkdir()
    home = root / "tlhome"
    home.mkdir()
    (home / "canary.txt").write_text(CANARY + "\n")
    return {"user_home": user_home, "outside": outside, "home": home}


@pytest.fixture(scope="module")
def ssh_agent(places) -> Iterator[str]:
    """A unix socket standing for the user's SSH agent (SSH_AUTH_SOCK of the server)."""
    path = str(places["user_home"] / "agent.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen()
        yield path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agent(places, ssh_agent) -> AsyncIterator[Agent]:
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(places["home"], fake, HOME=str(places["user_home"]), SSH_AUTH_SOCK=ssh_agent) as a:
            yield a


fresh = fresh_fixture()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "tracked.txt").write_text("hello\n")
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return path


def command(call_id: str, text: str, **extra: Any) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"command": text, **extra}}]}


async def run(agent: Agent, cwd: Path, *commands: str, policy: str = "autoEdit", sandbox: str | None = None):
    """Run each command in one turn of a new session; returns (session id, tool results in order)."""
    agent.fake.push(*(command(f"call_{i}", c) for i, c in enumerate(commands)), {"content": "done"})
    sid = await agent.session(cwd, policy=policy, sandbox=sandbox)
    assert (await agent.turn(sid, "go", timeout=60))["stopReason"] == "endTurn"
    return sid, agent.updates(sid, "toolResult")


async def test_B_SBX_1_writes_outside_the_folder_fail_by_path_symlink_python_and_background(agent, repo, places):
    out = places["outside"]
    _, results = await run(
        agent,
        repo,
        f"echo pwned > {out}/abs.txt",
        f"ln -s {out} link && echo pwned > link/through-link.txt",
        f"python3 -c \"open('{out}/python.txt', 'w').write('pwned')\"",
        # outlives the command: the shell returns at once, the child tries later, then leaves a mark inside
        f"(sleep 0.3; echo pwned > {out}/background.txt; echo tried > bg-done.txt) > /dev/null 2>&1 &",
    )
    assert agent.approvals == []  # autoEdit: a confined command runs without asking (B-SBX-3)
    await agent.wait_for(lambda: (repo / "bg-done.txt").exists(), timeout=30)
    assert sorted(p.name for p in out.iterdir()) == []
    for result in results[:3]:
        assert result["status"] == "error"
        assert "sandbox" in result["content"] and "write outside" in result["content"], result["content"]
    assert (repo / "link").is_symlink()  # the link itself is inside: allowed


async def test_B_SBX_1_git_config_and_hooks_stay_read_only(agent, repo):
    config = (repo / ".git" / "config").read_text()
    _, results = await run(
        agent,
        repo,
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "echo 'echo pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "mv .git .git-moved",
        "echo '[core]' >> .threadline/x 2>&1 || mkdir -p .threadline",
    )
    assert (repo / ".git" / "config").read_text() == config
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (repo / ".git").is_dir() and not (repo / ".git-moved").exists()
    assert results[1]["status"] == "error" and "read-only" in results[1]["content"].lower()
    assert "sandbox" in results[1]["content"]


async def test_B_SBX_1_a_git_folder_reached_through_a_link_stays_read_only(agent, tmp_path):
    folder = tmp_path / "linked"
    (folder / "real-git" / "hooks").mkdir(parents=True)
    (folder / ".git").symlink_to(folder / "real-git")
    _, results = await run(agent, folder, "echo pwned > .git/hooks/pre-commit")
    assert not (folder / "real-git" / "hooks" / "pre-commit").exists()
    assert results[0]["status"] == "error" and "sandbox" in results[0]["content"]


async def test_B_SBX_1_deny_read_hides_ssh_and_the_data_folder(agent, repo, places):
    _, results = await run(
        agent,
        repo,
        f"cat {places['user_home']}/.ssh/id_rsa",
        f"cat {places['home']}/canary.txt",
        f"ls -a {places['home']}",
    )
    for result in results:
        assert CANARY not in result["content"]
        assert "threadline.db" not in result["content"]
    assert results[0]["status"] == "error" and "hides" in results[0]["content"]


async def test_B_SBX_1_no_connection_to_a_listener_on_loopback(agent, repo):
    accepted: list[object] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        server.settimeout(0.2)

        def accept() -> None:
            while not stop.is_set():
                try:
                    accepted.append(server.accept())
                except OSError:
                    continue

        stop = threading.Event()
        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            _, results = await run(
                agent,
                repo,
                f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)\"",
                f"exec 3<>/dev/tcp/127.0.0.1/{port}",
            )
        finally:
            stop.set()
            thread.join()
    assert accepted == []
    for result in results:
        assert result["status"] == "error"
        assert "sandbox" in result["content"] and "network" in result["content"], result["content"]


async def test_B_SBX_1_writes_inside_git_status_and_the_temp_folder_work(agent, repo):
    _, results = await run(
        agent,
        repo,
        "echo inside > new.txt && mkdir -p sub/deeper && echo x > sub/deeper/f && rm tracked.txt && cat new.txt",
        "git status --short",
        'echo scratch > "$TMPDIR/t" && cat "$TMPDIR/t" && python3 -c "import tempfile; print(tempfile.mkdtemp())"',
        'python3 -c "import multiprocessing as m; print(m.Lock() is not None)"',
    )
    assert [r["status"] for r in results] == ["ok"] * 4, [r["content"] for r in results]
    assert "new.txt" in results[1]["content"] and "tracked.txt" in results[1]["content"]
    assert "scratch" in results[2]["content"]
    assert (repo / "sub" / "deeper" / "f").read_text() == "x\n" and not (repo / "tracked.txt").exists()


async def test_B_SBX_1_read_only_mode_writes_only_the_temp_folder(agent, repo):
    sid, results = await run(
        agent, repo, "echo x > inside.txt", 'echo t > "$TMPDIR/t" && cat "$TMPDIR/t"', sandbox="read-only"
    )
    assert not (repo / "inside.txt").exists()
    assert results[0]["status"] == "error" and "sandbox" in results[0]["content"]
    assert results[1]["status"] == "ok"
    status = await agent.client.request("updateSession", {"sessionId": sid})
    assert status["sandbox"] == {
        "mode": "read-only",
        "enforced": True,
        "mechanism": status["sandbox"]["mechanism"],
        "network": False,
    }


async def test_B_SBX_1_off_mode_runs_unconfined_and_asks_under_autoEdit(agent, repo, places):
    target = places["outside"] / "off.txt"
    _, results = await run(agent, repo, f"echo off > {target}", sandbox="off")
    try:
        assert results[0]["status"] == "ok" and target.read_text() == "off\n"
        assert [a["tool"] for a in agent.approvals] == ["run_command"]
        assert not agent.approvals[0].get("outsideSandbox")
    finally:
        target.unlink(missing_ok=True)


async def test_B_SBX_3_escalation_asks_says_so_then_runs_unconfined_and_always_never_covers_it(agent, repo, places):
    target = places["outside"] / "escalated.txt"
    agent.decide = lambda params: "allowAlways"
    call = command("call_esc", f"echo esc >> {target}", escalate=True, reason="write the release notes outside")
    again = command("call_esc2", f"echo esc >> {target}", escalate=True, reason="once more")
    agent.fake.push(call, again, {"content": "done"})
    sid = await agent.session(repo, policy="autoEdit")
    try:
        await agent.turn(sid, "go", timeout=60)
        assert [a["toolCallId"] for a in agent.approvals] == ["call_esc", "call_esc2"]  # "always" did not cover it
        first = agent.approvals[0]
        assert first["outsideSandbox"] is True and "OUTSIDE the sandbox" in first["title"]
        assert first["reason"] == "write the release notes outside" and "release notes" in first["detail"]
        assert target.read_text() == "esc\nesc\n"
    finally:
        target.unlink(missing_ok=True)


async def test_B_SBX_3_escalation_without_a_reason_is_refused(agent, repo):
    agent.fake.push(command("call_x", "true", escalate=True), {"content": "done"})
    sid = await agent.session(repo, policy="ask")
    await agent.turn(sid, "go")
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "error" and "reason" in result["content"]
    assert agent.approvals == []  # refused before anything runs: nobody is asked about it


async def test_B_SBX_2_initialize_and_createSession_report_the_sandbox(agent, repo):
    machine = agent.client.initialize_result["capabilities"]["experimental"]["threadline"]["sandbox"]
    assert machine["enforced"] is True and machine["mechanism"].startswith("landlock-v")
    result = await agent.client.request("createSession", {"cwd": str(repo)})
    sandbox = result["sandbox"]
    assert sandbox["mode"] == "workspace-write" and sandbox["enforced"] is True and sandbox["network"] is False
    assert sandbox["mechanism"].startswith("landlock")


async def test_B_SBX_2_unavailable_sandbox_notices_once_and_every_command_asks(tmp_path, repo):
    home = tmp_path / "home"
    home.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake, THREADLINE_SANDBOX_PROBE="fail") as agent:
            fake.push(command("c1", "echo one"), command("c2", "echo two"), {"content": "ok"})
            fake.push(command("c3", "echo three"), {"content": "ok"})
            created = await agent.client.request("createSession", {"cwd": str(repo), "approvalPolicy": "auto"})
            sid = created["sessionId"]
            assert (
                created["sandbox"]["enforced"] is False and "THREADLINE_SANDBOX_PROBE" in created["sandbox"]["reason"]
            )
            machine = agent.client.initialize_result["capabilities"]["experimental"]["threadline"]["sandbox"]
            assert machine["enforced"] is False and "THREADLINE_SANDBOX_PROBE" in machine["reason"]
            await agent.turn(sid, "first")
            agent.decide = lambda params: "allowAlways"
            await agent.turn(sid, "second")
            assert [a["toolCallId"] for a in agent.approvals] == ["c1", "c2", "c3"]  # under auto, every one asked
            assert all("UNCONFINED" in a["title"] and a["outsideSandbox"] for a in agent.approvals)
            notices = [u for u in agent.updates(sid, "notice") if "sandbox" in u["message"]]
            assert len(notices) == 1 and "every command will ask" in notices[0]["message"]


async def test_B_SBX_1_updateSession_switches_the_mode_from_the_next_turn(agent, repo):
    sid = await agent.session(repo, policy="auto")
    status = await agent.client.request("updateSession", {"sessionId": sid, "sandbox": "read-only"})
    assert status["sandbox"]["mode"] == "read-only"
    agent.fake.push(command("c", "echo x > ro.txt"), {"content": "ok"})
    await agent.turn(sid, "go")
    assert not (repo / "ro.txt").exists()
    status = await agent.client.request("updateSession", {"sessionId": sid, "sandbox": None})
    assert status["sandbox"]["mode"] == "workspace-write"
    bad = agent.client.request("updateSession", {"sessionId": sid, "sandbox": "wide-open"})
    with pytest.raises(Exception) as caught:
        await asyncio.wait_for(bad, 30)
    assert "sandbox" in json.dumps(str(caught.value))


async def test_B_SBX_2_without_user_namespaces_landlock_still_confines_writes_and_tcp_and_every_command_asks(
    tmp_path, repo, places
):
    """Where no user namespace can be made (the probe is told so), Landlock alone still applies: writes outside
    and TCP are denied (Landlock's TCP rules, ABI 4), but .git/ is not protected, so the status says not enforced
    and every command asks, under every policy."""
    home = tmp_path / "home"
    home.mkdir()
    out = places["outside"]
    with socket.create_server(("127.0.0.1", 0)) as listener, new_fake(api_key=API_KEY) as fake:
        port = listener.getsockname()[1]
        async with running_agent(home, fake, THREADLINE_SANDBOX_PROBE="no-userns") as agent:
            created = await agent.client.request("createSession", {"cwd": str(repo), "approvalPolicy": "auto"})
            status = created["sandbox"]
            assert status["enforced"] is False and status["mechanism"].startswith("landlock-v")
            assert "user namespaces" in status["reason"]
            fake.push(
                command("p1", f"echo pwned > {out}/partial.txt"),
                command("p2", f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\""),
                command("p3", "echo ok > inside.txt"),
                {"content": "ok"},
            )
            await agent.turn(created["sessionId"], "go", timeout=60)
            assert [a["toolCallId"] for a in agent.approvals] == ["p1", "p2", "p3"]
            assert all("PARTLY CONFINED" in a["title"] for a in agent.approvals)
            results = agent.updates(created["sessionId"], "toolResult")
            assert [r["status"] for r in results] == ["error", "error", "ok"]
            assert not (out / "partial.txt").exists() and (repo / "inside.txt").exists()


async def test_B_SBX_1_a_fork_keeps_the_sandbox_mode(agent, repo):
    sid = await agent.session(repo, sandbox="read-only")
    fork = (await agent.client.request("forkSession", {"sessionId": sid}))["sessionId"]
    status = await agent.client.request("updateSession", {"sessionId": fork})
    assert status["sandbox"]["mode"] == "read-only"


async def test_B_SBX_1_the_ssh_agent_cannot_be_reached(agent, repo, ssh_agent):
    connect = f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{ssh_agent}')\""
    _, results = await run(agent, repo, 'echo "agent=${SSH_AUTH_SOCK:-none}"', connect)
    assert "agent=none" in results[0]["content"]
    assert results[1]["status"] == "error", results[1]["content"]


async def test_B_SBX_1_the_private_temp_folder_goes_when_the_server_exits(tmp_path, repo):
    home = tmp_path / "home"
    home.mkdir()
    with new_fake(api_key=API_KEY) as fake:
        async with running_agent(home, fake) as agent:
            fake.push(command("t", 'echo "tmp=$TMPDIR" && touch "$TMPDIR/kept-until-exit"'), {"content": "ok"})
            sid = await agent.session(repo, policy="auto")
            await agent.turn(sid, "go")
            [result] = agent.updates(sid, "toolResult")
            tmpdir = Path(result["content"].split("tmp=", 1)[1].split()[0])
            assert (tmpdir / "kept-until-exit").exists() and tmpdir.stat().st_mode & 0o077 == 0
    assert not tmpdir.exists()


async def test_B_SBX_1_a_subagent_is_confined_as_its_parent(agent, repo):
    """A read-only session's ``task`` child runs its commands read-only too (B-SUB-1's child is a new session)."""
    agent.fake.push(
        {"tool_calls": [{"id": "call_t", "name": "task", "arguments": {"description": "d", "prompt": "write"}}]},
        command("call_child", "echo x > child.txt"),
        {"content": "the child tried"},
        {"content": "ok"},
    )
    sid = await agent.session(repo, policy="auto", sandbox="read-only")
    assert (await agent.turn(sid, "delegate", timeout=60))["stopReason"] == "endTurn"
    assert not (repo / "child.txt").exists()


async def test_B_SBX_3_a_hook_that_allows_everything_does_not_let_an_escalation_out_unasked(tmp_path, repo, places):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        '[[hooks.PreToolUse]]\ncommand = "echo \'{\\"decision\\": \\"allow\\"}\'"\nmatcher = "run_command"\n'
    )
    target = places["outside"] / "hooked.txt"
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(home, fake)
        agent.decide = lambda params: "reject"
        try:
            fake.push(
                command("h1", "echo inside > hooked-inside.txt"),
                command("h2", f"echo out > {target}", escalate=True, reason="needs it"),
                {"content": "ok"},
            )
            sid = await agent.session(repo, policy="ask")
            await agent.turn(sid, "go", timeout=60)
            assert [a["toolCallId"] for a in agent.approvals] == ["h2"]  # the hook allowed h1; h2 still asked
            assert agent.approvals[0]["outsideSandbox"] is True
            assert (repo / "hooked-inside.txt").exists() and not target.exists()
        finally:
            await agent.client.close()
