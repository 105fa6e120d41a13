"""File checkpoints end to end: real files, the real server over stdio, the fake model.

Turns create, edit and overwrite files; ``listCheckpoints`` shows them per turn and ``rewindFiles`` puts them back
(dry run and real), leaves an outside edit alone unless forced, recreates a deleted file, and says what it cannot
restore (over the size caps, run_command, sessions without checkpoints).
"""

from __future__ import annotations

import pytest

from server.cli.client import RpcError
from tests.e2e.agent_support import Agent, agent_fixture, events, fresh_fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE_CAP, SESSION_CAP = 200, 600


agent = agent_fixture(
    env={
        "THREADLINE_CHECKPOINT_MAX_FILE_BYTES": str(FILE_CAP),
        "THREADLINE_CHECKPOINT_MAX_SESSION_BYTES": str(SESSION_CAP),
    }
)
fresh = fresh_fixture()


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "name": name, "arguments": arguments}


async def turn(agent: Agent, sid: str, *calls: dict) -> str:
    agent.fake.push(*[{"tool_calls": [c]} for c in calls], {"content": "done"})
    result = await agent.turn(sid, "change files")
    assert result["stopReason"] == "endTurn", result
    return result["turnId"]


async def rewind(agent: Agent, sid: str, turn_id: str, **extra) -> dict:
    return await agent.client.request("rewindFiles", {"sessionId": sid, "toTurnId": turn_id, **extra})


def statuses(result: dict) -> dict[str, str]:
    return {f["path"]: f["status"] for f in result["files"]}


async def test_rewind_to_each_turn_dry_run_and_real(agent, folder):
    (folder / "a.txt").write_text("one\n")
    sid = await agent.session(folder, policy="auto")
    t1 = await turn(
        agent,
        sid,
        call("c1", "write_file", path="new.txt", content="new\n"),
        call("c2", "edit_file", path="a.txt", old_string="one", new_string="two"),
    )
    t2 = await turn(
        agent,
        sid,
        call("c3", "write_file", path="a.txt", content="three\n"),
        call("c4", "write_file", path="sub/new2.txt", content="x\n"),
    )

    listed = await agent.client.request("listCheckpoints", {"sessionId": sid})
    assert [t["turnId"] for t in listed["turns"]] == [t1, t2]
    assert [(f["path"], f["change"], f["restorable"], f["toolCallId"]) for f in listed["turns"][0]["files"]] == [
        ("new.txt", "created", True, "c1"),
        ("a.txt", "modified", True, "c2"),
    ]
    assert [f["path"] for f in listed["turns"][1]["files"]] == ["a.txt", "sub/new2.txt"]
    assert listed["turns"][0]["seq"] == 1 and listed["turns"][1]["seq"] > listed["turns"][0]["seq"]
    assert "run_command" in listed["note"]

    dry = await rewind(agent, sid, t2, dryRun=True)
    assert dry["dryRun"] is True and statuses(dry) == {"a.txt": "restored", "sub/new2.txt": "restored"}
    assert (folder / "a.txt").read_text() == "three\n" and (folder / "sub/new2.txt").exists()

    real = await rewind(agent, sid, t2)
    assert statuses(real) == {"a.txt": "restored", "sub/new2.txt": "restored"}
    assert {f["path"]: f["change"] for f in real["files"]} == {"a.txt": "restored", "sub/new2.txt": "removed"}
    assert (folder / "a.txt").read_text() == "two\n" and not (folder / "sub/new2.txt").exists()
    assert "cannot be rewound" in real["note"]

    again = await rewind(agent, sid, t2)
    assert statuses(again) == {"a.txt": "unchanged", "sub/new2.txt": "unchanged"}

    # Further back: what the last rewind left is Threadline's, not an outside edit.
    first = await rewind(agent, sid, t1)
    assert statuses(first) == {"new.txt": "restored", "a.txt": "restored", "sub/new2.txt": "unchanged"}
    assert (folder / "a.txt").read_text() == "one\n" and not (folder / "new.txt").exists()
    assert [e["toTurnId"] for e in events(agent.home, sid, "filesRewound")] == [t2, t2, t1]


async def test_outside_edit_is_a_conflict_unless_forced(agent, folder):
    (folder / "b.txt").write_text("mine\n")
    sid = await agent.session(folder, policy="auto")
    t1 = await turn(agent, sid, call("c1", "write_file", path="b.txt", content="agent\n"))
    (folder / "b.txt").write_text("edited by hand\n")

    result = await rewind(agent, sid, t1)
    [entry] = result["files"]
    assert entry["status"] == "conflicted" and "outside Threadline" in entry["detail"]
    assert (folder / "b.txt").read_text() == "edited by hand\n"
    assert statuses(await rewind(agent, sid, t1, dryRun=True, force=True)) == {"b.txt": "restored"}
    assert (folder / "b.txt").read_text() == "edited by hand\n"

    assert statuses(await rewind(agent, sid, t1, force=True)) == {"b.txt": "restored"}
    assert (folder / "b.txt").read_text() == "mine\n"


