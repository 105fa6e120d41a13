"""A background process is its process group, through the real server (SPEC B-WEB-2's processes half): a job whose
shell exits at once (``(job) & echo started``) counts against the cap, is listed running, and is ended by
``stopProcess``, by the ``stop_process`` tool and by ``deleteSession``; a daemon with such a job alive does not
leave as idle. Each job carries a unique marker, found in ``/proc`` (a pid printed inside the server's PID
namespace is not ours)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.e2e.agent_support import API_KEY, new_fake, start_agent
from tests.e2e.daemon_support import bridge, daemon_env, daemon_pid, fake_fixture, open_home_fixture, wait_gone
from tests.e2e.test_agent_background_processes import marked, wait_none
from tests.e2e.test_agent_background_tools import call, processes, running, turn

pytestmark = pytest.mark.asyncio
open_home = open_home_fixture()
fake = fake_fixture()


def escaping(marker: str) -> str:
    return f"(env TL_MARK={marker} sleep 600) & echo started"


async def until(check, what: str, seconds: float = 60) -> None:
    async with asyncio.timeout(seconds):
        while not check():
            await asyncio.sleep(0.05)


async def test_B_WEB_2_jobs_outliving_their_shells_are_capped_listed_and_stopped_every_way(tmp_path):
    folder, home = tmp_path / "ws", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    (home / "config.toml").write_text("[tools]\nmax_background_processes = 4\n")
    marks = [uuid.uuid4().hex for _ in range(8)]
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(home, fake)
        try:
            sid = await agent.session(folder, policy="auto")
            steps = [call(f"c{n}", "run_command", command=escaping(m), background=True) for n, m in enumerate(marks)]
            results = await turn(agent, sid, *steps)
            assert [r["status"] for r in results] == ["ok"] * 4 + ["error"] * 4, [r["content"] for r in results]
            assert all("max_background_processes" in r["content"] for r in results[4:])
            listed = await processes(agent, sid)
            await until(lambda: not any(running(p["pid"]) for p in listed), "every launching shell to exit")
            assert all(marked(m) for m in marks[:4]) and not any(marked(m) for m in marks[4:])
            listed = await processes(agent, sid)
            assert [p["status"] for p in listed] == ["running"] * 4 and all("exitCode" not in p for p in listed)

            stopped = await agent.client.request("stopProcess", {"sessionId": sid, "processId": listed[0]["processId"]})
            assert stopped["process"]["status"] == "stopped"
            await wait_none(marks[0])
            [tool] = await turn(agent, sid, call("c_stop", "stop_process", processId=listed[1]["processId"]))
            assert tool["content"].startswith(f"Process {listed[1]['processId']} was stopped"), tool["content"]
            await wait_none(marks[1])
            assert all(marked(m) for m in marks[2:4])
            after = await processes(agent, sid)
            assert [p["status"] for p in after] == ["stopped", "stopped", "running", "running"]

            await agent.client.request("deleteSession", {"sessionId": sid})
            await wait_none(marks[2])
            await wait_none(marks[3])
        finally:
            await agent.client.close()


async def test_B_WEB_2_the_daemon_is_not_idle_while_a_background_job_lives(open_home, fake, folder):
    """``[daemon] idle_exit_seconds`` of 1: with a job alive and no client, the daemon stays (checked after several
    idle periods); once the job is stopped and the last client gone, it leaves."""
    home = open_home
    env = daemon_env(home, fake, THREADLINE_DAEMON_IDLE_SECONDS="1")
    mark = uuid.uuid4().hex
    first = await bridge(env, home)
    sid = (await first.request("createSession", {"cwd": str(folder), "approvalPolicy": "auto"}))["sessionId"]
    fake.push(call("c_bg", "run_command", command=escaping(mark), background=True), {"content": "started it"})
    await asyncio.wait_for(first.request("submitTurn", {"sessionId": sid, "text": "start it"}), 60)
    [listed] = (await first.request("listProcesses", {"sessionId": sid}))["processes"]
    pid = daemon_pid(home)
    assert pid is not None
    await first.close()
    await until(lambda: not running(listed["pid"]), "the launching shell to exit")
    for _ in range(4):  # four idle periods and more with no client: a busy machine only makes it longer
        await asyncio.sleep(1.0)
        assert daemon_pid(home) == pid and marked(mark)
    second = await bridge(env, home)
    try:
        assert daemon_pid(home) == pid  # the same daemon, still there
        [still] = (await second.request("listProcesses", {"sessionId": sid}))["processes"]
        assert still["status"] == "running"
        await second.request("stopProcess", {"sessionId": sid, "processId": still["processId"]})
        await wait_none(mark)
    finally:
        await second.close()
    assert await asyncio.to_thread(wait_gone, pid, 60)
