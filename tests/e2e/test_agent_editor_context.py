"""Context in the prompt: ``submitTurn {context}`` and ``@path`` attach what the user points at to the
stored user message; big files become artifacts; anything outside the session folder is refused with a note."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from server.cli.client import RpcError
from tests.e2e.agent_support import API_KEY, Agent, closing, new_fake, request_messages
from tests.e2e.editor_support import ALL, Editor, rng, start_editor_agent

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory) -> AsyncIterator[tuple[Agent, Editor]]:
    editor = Editor([])
    with new_fake(api_key=API_KEY) as fake:
        async with closing(start_editor_agent(tmp_path_factory.mktemp("home"), fake, editor, ALL)) as agent:
            yield agent, editor


@pytest.fixture
def agent(world, tmp_path):
    agent, editor = world
    agent.fake.reset()
    editor.roots[:] = [tmp_path]
    return agent


async def turn(agent: Agent, folder, text: str, context: list | None = None) -> tuple[str, str]:
    """The user message the model received, and the session id."""
    agent.fake.push({"content": "seen"})
    sid = await agent.session(folder)
    params = {"sessionId": sid, "text": text, **({"context": context} if context else {})}
    assert (await agent.client.request("submitTurn", params))["stopReason"] == "endTurn"
    user = [m for m in request_messages(agent.chat_requests()[-1]) if m["role"] == "user"][-1]
    return user["content"], sid


async def test_issue34_selection_file_and_diagnostics_are_attached_and_stored(agent, tmp_path):
    (tmp_path / "a.py").write_text("x = undefined_name\n")
    (tmp_path / "b.py").write_text("B = 2\n")
    context = [
        {"kind": "selection", "uri": (tmp_path / "a.py").as_uri(), "range": rng(0, 0, 5), "text": "x = u"},
        {"kind": "file", "uri": (tmp_path / "b.py").as_uri()},
        {"kind": "diagnostics", "uri": (tmp_path / "a.py").as_uri()},
    ]
    sent, sid = await turn(agent, tmp_path, "fix it", context)
    assert sent == (
        "fix it\n\n"
        '<context kind="selection" path="a.py" lines="1-1">\nx = u\n</context>\n\n'
        '<context kind="file" path="b.py">\nB = 2\n\n</context>\n\n'
        '<context kind="diagnostics" path="a.py">\n1 problem (1 error):\n'
        "a.py:1:5 error: undefined name 'undefined_name' [tinylint]\n    x = undefined_name\n</context>"
    )
    stored = [i for i in await agent.transcript(sid) if i.get("role") == "user"]
    assert stored[-1]["content"] == sent  # the pipeline counts what is stored


async def test_issue34_an_at_mention_attaches_the_file_and_other_ats_are_left_alone(agent, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("M = 1\n")
    sent, _ = await turn(agent, tmp_path, "look at @src/m.py, mail me@example.com, and @nothing")
    assert sent.count("<context") == 1 and '<context kind="file" path="src/m.py">\nM = 1\n' in sent
    assert "not attached" not in sent


async def test_issue34_anything_outside_the_session_folder_is_refused_with_a_note_and_never_read(agent, tmp_path):
    (tmp_path / "w").mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-4417")
    context = [
        {"kind": "file", "uri": secret.as_uri()},
        {"kind": "selection", "uri": secret.as_uri(), "text": "TOP-SECRET-4417 again"},
    ]
    sent, sid = await turn(agent, tmp_path / "w", "read @../secret.txt", context)
    assert "TOP-SECRET-4417" not in sent
    notes = [u["message"] for u in agent.updates(sid, "notice")]
    assert len(notes) == 3 and all("is outside the session folder" in n for n in notes)
    assert f"[not attached: {secret.as_uri()} is outside the session folder" in sent


async def test_issue34_a_file_past_50_KB_becomes_an_artifact_with_a_preview(agent, tmp_path):
    (tmp_path / "big.log").write_text("".join(f"line {n}\n" for n in range(12_000)))
    sent, sid = await turn(agent, tmp_path, "why @big.log")
    assert "line 0\n" in sent and "line 11999" in sent and "bytes omitted from context" in sent
    artifact = sent.split("[artifact ")[1].split("]")[0]
    read = await agent.client.request("readArtifact", {"sessionId": sid, "artifactId": artifact, "lines": [6000, 6000]})
    assert "line 5999" in str(read)


async def test_issue34_a_malformed_context_item_is_invalid_params(agent, tmp_path):
    sid = await agent.session(tmp_path)
    with pytest.raises(RpcError) as raised:
        await agent.client.request("submitTurn", {"sessionId": sid, "text": "x", "context": [{"kind": "folder"}]})
    assert raised.value.code == -32602
