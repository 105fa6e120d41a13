"""Large tool results become artifacts (R-ART-1..3), end to end through a real command's output."""

from __future__ import annotations

import re

import pytest

from server.cli.client import RpcError
from tests.e2e.agent_support import agent_fixture, tool_messages

pytestmark = pytest.mark.asyncio(loop_scope="module")

agent = agent_fixture()

LINES = 4000
BIG_COMMAND = f"python3 -c \"for i in range({LINES}): print(f'line {{i:05d}} ' + 'x' * 20)\""
BIG_OUTPUT = "".join(f"line {i:05d} {'x' * 20}\n" for i in range(LINES)) + "\n[exit code 0]"  # run_command's text


async def big_turn(agent, folder) -> tuple[str, dict]:
    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_big", "name": "run_command", "arguments": {"command": BIG_COMMAND}}]},
        {"content": "seen"},
    )
    sid = await agent.session(folder, policy="auto")
    assert (await agent.turn(sid, "make noise"))["stopReason"] == "endTurn"
    return sid, agent.updates(sid, "toolResult")[0]


async def test_R_ART_1_big_output_is_stored_and_the_model_gets_head_marker_tail(agent, folder):
    assert len(BIG_OUTPUT.encode()) > 50 * 1024
    sid, result = await big_turn(agent, folder)

    [created] = agent.updates(sid, "artifactCreated")
    artifact_id = created["artifactId"]
    assert re.fullmatch(r"artifact-[0-9a-f]+", artifact_id)
    assert created["totalBytes"] == len(BIG_OUTPUT.encode()) and created["toolCallId"] == "call_big"
    assert result["status"] == "ok" and result["artifactId"] == artifact_id

    [seen] = tool_messages(agent.chat_requests()[1])
    text = seen["content"]
    omitted = len(BIG_OUTPUT.encode()) - 6000 - 3000
    assert text.startswith(BIG_OUTPUT[:6000] + f"\n[{omitted} bytes omitted from context]\n" + BIG_OUTPUT[-3000:])
    assert f"[artifact {artifact_id}]" in text
    assert text.rstrip().endswith("Use read_artifact for byte, line, or search access.")
    assert result["content"] == text
    # The transcript keeps what the model saw; the artifact keeps the whole output.
    stored = [i for i in await agent.transcript(sid) if i["role"] == "tool"]
    assert stored[0]["content"] == text


async def test_R_ART_2_readArtifact_by_bytes_lines_and_search(agent, folder):
    sid, result = await big_turn(agent, folder)
    artifact_id = result["artifactId"]

    def read(**how):
        return agent.client.request("readArtifact", {"sessionId": sid, "artifactId": artifact_id, **how})

    whole = await read(byteRange={"offset": 0, "length": 1_000_000})
    assert whole["content"] == BIG_OUTPUT and whole["totalBytes"] == len(BIG_OUTPUT.encode())
    middle = await read(byteRange={"offset": 32 * 2000, "length": 32})
    assert middle["content"] == f"line 02000 {'x' * 20}\n"
    lines = await read(lineRange={"start": 1001, "end": 1003})
    assert lines["content"].split("\n") == [f"line {i:05d} {'x' * 20}" for i in (1000, 1001, 1002)]
    found = await read(search={"pattern": r"line 0(3999|0007) ", "maxMatches": 10})
    assert [(m["line"], m["text"][:10]) for m in found["matches"]] == [(8, "line 00007"), (4000, "line 03999")]


async def test_R_ART_2_the_model_reads_its_artifact_and_another_session_cannot(agent, folder, tmp_path):
    sid, result = await big_turn(agent, folder)
    artifact_id = result["artifactId"]

    agent.fake.reset()
    agent.fake.push(
        {
            "tool_calls": [
                {
                    "id": "call_ra",
                    "name": "read_artifact",
                    "arguments": {"artifact_id": artifact_id, "pattern": "line 01234"},
                }
            ]
        },
        {"content": "found it"},
    )
    await agent.turn(sid, "look inside")
    [seen] = [m for m in tool_messages(agent.chat_requests()[1]) if m["tool_call_id"] == "call_ra"]
    assert "1235: line 01234" in seen["content"]

    other_folder = tmp_path / "other"
    other_folder.mkdir()
    other = await agent.session(other_folder, policy="auto")
    with pytest.raises(RpcError) as err:
        await agent.client.request("readArtifact", {"sessionId": other, "artifactId": artifact_id})
    assert err.value.code == -32602 and err.value.data["code"] == "ArtifactNotFound"

    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_steal", "name": "read_artifact", "arguments": {"artifact_id": artifact_id}}]},
        {"content": "no"},
    )
    await agent.turn(other, "steal it")
    [stolen] = tool_messages(agent.chat_requests()[1])
    assert stolen["content"].startswith("Tool failed") and "line 0" not in stolen["content"]


async def test_R_ART_3_artifact_write_failure_keeps_the_tool_ok_and_truncates(agent, folder):
    agent.fake.reset()
    agent.fake.push(
        {"tool_calls": [{"id": "call_big", "name": "run_command", "arguments": {"command": BIG_COMMAND}}]},
        {"content": "seen"},
    )
    sid = await agent.session(folder, policy="auto")
    blocker = agent.home / "artifacts" / sid
    blocker.parent.mkdir(exist_ok=True)
    blocker.write_text("a regular file where the session's artifact folder should be")

    assert (await agent.turn(sid, "make noise"))["stopReason"] == "endTurn"
    [result] = agent.updates(sid, "toolResult")
    assert result["status"] == "ok" and not result.get("artifactId")
    assert agent.updates(sid, "artifactCreated") == []
    [seen] = tool_messages(agent.chat_requests()[1])
    assert len(seen["content"]) <= 50_000
    assert seen["content"].startswith(BIG_OUTPUT[:40_000])
    assert not seen["content"].startswith("Tool failed")
    assert any("artifact" in n["message"] for n in agent.updates(sid, "notice"))