async def test_a_deleted_file_is_recreated(agent, folder):
    (folder / "c.txt").write_text("keep me\n")
    (folder / "c.txt").chmod(0o640)
    sid = await agent.session(folder, policy="auto")
    t1 = await turn(agent, sid, call("c1", "edit_file", path="c.txt", old_string="keep", new_string="lose"))
    (folder / "c.txt").unlink()
    assert statuses(await rewind(agent, sid, t1)) == {"c.txt": "restored"}
    assert (folder / "c.txt").read_text() == "keep me\n"


async def test_one_edit_can_be_rewound_alone(agent, folder):
    sid = await agent.session(folder, policy="auto")
    t1 = await turn(
        agent,
        sid,
        call("c1", "write_file", path="x.txt", content="x\n"),
        call("c2", "write_file", path="y.txt", content="y\n"),
    )
    result = await rewind(agent, sid, t1, toolCallId="c2")
    assert statuses(result) == {"y.txt": "restored"}
    assert (folder / "x.txt").exists() and not (folder / "y.txt").exists()


async def test_over_the_caps_is_recorded_not_restorable(agent, folder):
    (folder / "big.txt").write_text("b" * (FILE_CAP + 1))
    # 190 bytes each: under the file cap; the fourth takes the session's kept contents over its cap
    (folder / "m1.txt").write_text("m" * 190)
    (folder / "m2.txt").write_text("n" * 190)
    (folder / "m3.txt").write_text("o" * 190)
    (folder / "m4.txt").write_text("p" * 190)
    sid = await agent.session(folder, policy="auto")
    t1 = await turn(
        agent,
        sid,
        call("c1", "write_file", path="big.txt", content="small\n"),
        *[call(f"m{i}", "write_file", path=f"m{i}.txt", content="new\n") for i in range(1, 5)],
    )

    results = {u["toolCallId"]: u for u in agent.updates(sid, "toolResult")}
    assert results["c1"]["status"] == "ok" and "checkpoint cap per file" in results["c1"]["content"]
    assert "cannot restore" in results["m4"]["content"] and "session" in results["m4"]["content"]
    assert "checkpoint" not in results["m3"]["content"]
    listed = await agent.client.request("listCheckpoints", {"sessionId": sid})
    assert {f["path"]: f["restorable"] for f in listed["turns"][0]["files"]} == {
        "big.txt": False,
        "m1.txt": True,
        "m2.txt": True,
        "m3.txt": True,
        "m4.txt": False,
    }

    result = await rewind(agent, sid, t1)
    assert statuses(result) == {
        "big.txt": "notRestorable",
        "m1.txt": "restored",
        "m2.txt": "restored",
        "m3.txt": "restored",
        "m4.txt": "notRestorable",
    }
    assert (folder / "big.txt").read_text() == "small\n" and (folder / "m1.txt").read_text() == "m" * 190


async def test_no_checkpoints_says_nothing_is_restorable(agent, folder):
    (folder / "r.txt").write_text("r\n")
    sid = await agent.session(folder, policy="auto")
    t1 = await turn(agent, sid, call("c1", "run_command", command="echo changed > r.txt"))
    result = await rewind(agent, sid, t1)
    assert result["files"] == [] and "nothing to restore" in result["note"] and "run_command" in result["note"]
    assert (folder / "r.txt").read_text() == "changed\n"
    listed = await agent.client.request("listCheckpoints", {"sessionId": sid})
    assert [(t["turnId"], t["files"]) for t in listed["turns"]] == [(t1, [])]

    with pytest.raises(RpcError) as err:
        await rewind(agent, sid, "turn_nope")
    assert err.value.code == -32602 and err.value.data == {"code": "TurnNotFound"}
    with pytest.raises(RpcError) as err:
        await agent.client.request("listCheckpoints", {"sessionId": "ses_nope"})
    assert err.value.data == {"code": "SessionNotFound"}


async def test_a_failed_edit_leaves_no_checkpoint(agent, folder):
    (folder / "f.txt").write_text("f\n")
    sid = await agent.session(folder, policy="auto")
    await turn(agent, sid, call("c1", "edit_file", path="f.txt", old_string="absent", new_string="x"))
    listed = await agent.client.request("listCheckpoints", {"sessionId": sid})
    assert listed["turns"][0]["files"] == []


async def test_deleting_the_session_removes_its_checkpoint_contents(agent, folder):
    (folder / "d.txt").write_text("kept content\n")
    sid = await agent.session(folder, policy="auto")
    await turn(agent, sid, call("c1", "write_file", path="d.txt", content="new\n"))
    blobs = agent.home / "checkpoints" / sid
    assert [p.read_text() for p in blobs.iterdir()] == ["kept content\n"]
    await agent.client.request("deleteSession", {"sessionId": sid})
    assert not blobs.exists()
